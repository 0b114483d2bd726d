/*
 * The limiter kind's requests: each is tagged with its case, names the limiter key (or Envoy
 * route) it meets, a fresh one per case, and counts as 200, limited or unexpected. The model's
 * longest wait per case is written once, so that dashboards can set it beside k6's.
 */
import http from 'k6/http';
import { Counter, Gauge } from 'k6/metrics';

export default function limiter(plan) {
  const unexpected = new Counter('unexpected_status');
  const expectedWait = new Gauge('lab_expected_max_wait_ms');
  return {
    setup() {
      for (const c of plan.cases) expectedWait.add(c.model.maxDelayMs.max, { case: c.id });
    },
    hit() {
      const res = http.get(__ENV.LAB_URL, { timeout: __ENV.LAB_TIMEOUT, headers: { 'x-lab-case': __ENV.LAB_CASE } });
      if (res.status !== 200 && res.status !== Number(__ENV.LAB_LIMITED)) unexpected.add(1, { status: String(res.status) });
    },
  };
}
