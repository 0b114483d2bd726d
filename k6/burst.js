/*
 * burst (seed 003): nginx limit_req at 3 r/s with one queue size per location (0, 50, 100, 300,
 * 400). Every location is hit at 2, 3 and 9 r/s for 60 s, each case on a fresh limiter key;
 * the model says how many requests each queue lets through, how many get 503, and how long the
 * last one waits (stacks/burst/README.md has the table; thresholds/ computes it).
 *
 * By hand, against a stack that is up (`./labw up burst`), with the pinned k6 (.lab/bin/k6):
 *   ./labw k6 run k6/burst.js                               smoke: a few requests per location
 *   ./labw k6 run -e SUITE=spike -e QUICK=5 k6/burst.js     the spike suite, time compressed x5
 *                                   (the stack too: `./labw up burst --quick`)
 *   ./labw k6 run -e SUITE=spike -e KNOBS='{"rate":5}' k6/burst.js   a what-if
 *                                   (the stack too: `./labw up burst rate=5`)
 * The stack cannot tell k6 what policy it runs: a plan and a stack that differ fail the
 * thresholds, as a changed policy should.
 * The thresholds are the model's, the same as under `./labw test`. BASE_URL or LAB_BASE_URLS
 * point it elsewhere (k6/lib/plan.js).
 */
import { planRun } from './lib/kinds/limiter.js';

const run = planRun('burst');
export const options = run.options;
export const setup = run.setup;
export const warm = run.warm;
export const hit = run.hit;
export const handleSummary = run.handleSummary;
