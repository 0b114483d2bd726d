/*
 * The one k6 run behind every experiment's script: its plan, its kind's scenarios and
 * thresholds, what every VU does (plan-run.js) and the summary files. A script is one line of
 * it; `./labw export` writes the same test as one standalone script.
 */
import { k6Options, k6Plan } from '../../thresholds/k6-options.js';
import { kindOfPlan } from '../../thresholds/plan.js';
import { executors } from './kinds/index.js';
import { summaryFiles } from './summary.js';
import { loadPlan } from './plan.js';
import { baseUrls as serviceUrls } from './urls.js';
import { planRun } from './plan-run.js';

export function experimentRun(experiment) {
  const plan = k6Plan(loadPlan(experiment), __ENV);
  const baseUrls = serviceUrls();
  const options = k6Options(plan, baseUrls);
  const run = planRun(plan, baseUrls, executors[kindOfPlan(plan).name], options.scenarios);
  return {
    options,
    ...run,
    handleSummary: (data) => summaryFiles(data, plan, __ENV.LAB_RESULTS || 'results'),
  };
}
