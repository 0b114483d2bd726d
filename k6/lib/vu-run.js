/*
 * What a k6 script exports for a k6Run (thresholds/k6-options.js): its options, what every VU
 * does (plan-run.js, with its kind's executor) and the summary files. Shared by the experiments'
 * scripts (run.js) and the runner's entry (prepared.js); it imports none of the model, so the
 * runner's VUs evaluate none of it.
 */
import { executors } from './kinds/index.js';
import { summaryFiles } from './summary.js';
import { planRun } from './plan-run.js';

export function vuRun({ plan, kind, options }, baseUrls) {
  return {
    options,
    ...planRun(plan, baseUrls, executors[kind], options.scenarios),
    handleSummary: (data) => summaryFiles(data, plan, __ENV.LAB_RESULTS || 'results'),
  };
}
