/*
 * What a k6 script runs and against what, the same under the lab's runner and with k6 alone:
 *   k6 run k6/burst.js                                   the smoke plan, the stack on 127.0.0.1
 *   k6 run -e SUITE=spike -e QUICK=5 -e KNOBS='{"rate":5}' k6/burst.js
 *   SEGMENTS=N: the plan as N processes (execution segments) share it: k6-operator's pods
 *   k6 run -e BASE_URL=http://10.0.0.5 k6/burst.js        the same ports on another host
 *   k6 run -e LAB_BASE_URLS='{"burst-nginx":"http://h:80"}' k6/burst.js   any address per service
 * The runner passes LAB_PLAN (the plan it wrote) and LAB_BASE_URLS; the ports come from
 * docker-compose.yml (services.json, generated from it).
 */
import { SharedArray } from 'k6/data';
import { plan as modelPlan } from '../../thresholds/plan.js';
import { parseFactor } from '../../thresholds/knobs.js';

const services = JSON.parse(open('./services.json')).httpPorts;

function json(name, fallback) {
  try {
    return __ENV[name] ? JSON.parse(__ENV[name]) : fallback;
  } catch (e) {
    throw new Error(`${name} is not JSON: ${e.message}`);
  }
}

/**
 * The plan: the runner's file, or the model's for SUITE, QUICK and KNOBS. Computed once for all
 * VUs (a SharedArray's function runs in the first VU's init only): the model's jitter trials
 * take a fraction of a second, and a run has hundreds of VUs.
 */
export function loadPlan(experiment) {
  return new SharedArray(`plan:${experiment}`, () => [
    __ENV.LAB_PLAN
      ? JSON.parse(open(__ENV.LAB_PLAN))
      : modelPlan({ experiment, suite: __ENV.SUITE || 'smoke', factor: __ENV.QUICK ? parseFactor(__ENV.QUICK) : 1, overrides: json('KNOBS', {}), segments: __ENV.SEGMENTS ? parseFactor(__ENV.SEGMENTS) : 1 }),
  ])[0];
}

/** Base URL per service: LAB_BASE_URLS, else BASE_URL (scheme and host) with the topology's ports. */
export function baseUrls() {
  const host = (__ENV.BASE_URL || 'http://127.0.0.1').replace(/\/+$/, '');
  const defaults = Object.fromEntries(Object.entries(services).map(([s, port]) => [s, `${host}:${port}`]));
  return { ...defaults, ...json('LAB_BASE_URLS', {}) };
}
