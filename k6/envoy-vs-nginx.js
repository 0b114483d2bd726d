/*
 * envoy-vs-nginx (seed 002): 400 r/s bursts of 1, 2 and 4 s against Envoy's token bucket and
 * nginx's leaky bucket with the same long-run rate. Same counts, different shape: Envoy rejects
 * at once, nginx makes the excess wait up to 9 s (stacks/envoy-vs-nginx/README.md).
 *
 * By hand, against `./labw up envoy-vs-nginx`:
 *   ./labw k6 run k6/envoy-vs-nginx.js                      smoke
 *   ./labw k6 run -e SUITE=spike -e QUICK=2 k6/envoy-vs-nginx.js   (after `./labw up envoy-vs-nginx --quick=2`)
 * The thresholds are the model's, the same as under `./labw test`; see k6/lib/plan.js for
 * SUITE, QUICK, KNOBS, BASE_URL and LAB_BASE_URLS.
 */
import { planRun } from './lib/kinds/limiter.js';

const run = planRun('envoy-vs-nginx');
export const options = run.options;
export const setup = run.setup;
export const warm = run.warm;
export const hit = run.hit;
export const handleSummary = run.handleSummary;
