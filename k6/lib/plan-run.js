/*
 * The one k6 run shared by the open-model experiments: a plan (from the runner, or from the
 * model when k6 is run by hand) becomes scenarios and thresholds; every request is tagged with
 * its case; setup() refuses to start against a stack that is not up.
 */
import http from 'k6/http';
import { fail } from 'k6';
import { Counter } from 'k6/metrics';
import { k6Options } from '../../thresholds/k6-options.js';
import { plan as modelPlan } from '../../thresholds/plan.js';
import { summaryFiles } from './summary.js';

const unexpected = new Counter('unexpected_status');

function json(name, fallback) {
  try {
    return __ENV[name] ? JSON.parse(__ENV[name]) : fallback;
  } catch (e) {
    throw new Error(`${name} is not JSON: ${e.message}`);
  }
}

export function planRun(experiment) {
  // By hand: k6 run -e SUITE=spike -e QUICK=5 -e KNOBS='{"rate":5}' -e LAB_BASE_URLS='{...}' k6/burst.js
  const plan = __ENV.LAB_PLAN
    ? JSON.parse(open(__ENV.LAB_PLAN))
    : modelPlan({ experiment, suite: __ENV.SUITE || 'smoke', factor: Number(__ENV.QUICK || 1), overrides: json('KNOBS', {}) });
  const baseUrls = json('LAB_BASE_URLS', {});
  const readyUrls = json('LAB_READY_URLS', {});
  return {
    options: k6Options(plan, baseUrls),

    setup() {
      for (const service of new Set(plan.cases.map((c) => c.service))) {
        const url = readyUrls[service] || baseUrls[service];
        const res = http.get(url, { timeout: '3s', tags: { case: 'setup' } });
        if (res.status < 200 || res.status >= 300) fail(`${service} is not up at ${url} (status ${res.status} ${res.error || ''})`);
      }
    },

    warm() {
      for (const url of __ENV.LAB_WARM_URLS.split(' ')) http.get(url, { timeout: '2s' });
    },

    hit() {
      // The case names the limiter key (or Envoy route) it meets: a fresh one per case.
      const res = http.get(__ENV.LAB_URL, { timeout: __ENV.LAB_TIMEOUT, headers: { 'x-lab-case': __ENV.LAB_CASE } });
      if (res.status !== 200 && res.status !== Number(__ENV.LAB_LIMITED)) unexpected.add(1, { status: String(res.status) });
    },

    handleSummary: (data) => summaryFiles(data, plan, __ENV.LAB_RESULTS || 'results'),
  };
}
