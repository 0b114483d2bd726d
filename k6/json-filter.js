/*
 * json-filter (seed 004): each server (Node single, Node cluster, Erlang, and the references
 * nginx and the backend directly) at 500 r/s, at a fixed 2000 r/s, under the seed's 2500
 * connections, and ramped through held arrival rates to its breakpoint
 * (stacks/json-filter/README.md). What k6 can judge alone is a threshold here; the comparisons
 * between servers and with the backend's own count are judged by `./labw test` from the summary.
 *
 * By hand, against `./labw up json-filter`:
 *   ./labw k6 run k6/json-filter.js                         smoke: 20 documents per server
 *   ./labw k6 run -e SUITE=breakpoint -e QUICK=5 k6/json-filter.js  (after `./labw up json-filter --quick`)
 * See k6/lib/plan.js for SUITE, QUICK, KNOBS, BASE_URL and LAB_BASE_URLS.
 */
import { capacityRun } from './lib/kinds/capacity.js';

const run = capacityRun();
export const options = run.options;
export const setup = run.setup;
export const connect = run.connect;
export const post = run.post;
export const teardown = run.teardown;
export const handleSummary = run.handleSummary;
