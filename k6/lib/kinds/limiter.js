/*
 * The limiter kind's requests: each is tagged with its case (its scenario's name), names the
 * limiter key (or Envoy route) it meets, a fresh one per case, and is checked for a status the
 * policy allows: 200 or the limited one (or another its limits refuse with). The model's longest
 * wait per case is written once, so that dashboards can set it beside k6's.
 */
import http from 'k6/http';
import exec from 'k6/execution';
import { check } from 'k6';
import { Counter, Gauge, Trend } from 'k6/metrics';
import { statusChecks } from '../checks.js';
import { keyAt } from '../../../thresholds/key-runs.js';

/**
 * The request of a case's i-th iteration where the case sends several keys in turn (`keyRuns`:
 * {header | param, runs}): its own as planned, a fresh key in the header or the parameter, or
 * none (the header or the parameter left out).
 */
function keyedRequest(c, path, params, i) {
  const key = keyAt(c.keyRuns.runs, i);
  if (key === null) return { path, params };
  const { header, param } = c.keyRuns;
  if (header) {
    const headers = { ...params.headers };
    delete headers[header];
    return { path, params: { ...params, headers: key ? { ...headers, [header]: key } : headers } };
  }
  const bare = path.split('?')[0];
  return { path: key ? `${bare}?${encodeURIComponent(param)}=${encodeURIComponent(key)}` : bare, params };
}

export default function limiter(plan, baseUrls) {
  const unexpected = new Counter('unexpected_status');
  const expectedWait = new Gauge('lab_expected_max_wait_ms');
  // How late k6 starts each request against the schedule the model replays (arrivalTimes: the
  // i-th at the scenario's start + (i+1)/rate): the timing noise the model must allow.
  const late = new Trend('lab_arrival_late_ms', true);
  // The limited status is what the policy asks for: k6 counts it as expected, so that
  // http_req_failed means "not what the policy allows" (k6 makes these only at init).
  const allowed = Object.fromEntries(
    plan.cases.map((c) => [c.id, http.expectedStatuses(200, c.limitedStatus, ...(c.alsoStatuses ?? []))]),
  );
  const byId = Object.fromEntries(plan.cases.map((c) => [c.id, c]));
  // What a case's requests carry: its id, and what its plan asks for (a Host, its own key).
  const params = Object.fromEntries(
    plan.cases.map((c) => [
      c.id,
      {
        timeout: `${c.timeoutS}s`,
        // A limit_conn case asks the backend to hold its answers (servers/node/hello.js).
        headers: {
          'x-lab-case': c.id,
          ...(c.headers || {}),
          ...(c.holdMs ? { 'x-lab-hold-ms': String(c.holdMs) } : {}),
          // A sessions case opens a connection per request: the proxy closes each after its answer.
          ...(c.connects ? { Connection: 'close' } : {}),
        },
        responseCallback: allowed[c.id],
      },
    ]),
  );
  const checks = Object.fromEntries(
    plan.cases.map((c) => [c.id, statusChecks(c.limitedStatus, c.proto, c.alsoStatuses ?? [])]),
  );
  return {
    setup() {
      for (const c of plan.cases) expectedWait.add(c.model.maxDelayMs.max, { case: c.id });
    },
    hit() {
      // exec.scenario is built afresh on each read: read once per iteration.
      const { name, startTime, iterationInTest } = exec.scenario;
      const c = byId[name];
      // The i-th arrival is due (i + lead) periods after the scenario's start: lead 1 for the
      // held ramping-arrival-rate, 0 for a constant-arrival-rate (an exported script's).
      late.add(Date.now() - (startTime + ((iterationInTest + (c.leadPeriods ?? 1)) * 1000) / c.rate));
      const sent = c.keyRuns
        ? keyedRequest(c, c.path, params[name], iterationInTest)
        : { path: c.path, params: params[name] };
      const res = http.get((c.origin ?? baseUrls[c.service]) + sent.path, sent.params);
      if (!check(res, checks[name])) unexpected.add(1, { status: String(res.status) });
    },
  };
}
