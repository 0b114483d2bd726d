/*
 * cdn (seed 001): 10 connections for 60 s against an nginx load balancer in front of 4 edge
 * caches and 2 origins, once per cap level: uncapped, every nginx at 2 % of a core and 25 MiB,
 * then 1 % and 15 MiB. The uncapped level measures what a request costs each nginx; under caps
 * the model (thresholds/kinds/capped.js) expects cap / cost of the costliest, the load balancer in the
 * seed (stacks/cdn/README.md has the table and the seed's 106, 39 and 21 r/s).
 *
 * By hand, against a stack that is up, one level at a time (the runner restarts the stack per
 * level, with its caps, and gives k6 the model's throughput):
 *   ./labw up cdn && ./labw k6 run k6/cdn.js                        smoke: 2 connections, 2 s
 *   ./labw k6 run -e SUITE=load k6/cdn.js                           the uncapped level, 60 s
 *   ./labw k6 run -e SUITE=load -e CASE=cpu2-mem25-load k6/cdn.js   (stack up with those caps)
 * With k6 alone a capped level has no throughput threshold: the costs come from the uncapped
 * level of the same run. BASE_URL or LAB_BASE_URLS point it elsewhere (k6/lib/plan.js).
 */
import { cappedRun } from './lib/kinds/capped.js';

const run = cappedRun('cdn');
export const options = run.options;
export const setup = run.setup;
export const page = run.page;
export const teardown = run.teardown;
export const handleSummary = run.handleSummary;
