/*
 * caching (seed 000): users loop through a front nginx (limit_req 100 r/s, burst 200) and a back
 * nginx (10 r/s, burst 50) to an application that serves 10 requests at once, with a server
 * cache in the front, a client cache in each user, both, neither, straight to the application,
 * or a client that retries a 503. The model (thresholds/models/closed-loop.js) says per mode how many
 * answers are 200 and 503, how long the run and each answer take, and how many requests reach
 * the application (stacks/caching/README.md has the table and the seed's figures).
 *
 * By hand, against a stack that is up (`./labw up caching`), with the pinned k6 (.lab/bin/k6):
 *   ./labw k6 run k6/caching.js                         smoke: two users per mode
 *   ./labw k6 run -e SUITE=stress k6/caching.js         100 users x 10 /hare per mode
 *   ./labw k6 run -e SUITE=load k6/caching.js           10 users x 10 x the three resources
 *   ./labw k6 run -e SUITE=stress -e KNOBS='{"server_cache":"lua"}' k6/caching.js
 *                                   (the stack too: `./labw up caching server_cache=lua`)
 * The thresholds are the model's, the same as under `./labw test`. No --quick: Cache-Control
 * lifetimes are whole seconds. BASE_URL or LAB_BASE_URLS point it elsewhere (k6/lib/plan.js).
 */
import { closedRun } from './lib/kinds/closed-loop.js';

const run = closedRun('caching');
export const options = run.options;
export const setup = run.setup;
export const user = run.user;
export const teardown = run.teardown;
export const handleSummary = run.handleSummary;
