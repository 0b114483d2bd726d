/*
 * The one k6 run behind every experiment's script: its plan, its kind's scenarios and
 * thresholds, what every VU does (plan-run.js) and the summary files. A script is one line of
 * it; `./labw export` writes the same test as one standalone script.
 */
import { k6Run } from '../../thresholds/k6-options.js';
import { loadPlan } from './plan.js';
import { baseUrls as serviceUrls } from './urls.js';
import { vuRun } from './vu-run.js';

export function experimentRun(experiment) {
  const baseUrls = serviceUrls();
  return vuRun(k6Run(loadPlan(experiment), baseUrls, __ENV), baseUrls);
}
