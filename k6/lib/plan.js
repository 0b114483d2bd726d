/*
 * What a k6 script runs and against what, the same under the lab's runner and with k6 alone:
 * the plan (each service's base URL: urls.js). Running a script with k6 alone: docs/knobs.md.
 */
import { SharedArray } from 'k6/data';
import { plan as modelPlan } from '../../thresholds/plan.js';
import { parseFactor } from '../../thresholds/knobs.js';
import { json } from './urls.js';

/**
 * The plan: the runner's file (LAB_PLAN), or the model's for SUITE, QUICK and KNOBS
 * (`k6 run -e SUITE=spike -e QUICK=5 -e KNOBS='{"rate":5}' k6/burst.js`; none: the smoke plan);
 * SEGMENTS=N: the plan as N processes (execution segments) share it, as k6-operator's pods do.
 * Computed once for all VUs (a SharedArray's function runs in the first VU's init only): the
 * model's jitter trials take a fraction of a second, and a run has hundreds of VUs.
 */
export function loadPlan(experiment) {
  return new SharedArray(`plan:${experiment}`, () => [
    __ENV.LAB_PLAN
      ? JSON.parse(open(__ENV.LAB_PLAN))
      : modelPlan({
          experiment,
          suite: __ENV.SUITE || 'smoke',
          factor: __ENV.QUICK ? parseFactor(__ENV.QUICK) : 1,
          overrides: json('KNOBS', {}),
          segments: __ENV.SEGMENTS ? parseFactor(__ENV.SEGMENTS) : 1,
        }),
  ])[0];
}
