/*
 * The limiter kind's requests: each is tagged with its case, names the limiter key (or Envoy
 * route) it meets, a fresh one per case, and counts as 200, limited or unexpected. The model's
 * longest wait per case is written once, so that dashboards can set it beside k6's.
 */
import http from 'k6/http';
import exec from 'k6/execution';
import { Counter, Gauge, Trend } from 'k6/metrics';

export default function limiter(plan) {
  const unexpected = new Counter('unexpected_status');
  const expectedWait = new Gauge('lab_expected_max_wait_ms');
  // How late k6 starts each request against the schedule the model replays (arrivalTimes: the
  // i-th at the scenario's start + (i+1)/rate): the timing noise the model must allow.
  const late = new Trend('lab_arrival_late_ms', true);
  // The limited status is what the policy asks for: k6 counts it as expected, so that
  // http_req_failed means "not what the policy allows" (k6 makes these only at init).
  const allowed = Object.fromEntries(plan.cases.map((c) => [c.id, http.expectedStatuses(200, c.limitedStatus)]));
  // What a case's requests carry: its id, and what its plan asks for (a Host, its own key).
  const headers = Object.fromEntries(plan.cases.map((c) => [c.id, { 'x-lab-case': c.id, ...(c.headers || {}) }]));
  return {
    setup() {
      for (const c of plan.cases) expectedWait.add(c.model.maxDelayMs.max, { case: c.id });
    },
    hit() {
      const due = exec.scenario.startTime + ((exec.scenario.iterationInTest + 1) * 1000) / Number(__ENV.LAB_RATE);
      late.add(Date.now() - due);
      const res = http.get(__ENV.LAB_URL, { timeout: __ENV.LAB_TIMEOUT, headers: headers[__ENV.LAB_CASE], responseCallback: allowed[__ENV.LAB_CASE] });
      if (res.status !== 200 && res.status !== Number(__ENV.LAB_LIMITED)) unexpected.add(1, { status: String(res.status) });
    },
  };
}
