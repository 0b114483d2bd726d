/*
 * The k6 run of a capacity plan (json-filter): per server a ramp of held arrival rates (k6's
 * ramping-arrival-rate), a closed run with a fixed number of connections, or a short open run
 * (smoke). Each step of a ramp gets its own metrics so the summary can say where a server
 * stopped keeping up; every request is tagged with its case and whether it goes to the backend.
 *
 * What k6 can judge alone is a threshold here; what compares cases with each other (shares of
 * the references' throughput, latency over the direct backend) or with the backend's own count
 * is judged from the summary by the lab, from the counters this run leaves in it.
 */
import http from 'k6/http';
import exec from 'k6/execution';
import { fail } from 'k6';
import { Trend, Counter, Rate } from 'k6/metrics';
import { summaryFiles } from '../summary.js';
import { loadPlan, baseUrls as serviceUrls } from '../plan.js';

const bodyText = open('../../json-filter-sample.json');

export function capacityRun() {
  const plan = loadPlan('json-filter');
  const baseUrls = serviceUrls();
  const sample = JSON.parse(bodyText);
  const bodies = { relay: JSON.stringify({ ...sample, relay: true }), filtered: JSON.stringify({ ...sample, relay: false }) };
  const backendUrl = `${baseUrls[plan.accounting.service]}${plan.accounting.path}`;
  const perCase = {};
  const scenarios = {};
  const thresholds = {};
  for (const c of plan.cases) {
    const env = { LAB_URL: baseUrls[c.service] + c.path, LAB_CASE: c.id, LAB_RELAYS_ALL: String(c.relaysAll) };
    const common = { exec: 'post', startTime: `${Math.round(c.startMs)}ms`, gracefulStop: `${c.graceS}s`, tags: { case: c.id }, env };
    const counter = (k) => new Counter(`${c.metric}_${k}`);
    // The relay route's fate, request by request, for the backend accounting.
    const mine = perCase[c.id] = {
      relaySent: counter('relay_sent'), relayAnswered: counter('relay_answered'), relayOk: counter('relay_ok'),
      relayGatewayError: counter('relay_gateway_error'), backendReceived: counter('backend_received'), steady: null, steps: null,
    };
    if (c.kind === 'closed') {
      // Every VU opens its connection (GET /healthz) in the window before the run.
      scenarios[`${c.id}-connect`] = {
        executor: 'per-vu-iterations', vus: c.vus, iterations: 1, exec: 'connect', startTime: `${Math.round(c.startMs - c.connectS * 1000)}ms`,
        maxDuration: `${c.connectS * 1000 - 500}ms`, gracefulStop: '0s', tags: { case: `${c.id}-connect` }, env: { LAB_URL: `${baseUrls[c.service]}/healthz` },
      };
      scenarios[c.id] = { ...common, executor: 'constant-vus', vus: c.vus, duration: `${Math.round(c.durationMs)}ms` };
      thresholds[`http_reqs{case:${c.id}}`] = [`count>=${c.expected.requests.lo}`];
    } else if (c.kind === 'open') {
      // 250 ms in flight per request, eight times the backend's 30 ms: a 2000 r/s run saw
      // relayed answers take up to 200 ms when another process took a core, and ran out of
      // 200 VUs. Each VU opens its connection within the first second, which nothing measures.
      const vus = Math.max(20, Math.ceil(c.rate * 0.25));
      scenarios[c.id] = { ...common, executor: 'ramping-arrival-rate', startRate: c.rate, timeUnit: '1s', preAllocatedVUs: vus, maxVUs: vus, stages: [{ target: c.rate, duration: `${Math.round(((c.rate * c.seconds + 0.5) * 1e6) / c.rate)}us` }] };
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
      // A ramp sends at least its first step in full (95 % delivered, as every step must be).
      thresholds[`http_reqs{case:${c.id}}`] = [`count>=${Math.floor(c.steps[0] * c.holdS * 0.95)}`];
      mine.steps = Object.fromEntries(c.steps.map((r) => [r, {
        ms: new Trend(`${c.metric}_${r}_ms`, true), relayMs: new Trend(`${c.metric}_${r}_relay_ms`, true),
        reqs: new Counter(`${c.metric}_${r}_reqs`), failed: new Rate(`${c.metric}_${r}_failed`),
      }]));
    }
    if (c.warmS) {
      mine.steady = counter('steady_reqs');
      scenarios[c.id].env = { ...scenarios[c.id].env, LAB_WARM_MS: String(c.warmS * 1000), LAB_DURATION_MS: String(c.durationMs) };
    }
    if (c.expected.p99Ms) thresholds[`http_req_duration{case:${c.id}}`] = [`p(99)<${c.expected.p99Ms.hi}`];
    if (c.expected.errorRate) thresholds[`http_req_failed{case:${c.id}}`] = [`rate<${c.expected.errorRate.hi}`];
    thresholds[`http_req_duration{case:${c.id},route:backend}`] = [`min>=${c.expected.relayMinMs.lo}`];
  }

  /** Requests the backend has received, by path (its /stats). */
  const backendPaths = () => {
    const res = http.get(backendUrl, { tags: { case: 'accounting' }, responseType: 'text' });
    if (res.status !== 200) fail(`the backend's ${backendUrl} answered ${res.status} ${res.error || ''}`);
    return res.json().paths;
  };

  return {
    options: { scenarios, thresholds, discardResponseBodies: true, summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(99)'], setupTimeout: '30s' },

    setup() {
      for (const s of new Set(plan.cases.map((c) => c.service))) {
        const res = http.get(`${baseUrls[s]}/healthz`, { tags: { case: 'setup' } });
        if (res.status !== 200) fail(`${s} is not up at ${baseUrls[s]} (status ${res.status})`);
      }
      // The scenarios' clock starts as setup() returns: the lab lines its CPU samples up with it.
      return { before: backendPaths(), t0: Date.now() };
    },

    connect() {
      http.get(__ENV.LAB_URL, { timeout: '5s' });
    },

    post() {
      const mine = perCase[__ENV.LAB_CASE];
      const n = exec.scenario.iterationInTest;
      // Every (100 / relay_percent)-th document asks to be relayed, spread evenly.
      const relay = Math.floor(((n + 1) * plan.relayPercent) / 100) > Math.floor((n * plan.relayPercent) / 100);
      const toBackend = relay || __ENV.LAB_RELAYS_ALL === 'true';
      const started = Date.now();
      const elapsed = started - exec.scenario.startTime;
      let step = null;
      if (mine.steps) {
        const period = Number(__ENV.LAB_RAMP_MS) + Number(__ENV.LAB_HOLD_MS);
        const i = Math.floor(elapsed / period);
        const rates = __ENV.LAB_STEPS.split(',');
        if (i < rates.length && elapsed - i * period >= Number(__ENV.LAB_RAMP_MS)) step = mine.steps[rates[i]];
      }
      if (toBackend) mine.relaySent.add(1);
      const res = http.post(__ENV.LAB_URL, relay ? bodies.relay : bodies.filtered, {
        headers: { 'content-type': 'application/json' },
        tags: { route: toBackend ? 'backend' : 'filter' },
        timeout: '10s',
      });
      const ok = res.status === 204;
      if (toBackend && res.status !== 0) {
        mine.relayAnswered.add(1);
        if (ok) mine.relayOk.add(1);
        if (res.status === 502 || res.status === 504) mine.relayGatewayError.add(1);
      }
      if (mine.steady) {
        const ended = Date.now() - exec.scenario.startTime;
        if (ended >= Number(__ENV.LAB_WARM_MS) && ended <= Number(__ENV.LAB_DURATION_MS)) mine.steady.add(1);
      }
      if (step) {
        step.reqs.add(1);
        step.ms.add(res.timings.duration);
        if (toBackend) step.relayMs.add(res.timings.duration);
        step.failed.add(!ok);
      }
    },

    teardown(data) {
      const after = backendPaths();
      for (const c of plan.cases) perCase[c.id].backendReceived.add((after[c.path] || 0) - (data.before[c.path] || 0));
    },

    handleSummary: (data) => summaryFiles(data, plan, __ENV.LAB_RESULTS || 'results'),
  };
}
