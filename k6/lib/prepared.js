/*
 * The lab runner's k6 entry: the same run as the experiment's script (run.js), with its k6Run
 * (its part of the plan, its kind, its options) computed once by the runner (lab/run/k6.mjs)
 * and read from LAB_PREPARED. k6 evaluates every module a script imports in every VU, and the
 * model's modules (thresholds/) were most of what a VU cost to start
 * (docs/journal/json-filter.md, "What a VU costs to start"); this entry imports none of them.
 */
import { baseUrls } from './urls.js';
import { vuRun } from './vu-run.js';

// Parsed in each VU (a few tens of kB): k6 writes into the options it is given.
export const { options, setup, warm, hit, teardown, handleSummary } = vuRun(
  JSON.parse(open(__ENV.LAB_PREPARED)),
  baseUrls(),
);
