/*
 * Plans for capacity experiments (json-filter): no limiter to replay, so what is expected is
 * what a correct server must do, and how it must compare with the references measured in the
 * same run (nginx relaying everything, and the backend reached directly).
 */
import { shownRanges, KEEP_ONLY } from './judged.js';
import { heldRateStages } from '../held-rate.js';

// The stated bounds: below its breakpoint a server answers all but 1 % and its p99 stays under
// 1 s, and k6 gets 95 % of the arrival rate through: every server must at 500 r/s (the ramps'
// first step).
export const CAPACITY = { p99Ms: 1000, errorRate: 0.01, sustain: 0.95, pauseMs: 2000, warmS: 1, connectS: 3 };

// The lowest arrival rate of a ramp, which every server must sustain (see the suite's steps).
export const FIRST_STEP = 500;

const metricName = (id) => id.replace(/[^a-zA-Z0-9]/g, '_');

/**
 * Against the references, in the same run: CPU per request at a fixed 2000 r/s (the server's
 * process group, from /proc) as an efficiency, the reference's cost over the server's, at or
 * above a floor; and relayed median latency at 500 r/s at most a ceiling above the direct
 * backend's. Floors and ceilings come from the spread measured on this machine kind (the
 * experiment's `measuredSpread`).
 *
 * Bounds from a measured spread. Efficiency: the measured runs went from `min` to `max`;
 * a server twice as costly as in the best run would score max / 2. The floor sits half-way between
 * the two in ratio terms, sqrt(min x max / 2), so the worst run passes and a 2x slowdown of the
 * best fails with the same relative room. That needs max < 2 x min: refused otherwise.
 * Latency overhead (ms over the direct backend): the worst run measured `max`; a server adding
 * `perturbMs` per request would score at least min + perturbMs. The ceiling is half-way.
 */
export function comparisonBounds(spread, perturbMs) {
  const floors = {};
  for (const [server, refs] of Object.entries(spread.efficiency)) {
    floors[server] = {};
    for (const [ref, [min, max]] of Object.entries(refs)) {
      if (!(max < 2 * min)) throw new Error(`json-filter ${server}/${ref}: measured efficiency ${min}..${max} spans 2x; no floor can tell a 2x slowdown`);
      floors[server][ref] = Math.round(Math.sqrt((min * max) / 2) * 1000) / 1000;
    }
  }
  const ceilings = {};
  for (const [server, [min, max]] of Object.entries(spread.overheadMs)) {
    if (!(min + perturbMs > max)) throw new Error(`json-filter ${server}: measured overhead ${min}..${max} ms hides a ${perturbMs} ms slowdown`);
    ceilings[server] = Math.round(((max + min + perturbMs) / 2) * 10) / 10;
  }
  return { floors, ceilings };
}

