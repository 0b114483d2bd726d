/*
 * The lab runner's k6 entry: the same run as the experiment's script (run.js), with what that
 * script computes in every VU from the plan (its part of the plan, its kind, its options)
 * computed once by the runner (lab/run/k6.mjs preparedRun) and read from LAB_PREPARED. k6
 * evaluates every module a script imports in every VU, and the model's modules (thresholds/)
 * were most of what a VU cost to start (docs/journal/json-filter.md, "What a VU costs to
 * start"); this entry imports none of them.
 */
import { executors } from './kinds/index.js';
import { summaryFiles } from './summary.js';
import { baseUrls as serviceUrls } from './urls.js';
import { planRun } from './plan-run.js';

// Parsed in each VU (a few tens of kB): k6 writes into the options it is given.
const prepared = JSON.parse(open(__ENV.LAB_PREPARED));
const run = planRun(prepared.plan, serviceUrls(), executors[prepared.kind], prepared.options.scenarios);

export const options = prepared.options;
export const { setup, warm, hit, teardown } = run;
export const handleSummary = (data) => summaryFiles(data, prepared.plan, __ENV.LAB_RESULTS || 'results');
