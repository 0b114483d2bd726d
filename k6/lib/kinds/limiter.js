/*
 * The one k6 run shared by the open-model experiments: a plan (from the runner, or from the
 * model when k6 is run by hand) becomes scenarios and thresholds; every request is tagged with
 * its case; setup() refuses to start against a stack that is not up.
 */
import http from 'k6/http';
import { fail } from 'k6';
import { Counter, Gauge } from 'k6/metrics';
import { k6Options } from '../../../thresholds/kinds/limiter.js';
import { summaryFiles } from '../summary.js';
import { loadPlan, baseUrls as serviceUrls } from '../plan.js';
import { countOnWire } from '../wire.js';

const unexpected = new Counter('unexpected_status');
// The model's longest wait per case, written once so that dashboards can set it beside k6's.
const expectedWait = new Gauge('lab_expected_max_wait_ms');

export function planRun(experiment) {
  const plan = loadPlan(experiment);
  const baseUrls = serviceUrls();
  return {
    options: k6Options(plan, baseUrls),

    setup() {
      for (const service of new Set(plan.cases.map((c) => c.service))) {
        // Every proxy answers /healthz without spending its limiter's budget.
        const url = `${baseUrls[service]}/healthz`;
        const res = http.get(url, { timeout: '3s', tags: { case: 'setup' } });
        if (res.status < 200 || res.status >= 300) fail(`${service} is not up at ${url} (status ${res.status} ${res.error || ''})`);
      }
      for (const c of plan.cases) expectedWait.add(c.model.maxDelayMs.max, { case: c.id });
    },

    warm() {
      for (const url of __ENV.LAB_WARM_URLS.split(' ')) http.get(url, { timeout: '2s' });
    },

    hit() {
      // The case names the limiter key (or Envoy route) it meets: a fresh one per case.
      const res = http.get(__ENV.LAB_URL, { timeout: __ENV.LAB_TIMEOUT, headers: { 'x-lab-case': __ENV.LAB_CASE } });
      if (res.status !== 200 && res.status !== Number(__ENV.LAB_LIMITED)) unexpected.add(1, { status: String(res.status) });
      countOnWire(res);
    },

    handleSummary: (data) => summaryFiles(data, plan, __ENV.LAB_RESULTS || 'results'),
  };
}