function plan({ exp, suite, factor, requested, knobs, policy, leadInMs }) {
  const targets = exp.targets(policy);
  const { floors, ceilings } = comparisonBounds(exp.measuredSpread, exp.perturbMs);
  let t = leadInMs;
  const specs = exp.cases[suite](knobs, factor);
  const cases = specs.map((c, i) => {
    // A closed run's connections are opened first, all at once as the seed's wrk did, in a
    // window of their own (real time, not compressed): the surge of 2500 connects is not what
    // the closed run measures, and it disturbs whatever else runs then.
    const connectS = c.kind === 'closed' ? CAPACITY.connectS : 0;
    t += connectS * 1000;
    const target = targets.find((x) => x.id === c.target);
    const durationMs = c.kind === 'ramp' ? c.steps.length * (c.rampS + c.holdS) * 1000 : c.seconds * 1000;
    const seed = exp.seedFigures[c.id];
    // Compared with the same case on each reference (node-base with direct-base, ...).
    const against = (judge, bounds) => (c.judge === judge && bounds && Object.keys(bounds).length
      ? Object.fromEntries(Object.entries(bounds).map(([ref, b]) => [ref, { case: `${ref}${c.id.slice(c.target.length)}`, ...b }]))
      : undefined);
    const out = {
      ...c,
      name: `${exp.name}/${c.id}`,
      service: target.service,
      path: `${target.path}/${c.id}`, // the backend counts what it receives per path, so per case
      startMs: t,
      durationMs,
      relaysAll: target.relaysAll,
      metric: metricName(c.id),
      seed: seed || null,
      expected: {
        // A relayed answer cannot arrive sooner than the backend's delay, less 1 ms (the backend's
        // sleep starts on nginx's cached millisecond clock, which can be up to 1 ms behind).
        relayMinMs: { lo: policy.backend_delay_ms - 1 },
        backend: { slack: 'unanswered and 502/504 answers on the relay route, each counted' },
        // A ramp measures where the server stops keeping up; what it must do is judged elsewhere.
        ...(c.kind === 'open' ? {
          requests: { lo: Math.floor(c.rate * c.seconds * CAPACITY.sustain), hi: Math.round(c.rate * c.seconds) },
          errorRate: { hi: CAPACITY.errorRate },
          p99Ms: { hi: CAPACITY.p99Ms },
          overheadMs: against('latency', ceilings[c.target] !== undefined ? { direct: { hi: ceilings[c.target] } } : null),
          efficiency: against('cost', Object.fromEntries(Object.entries(floors[c.target] || {}).map(([ref, lo]) => [ref, { lo }]))),
        } : {}),
        ...(c.kind === 'closed' ? {
          errorRate: { hi: CAPACITY.errorRate },
          // What k6 alone can judge: the server carried at least the ramp's first step.
          requests: { lo: Math.round(FIRST_STEP * c.seconds) },
        } : {}),
      },
      connectS,
      // Throughput and CPU are counted over the steady part of a run: after its first second
      // (an open run's first connections; a closed run's settling), and only requests that
      // ended within the run.
      warmS: c.kind === 'closed' || c.judge === 'cost' ? Math.min(CAPACITY.warmS, c.seconds / 4) : 0,
      graceS: c.kind === 'open' ? 1 : Math.ceil(policy.backend_timeout_ms / 1000) + 2,
    };
    // An open run below the breakpoint leaves nothing queued: the next starts once its grace
    // period is over, so that a slow spell's stragglers (a server's queue, k6's VUs still busy)
    // end within the case that had them and never in the next server's (one run queued 2.5x its
    // CPU per request at 2000 r/s, and four cases after it lost requests). Any other change of
    // kind, and every saturating run, is followed by a pause as well.
    const next = specs[i + 1];
    const settled = c.kind === 'open' && (!next || next.kind === 'open');
    t += durationMs + out.graceS * 1000 + (settled ? 0 : CAPACITY.pauseMs);
    return out;
  });
  for (const c of cases) {
    for (const ref of [...Object.values(c.expected.overheadMs || {}), ...Object.values(c.expected.efficiency || {})]) {
      if (!cases.some((x) => x.id === ref.case)) throw new Error(`json-filter ${c.id}: reference case ${ref.case} is not in the plan`);
    }
  }
  return {
    experiment: exp.name,
    kind: 'capacity',
    suite,
    factor,
    requestedFactor: requested,
    knobs,
    policy,
    model: { capacity: CAPACITY, floors, ceilings, measuredSpread: exp.measuredSpread, perturbMs: exp.perturbMs },
    leadInMs,
    relayPercent: knobs.relay_percent,
    // The backend counts what reached it per path; k6's setup() and teardown() read it.
    accounting: { service: 'json-filter-backend', path: '/stats' },
    durationS: t / 1000,
    cases,
  };
}

/**
 * The requests a run could send whatever the server does: an open run at most its schedule, a
 * closed one without a top. A range holding all of them judges nothing.
 */
export function possibleCounts(c) {
  if (c.kind === 'open') return { requests: { lo: 0, hi: Math.round(c.rate * c.seconds), why: 'k6 sends at most the schedule' } };
  if (c.kind === 'closed') return { requests: { lo: 0, hi: Infinity, why: 'a closed load has no top' } };
  return {};
}

/**
 * A case's relayed answers: the documents that ask to be relayed, answered 2xx (k6's
 * expected_response). An error answered on the relay route (a 503 from an overloaded filter)
 * is counted by the error rate, not taken for an answer that came sooner than the backend.
 */
export const relayedMetric = (c) => `http_req_duration{case:${c.id},route:backend,expected_response:true}`;

/** The requests a ramp's first step must have answered in its hold: 95 % of its rate. */
export const firstStepFloor = (c) => Math.floor(c.steps[0] * c.holdS * CAPACITY.sustain);

/** A case's k6 thresholds: what k6 can judge alone (comparisons between cases are the lab's). */
export function capacityThresholds(c) {
  const e = c.expected;
  const t = {};
  // A ramp's first step is sustained, as every server must (CAPACITY): 95 % of its rate answered
  // in its hold, under 1 % failed, p99 under 1 s. Its own metrics: the ramp's whole count, which
  // counts failed requests too, could not fail while k6 sent.
  if (c.kind === 'ramp') {
    const first = `${c.metric}_${c.steps[0]}`;
    t[`${first}_reqs`] = [`count>=${firstStepFloor(c)}`];
    t[`${first}_failed`] = [`rate<${CAPACITY.errorRate}`];
    t[`${first}_ms`] = [`p(99)<${CAPACITY.p99Ms}`];
    t[`http_reqs{case:${c.id}}`] = [KEEP_ONLY];
  }
  // A range of requests that admits every count the run could send is shown: KEEP_ONLY.
  else if (shownRanges(e, possibleCounts(c)).requests) t[`http_reqs{case:${c.id}}`] = [KEEP_ONLY];
  else t[`http_reqs{case:${c.id}}`] = e.requests.hi === undefined ? [`count>=${e.requests.lo}`] : [`count>=${e.requests.lo}`, `count<=${e.requests.hi}`];
  if (e.p99Ms) t[`http_req_duration{case:${c.id}}`] = [`p(99)<${e.p99Ms.hi}`];
  if (e.errorRate) t[`http_req_failed{case:${c.id}}`] = [`rate<${e.errorRate.hi}`];
  t[relayedMetric(c)] = [`min>=${e.relayMinMs.lo}`];
  return t;
}

