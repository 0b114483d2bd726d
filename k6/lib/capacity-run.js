/*
 * The k6 run of a capacity plan (json-filter): per server a ramp of held arrival rates (k6's
 * ramping-arrival-rate), a closed run with a fixed number of connections, or a short open run
 * (smoke). Each step of a ramp gets its own metrics so the summary can say where a server
 * stopped keeping up; every request is tagged with its case and whether it goes to the backend.
 */
import http from 'k6/http';
import exec from 'k6/execution';
import { fail } from 'k6';
import { Trend, Counter } from 'k6/metrics';
import { summaryFiles } from './summary.js';

const bodyText = open('../json-filter-sample.json');

export function capacityRun() {
  const plan = JSON.parse(open(__ENV.LAB_PLAN));
  const baseUrls = JSON.parse(__ENV.LAB_BASE_URLS);
  const sample = JSON.parse(bodyText);
  const bodies = { relay: JSON.stringify({ ...sample, relay: true }), filtered: JSON.stringify({ ...sample, relay: false }) };
  const backendExpected = new Counter('backend_expected');
  const steps = {};
  const scenarios = {};
  const thresholds = {};
  for (const c of plan.cases) {
    const env = { LAB_URL: baseUrls[c.service] + c.path, LAB_CASE: c.id, LAB_RELAYS_ALL: String(c.relaysAll) };
    const common = { exec: 'post', startTime: `${Math.round(c.startMs)}ms`, gracefulStop: `${c.graceS}s`, tags: { case: c.id }, env };
    if (c.kind === 'closed') {
      scenarios[c.id] = { ...common, executor: 'constant-vus', vus: c.vus, duration: `${Math.round(c.durationMs)}ms` };
      thresholds[`http_reqs{case:${c.id}}`] = [`count>=${c.expected.requests.lo}`];
    } else if (c.kind === 'open') {
      scenarios[c.id] = { ...common, executor: 'ramping-arrival-rate', startRate: c.rate, timeUnit: '1s', preAllocatedVUs: 20, maxVUs: 20, stages: [{ target: c.rate, duration: `${Math.round(((c.rate * c.seconds + 0.5) * 1e6) / c.rate)}us` }] };
      thresholds[`http_reqs{case:${c.id}}`] = [`count>=${c.expected.requests.lo}`, `count<=${c.expected.requests.hi}`];
    } else {
      scenarios[c.id] = {
        ...common,
        executor: 'ramping-arrival-rate',
        startRate: c.steps[0],
        timeUnit: '1s',
        preAllocatedVUs: 300,
        maxVUs: 3000,
        stages: c.steps.flatMap((r) => [{ target: r, duration: `${Math.round(c.rampS * 1000)}ms` }, { target: r, duration: `${Math.round(c.holdS * 1000)}ms` }]),
        env: { ...env, LAB_STEPS: c.steps.join(','), LAB_RAMP_MS: String(c.rampS * 1000), LAB_HOLD_MS: String(c.holdS * 1000) },
      };
      steps[c.id] = Object.fromEntries(c.steps.map((r) => [r, {
        ms: new Trend(`${c.metric}_${r}_ms`, true), reqs: new Counter(`${c.metric}_${r}_reqs`), failed: new Counter(`${c.metric}_${r}_failed`),
      }]));
      // The first step must be below every server's breakpoint.
      thresholds[`${c.metric}_${c.steps[0]}_ms`] = [`p(99)<${c.expected.p99Ms.hi}`];
      thresholds[`${c.metric}_${c.steps[0]}_reqs`] = [`count>=${Math.floor(c.steps[0] * c.holdS * 0.95)}`];
    }
    if (c.kind !== 'ramp') thresholds[`http_req_failed{case:${c.id}}`] = [`rate<${c.expected.errorRate.hi}`];
    thresholds[`http_req_duration{case:${c.id},route:backend}`] = [`min>=${c.expected.relayMinMs.lo}`];
  }

  return {
    options: { scenarios, thresholds, discardResponseBodies: true, summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(99)'], setupTimeout: '30s' },

    setup() {
      for (const s of new Set(plan.cases.map((c) => c.service))) {
        const res = http.get(`${baseUrls[s]}/healthz`, { tags: { case: 'setup' } });
        if (res.status !== 200) fail(`${s} is not up at ${baseUrls[s]} (status ${res.status})`);
      }
    },

    post() {
      const n = exec.scenario.iterationInTest;
      // Every (100 / relay_percent)-th document asks to be relayed, spread evenly.
      const relay = Math.floor(((n + 1) * plan.relayPercent) / 100) > Math.floor((n * plan.relayPercent) / 100);
      const toBackend = relay || __ENV.LAB_RELAYS_ALL === 'true';
      let step = null;
      if (__ENV.LAB_STEPS) {
        const period = Number(__ENV.LAB_RAMP_MS) + Number(__ENV.LAB_HOLD_MS);
        const elapsed = Date.now() - exec.scenario.startTime;
        const i = Math.floor(elapsed / period);
        const rates = __ENV.LAB_STEPS.split(',');
        if (i < rates.length && elapsed - i * period >= Number(__ENV.LAB_RAMP_MS)) step = steps[__ENV.LAB_CASE][rates[i]];
      }
      const res = http.post(__ENV.LAB_URL, relay ? bodies.relay : bodies.filtered, {
        headers: { 'content-type': 'application/json' },
        tags: { route: toBackend ? 'backend' : 'filter' },
        timeout: '10s',
      });
      const ok = res.status === 204;
      if (ok && toBackend) backendExpected.add(1);
      if (step) {
        step.reqs.add(1);
        step.ms.add(res.timings.duration);
        if (!ok) step.failed.add(1);
      }
    },

    handleSummary: (data) => summaryFiles(data, plan, __ENV.LAB_RESULTS || 'results'),
  };
}