/**
 * Capacity plans are not simulated, so what their thresholds catch is read off them: only a
 * backend answering sooner than the relayed-latency floor is a policy change any case sees.
 */
function sensitivity(exp, base) {
  const delay = base.knobs.backend_delay_ms;
  const floor = Math.min(...base.cases.map((c) => c.expected.relayMinMs.lo));
  const knobs = {
    backend_delay_ms: { down: { delta: delay - floor + 1, by: 'relayed min' }, up: null, cases: base.cases.length, why: 'a slower backend slows the references as much as the filters' },
    backend_timeout_ms: { down: null, up: null, cases: 0, why: 'no case makes the backend slower than the timeout' },
    cluster_workers: { down: null, up: null, cases: 0, why: 'no threshold models how cost or throughput scale with workers' },
  };
  return {
    experiment: exp.name, suite: base.suite, factor: base.factor, kind: 'capacity', cases: [], knobs,
    unseen: Object.entries(knobs).filter(([, s]) => s.cases === 0).map(([k]) => k),
    oneSided: Object.entries(knobs).filter(([, s]) => s.cases > 0 && (s.down === null || s.up === null)).map(([k]) => k),
  };
}

/**
 * Per server a short open run at a fixed arrival rate, a closed run with a fixed number of
 * connections (opened first, each in a window of its own), or a ramp of held arrival rates.
 */
function scenarios(plan, baseUrls) {
  const out = {};
  for (const c of plan.cases) {
    const env = { LAB_URL: baseUrls[c.service] + c.path, LAB_CASE: c.id, LAB_RELAYS_ALL: String(c.relaysAll) };
    const common = { exec: 'hit', startTime: `${Math.round(c.startMs)}ms`, gracefulStop: `${c.graceS}s`, tags: { case: c.id }, env };
    if (c.kind === 'closed') {
      // Every VU opens its connection (GET /healthz) in the window before the run.
      out[`${c.id}-connect`] = {
        executor: 'per-vu-iterations', vus: c.vus, iterations: 1, exec: 'warm', startTime: `${Math.round(c.startMs - c.connectS * 1000)}ms`,
        maxDuration: `${c.connectS * 1000 - 500}ms`, gracefulStop: '0s', tags: { case: `${c.id}-connect` }, env: { LAB_WARM_URLS: `${baseUrls[c.service]}/healthz` },
      };
      out[c.id] = { ...common, executor: 'constant-vus', vus: c.vus, duration: `${Math.round(c.durationMs)}ms` };
    } else if (c.kind === 'open') {
      // 500 ms in flight per request, sixteen times the backend's 30 ms: relayed answers take far
      // longer than the delay when another process takes a core (measured:
      // stacks/json-filter/README.md). Each VU opens its connection within the first second,
      // which nothing measures.
      const vus = Math.max(20, Math.ceil(c.rate * 0.5));
      out[c.id] = { ...common, executor: 'ramping-arrival-rate', startRate: c.rate, timeUnit: '1s', preAllocatedVUs: vus, maxVUs: vus, stages: heldRateStages(c.rate, c.rate * c.seconds) };
    } else {
      out[c.id] = {
        ...common,
        executor: 'ramping-arrival-rate',
        startRate: c.steps[0],
        timeUnit: '1s',
        preAllocatedVUs: 300,
        maxVUs: 3000,
        stages: c.steps.flatMap((r) => [{ target: r, duration: `${Math.round(c.rampS * 1000)}ms` }, { target: r, duration: `${Math.round(c.holdS * 1000)}ms` }]),
        env: { ...env, LAB_STEPS: c.steps.join(','), LAB_RAMP_MS: String(c.rampS * 1000), LAB_HOLD_MS: String(c.holdS * 1000) },
      };
    }
    if (c.warmS) out[c.id].env = { ...out[c.id].env, LAB_WARM_MS: String(c.warmS * 1000), LAB_DURATION_MS: String(c.durationMs) };
  }
  return out;
}

export default {
  name: 'capacity',
  plan,
  scenarios,
  thresholds: capacityThresholds,
  possible: possibleCounts,
  caseTargets: (exp, suite, knobs) => exp.cases[suite](knobs, 1).map((c) => [c.target, c.id]),
  sensitivity,
};
