/*
 * Plans for capacity experiments (json-filter): no limiter to replay, so what is expected is
 * what a correct server must do, and how it must compare with the references measured in the
 * same run (nginx relaying everything, and the backend reached directly).
 */
import { shownRanges, KEEP_ONLY, keepNote } from './judged.js';
import { heldRateStages, heldRateSpanMs } from '../held-rate.js';
import { sentBy, sentByK6 } from '../generator.js';

// The stated bounds: below its breakpoint a server answers all but 1 % and its p99 stays under
// 1 s, and k6 gets 95 % of the arrival rate through: every server must at 500 r/s (the ramps'
// first step).
// A closed case and the references beside it take turns in `slices` slices each, of a quarter of
// the case's seconds and `minS` at least (lab/run/wrk.mjs): measured one after the other, a slow
// spell of the machine takes one window and not the other, and the comparison with it. Rate and
// CPU are the slices' steady parts, from `skipS` after a slice starts (once its connections are
// open: the opening is not what the case measures) to `tailS` before it ends. What each choice
// changed: docs/journal/json-filter.md.
export const WRK_SLICES = { slices: 4, minS: 4, skipS: 1.5, tailS: 0.3 };
export const CAPACITY = {
  p99Ms: 1000,
  errorRate: 0.01,
  sustain: 0.95,
  pauseMs: 2000,
  warmS: 1,
  connectS: 3,
  openConnectS: 2,
  inFlightS: 0.5,
  catchUpS: 1,
  wrkThreads: 2,
  wrkTimeoutS: 5,
};

/**
 * An open run's VUs: 500 ms in flight per request (inFlightS), sixteen times the backend's 30 ms:
 * relayed answers take far longer than the delay when another process takes a core (measured:
 * stacks/json-filter/README.md).
 */
const openVus = (rate) => Math.max(20, Math.ceil(rate * CAPACITY.inFlightS));

// The lowest arrival rate of a ramp, which every server must sustain (see the suite's steps).
export const FIRST_STEP = 500;

const metricName = (id) => id.replace(/[^a-zA-Z0-9]/g, '_');

/**
 * Against the references, in the same run: CPU per request (the server's process group, from
 * /proc) as an efficiency, the reference's cost over the server's, at or above a floor: under
 * the seed's closed load (wrk, the server saturated) and at a fixed 2000 r/s; requests per second
 * under the closed load, over the reference's, at or above a floor; and relayed median latency at
 * 500 r/s at most a ceiling above the direct backend's. Floors and ceilings come from the spread
 * measured on this machine kind (the experiment's `measuredSpread`); a comparison whose spread is
 * null is measured beside the case and shown, not judged.
 *
 * Bounds from a measured spread. Efficiency: the measured runs went from `min` to `max`;
 * a server k times as costly as in the best run would score max / k, where k is the slowdown the
 * comparison must catch (`slowdowns`: per comparison a number, or one per server; 2 unless the
 * experiment says otherwise). The floor sits half-way
 * between the two in ratio terms, sqrt(min x max / k), so the worst run passes and a k-fold
 * slowdown of the best fails with the same relative room. That needs max < k x min: refused
 * otherwise.
 * Latency overhead (ms over the direct backend): the worst run measured `max`; a server adding
 * `perturbMs` per request would score at least min + perturbMs. The ceiling is half-way.
 */
export function comparisonBounds(spread, perturbMs, slowdowns = {}) {
  // Throughput at the seed's closed load, as a ratio to a reference, takes floors the same way:
  // a server that halves its throughput halves the ratio.
  const floorsOf = (ratios, what, slowdown = 2) => {
    const out = {};
    for (const [server, refs] of Object.entries(ratios)) {
      const k = typeof slowdown === 'number' ? slowdown : (slowdown[server] ?? 2);
      out[server] = {};
      for (const [ref, spreadOf] of Object.entries(refs)) {
        if (spreadOf === null) {
          out[server][ref] = null; // measured beside, shown
          continue;
        }
        const [min, max] = spreadOf;
        if (!(max < k * min))
          throw new Error(
            `json-filter ${server}/${ref}: measured ${what} ${min}..${max} spans ${k}x; no floor can tell a ${k}x slowdown`,
          );
        out[server][ref] = Math.round(Math.sqrt((min * max) / k) * 1000) / 1000;
      }
    }
    return out;
  };
  const floors = floorsOf(spread.efficiency, 'efficiency', slowdowns.efficiency);
  const throughputFloors = floorsOf(spread.throughput || {}, 'throughput', slowdowns.throughput);
  const closedFloors = floorsOf(
    spread.closedEfficiency || {},
    'efficiency under the closed load',
    slowdowns.closedEfficiency,
  );
  const ceilings = {};
  for (const [server, [min, max]] of Object.entries(spread.overheadMs)) {
    if (!(min + perturbMs > max))
      throw new Error(`json-filter ${server}: measured overhead ${min}..${max} ms hides a ${perturbMs} ms slowdown`);
    ceilings[server] = Math.round(((max + min + perturbMs) / 2) * 10) / 10;
  }
  return { floors, ceilings, throughputFloors, closedFloors };
}

/** The comparisons' bounds of an experiment, and per reference its lower bound as {lo}. */
const boundsOf = (exp) => comparisonBounds(exp.measuredSpread, exp.perturbMs, exp.slowdowns);
// Bounds per reference ({ref: {lo}}, lo null where shown), for a case's expected values.
const lows = (byRef) => Object.fromEntries(Object.entries(byRef || {}).map(([ref, lo]) => [ref, { lo }]));

/**
 * The suite's cases in the targets' order, each followed by the same load on each reference it
 * is judged against (`beside`, in its phase).
 * One phase per server (a stack and a k6 process of its own, lab/kinds/capacity.mjs): a slowed
 * server's queue dies with its stack, and cannot take the next server's CPU or k6's time. Its
 * cases run one after another from the phase's lead-in, in the order the suite lists them,
 * each judged against references followed right after it by the same load on each reference,
 * in the same phase: measured minutes apart in phases of their own, a reference's CPU per
 * request moves with the machine's slow spells and takes the comparisons with it (the recorded
 * runs: docs/runs/, stacks/json-filter/README.md).
 */
function caseSpecs(exp, suite, knobs, factor, targets, { floors, ceilings, throughputFloors, closedFloors }) {
  const refsOf = (c) =>
    Object.keys(
      {
        latency: ceilings[c.target] !== undefined ? { direct: true } : {},
        cost: floors[c.target],
        throughput: { ...throughputFloors[c.target], ...closedFloors[c.target] },
      }[c.judge] || {},
    );
  const all = exp.cases[suite](knobs, factor);
  const specs = targets
    .flatMap((x) => all.filter((c) => c.target === x.id))
    .flatMap((judged) => {
      const refs = refsOf(judged);
      const alongside = SENT_ALONGSIDE.has(judged.judge) && refs.length > 0;
      const c = alongside ? { ...judged, ...sharedLoad(judged, refs.length) } : judged;
      return [
        { ...c, phase: c.target },
        // `compared`: what the case beside it compares (a cost reference is counted as a cost case is).
        ...refs.map((ref) => ({
          ...c,
          id: besideId(c, ref),
          target: ref,
          judge: undefined,
          compared: c.judge,
          phase: c.target,
          beside: c.id,
          ...(alongside ? { alongside: true } : {}),
        })),
      ];
    });
  return specs;
}

/**
 * The comparisons whose references are sent at the same time as the case, each by a scenario of
 * its own, rather than right after it: the relayed median over the direct backend's. One after
 * the other, a slow spell of the machine (time stolen by the host) took one window and not the
 * other, and moved the difference past the ceilings in a fresh-clone CI run; sent together, both
 * medians meet the same spell (measured: docs/journal/json-filter.md, "The base case and the
 * direct backend sent together"). CPU per request stays one after the other: the backend's CPU
 * would hold the case's relayed requests.
 */
const SENT_ALONGSIDE = new Set(['latency']);

/**
 * A case sent alongside `refs` references shares its rate with them, over as many times its
 * seconds: the machine carries the case's rate, as it did alone, and each gets the case's
 * requests (a median of fewer moved with a transient: stacks/json-filter/README.md).
 */
const sharedLoad = (c, refs) => ({ rate: c.rate / (refs + 1), seconds: c.seconds * (refs + 1) });

/**
 * A case k6 sends, from `startMs` (its connections opened before it): its service, path, length and
 * expected figures.
 */
function k6Case({ exp, c, startMs, connectS, target, policy, bounds }) {
  const { floors, ceilings } = bounds;
  const durationMs = c.kind === 'ramp' ? c.steps.length * (c.rampS + c.holdS) * 1000 : c.seconds * 1000;
  const seed = exp.seedFigures[c.beside ?? c.id];
  const against = againstRefs(c);
  return {
    ...c,
    ...(c.kind === 'open' ? { vus: openVus(c.rate) } : {}),
    name: `${exp.name}/${c.id}`,
    service: target.service,
    path: `${target.path}/${c.id}`, // the backend counts what it receives per path, so per case
    startMs,
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
      ...(c.kind === 'open'
        ? {
            requests: { lo: Math.floor(c.rate * c.seconds * CAPACITY.sustain), hi: Math.round(c.rate * c.seconds) },
            errorRate: { hi: CAPACITY.errorRate },
            p99Ms: { hi: CAPACITY.p99Ms },
            overheadMs: against(
              'latency',
              ceilings[c.target] !== undefined ? { direct: { hi: ceilings[c.target] } } : null,
            ),
            efficiency: against('cost', lows(floors[c.target])),
          }
        : {}),
      ...(c.kind === 'closed'
        ? {
            errorRate: { hi: CAPACITY.errorRate },
            // What k6 alone can judge: the server carried at least the ramp's first step.
            requests: { lo: Math.round(FIRST_STEP * c.seconds) },
          }
        : {}),
    },
    connectS,
    // Throughput and CPU are counted over the steady part of a run: after its first second
    // (an open run's first connections; a closed run's settling), and only requests that
    // ended within the run.
    warmS: c.kind === 'closed' || (c.judge ?? c.compared) === 'cost' ? Math.min(CAPACITY.warmS, c.seconds / 4) : 0,
    graceS: c.kind === 'open' ? 1 : Math.ceil(policy.backend_timeout_ms / 1000) + 2,
    ...(c.kind === 'open' ? { catchUpS: CAPACITY.catchUpS } : {}),
  };
}

/** Throws unless every case is judged against references measured beside it, in its own phase. */
function checkReferences(exp, cases) {
  for (const c of cases) {
    for (const ref of [c.expected.overheadMs, c.expected.efficiency, c.expected.throughput].flatMap((x) =>
      Object.values(x || {}),
    )) {
      const r = cases.find((x) => x.id === ref.case);
      if (!r || r.phase !== c.phase)
        throw new Error(`${exp.name} ${c.id}: reference case ${ref.case} is not in its phase`);
    }
  }
}

/**
 * The cases on their timelines, one per phase (server): k6's first, each after its connect
 * window and followed by its grace period (and a pause where the next must not meet its
 * stragglers), then wrk's. Returns {cases, phaseMs (each phase's length)}.
 */
function timedCases({ exp, specs, targets, bounds, policy, leadInMs }) {
  const { throughputFloors, closedFloors } = bounds;
  let t = leadInMs;
  let caseStartMs = t;
  const phaseMs = {};
  // The cases wrk sends (the seed's closed load, by the seed's load generator) run after k6's,
  // on a server they warmed, one after another: each after a pause for what came before (a
  // ramp's stragglers) to settle, and followed by the backend's timeout and a second, after
  // which the backend has had every request in flight when wrk stopped.
  const settleMs = policy.backend_timeout_ms + 1000;
  const cases = specs.map((c, i) => {
    const target = targets.find((x) => x.id === c.target);
    if (!sentByK6(c)) {
      const against = againstRefs(c);
      return wrkCase({
        exp,
        c,
        target,
        settleMs,
        throughput: against('throughput', lows(throughputFloors[c.target])),
        efficiency: against('throughput', lows(closedFloors[c.target])),
      });
    }
    if (!(c.phase in phaseMs)) t = leadInMs;
    // A run's connections are opened first, in a window of their own (real time, not
    // compressed): a closed run's all at once, as the seed's wrk did; an open run's one per VU,
    // which k6 would otherwise open in the run's first half second (it hands arrivals to its VUs
    // in turn, every one of them). Neither surge is what the run measures, and it disturbs
    // whatever runs then: on a slow machine the connects take k6's VUs from the schedule, and
    // k6 drops arrivals.
    const connectS = { closed: CAPACITY.connectS, open: CAPACITY.openConnectS }[c.kind] ?? 0;
    // A reference sent alongside starts with its case, in the same connect window, and is as long.
    if (c.alongside) return k6Case({ exp, c, startMs: caseStartMs, connectS, target, policy, bounds });
    t += connectS * 1000;
    const out = k6Case({ exp, c, startMs: t, connectS, target, policy, bounds });
    caseStartMs = t;
    // An open run below the breakpoint leaves nothing queued: the next starts once its catch-up
    // and grace period are over, so that a slow spell's stragglers (a server's queue, k6's VUs
    // still busy) end within the case that had them and never in the next server's, where they
    // would be counted as its losses (docs/journal/json-filter.md, "Open cases wait out their
    // grace period"), and so that k6, which keeps a case's VUs until then, never holds two cases'
    // at once: it starts every VU it could need at the same time, and a second case's VUs doubled
    // what it started and what its collector marks (docs/journal/json-filter.md, "k6's
    // collector"). Any other change of kind, and every saturating run, is followed by a pause.
    const next = specs.slice(i + 1).find((x) => sentByK6(x) && !x.alongside);
    const settled = c.kind === 'open' && (next?.phase !== c.phase || next.kind === 'open');
    const stagesMs =
      c.kind === 'open' ? Math.ceil(heldRateSpanMs(c.rate, c.rate * c.seconds, out.catchUpS * 1000)) : out.durationMs;
    const heldMs = stagesMs + out.graceS * 1000;
    phaseMs[c.phase] = t + heldMs;
    t += heldMs + (settled ? 0 : CAPACITY.pauseMs);
    return out;
  });
  for (const c of cases.filter(sentBy('wrk'))) phaseMs[c.phase] += c.pauseMs + c.durationMs + c.settleMs;
  return { cases, phaseMs };
}

function plan({ exp, suite, factor, requested, knobs, policy, leadInMs }) {
  const targets = exp.targets(policy);
  const bounds = boundsOf(exp);
  const { floors, ceilings, closedFloors } = bounds;
  const specs = caseSpecs(exp, suite, knobs, factor, targets, bounds);
  const { cases, phaseMs } = timedCases({ exp, specs, targets, bounds, policy, leadInMs });
  checkReferences(exp, cases);
  return {
    experiment: exp.name,
    kind: 'capacity',
    suite,
    factor,
    requestedFactor: requested,
    knobs,
    policy,
    model: {
      capacity: CAPACITY,
      floors,
      ceilings,
      closedFloors,
      measuredSpread: exp.measuredSpread,
      perturbMs: exp.perturbMs,
    },
    leadInMs,
    relayPercent: knobs.relay_percent,
    // The backend counts what reached it per path; k6's setup() and teardown() read it, and
    // the wrk stage before and after each of its cases.
    accounting: { service: 'json-filter-backend', path: '/stats' },
    // The document every request sends, relative to k6/ (an exported script carries it as `sample`).
    sampleBody: exp.sampleBody,
    // What wrk posts (lab/run/wrk.mjs): the experiment's document, every one asking to be relayed.
    wrk: { script: exp.wrkScript, body: `k6/${exp.sampleBody}`, set: { relay: true } },
    // Per phase (server) its length; the whole run's is their sum.
    phaseS: Object.fromEntries(Object.entries(phaseMs).map(([id, ms]) => [id, ms / 1000])),
    durationS: Object.values(phaseMs).reduce((a, ms) => a + ms, 0) / 1000,
    cases,
  };
}

/** The same load on a reference, right after a case: node-cost's on nginx is nginx-cost-beside-node. */
const besideId = (c, ref) => `${ref}-${c.id.slice(c.target.length + 1)}-beside-${c.target}`;

/** Compared with the same load on each reference, beside it: `judge` names the comparison. */
const againstRefs = (c) => (judge, bounds) =>
  c.judge === judge && bounds && Object.keys(bounds).length
    ? Object.fromEntries(Object.entries(bounds).map(([ref, b]) => [ref, { case: besideId(c, ref), ...b }]))
    : undefined;

/**
 * A closed case wrk sends, as the seed measured (wrk -c 2500 -d 20; -t 2 on two cores): its
 * errors, what the backend received, and against each reference's same load in the same run
 * (`judge: 'throughput'`) its throughput and its efficiency (their CPU per request over its
 * own), each at or above a floor from the measured spread.
 */
function wrkCase({ exp, c, target, settleMs, throughput, efficiency }) {
  const sliceS = Math.max(WRK_SLICES.minS, Math.round(c.seconds / WRK_SLICES.slices));
  return {
    ...c,
    name: `${exp.name}/${c.id}`,
    service: target.service,
    path: `${target.path}/${c.id}`,
    metric: metricName(c.id),
    seed: exp.seedFigures[c.beside ?? c.id] || null,
    threads: CAPACITY.wrkThreads,
    timeoutS: CAPACITY.wrkTimeoutS,
    // A reference beside the case takes turns with it (lab/run/wrk.mjs): the group's pause and
    // settling are the case's.
    slices: WRK_SLICES.slices,
    sliceS,
    steady: { fromS: WRK_SLICES.skipS, toS: sliceS - WRK_SLICES.tailS },
    pauseMs: c.beside ? 0 : CAPACITY.pauseMs,
    settleMs: c.beside ? 0 : settleMs,
    durationMs: WRK_SLICES.slices * sliceS * 1000,
    // Its p99 is shown, not judged: in a closed loop the mean is connections / rate (Little's
    // law), and at 2500 connections the backend alone, at 33 k r/s and a 75 ms mean, had a 2 s p99
    // (measured: stacks/json-filter/README.md): the tail is how evenly wrk and the server serve
    // 2500 sockets, not what a filter adds.
    expected: {
      errorRate: { hi: CAPACITY.errorRate },
      throughput,
      efficiency,
      backend: {
        slack: 'the requests in flight when wrk stopped (one per connection) and its non-2xx answers, each counted',
      },
    },
  };
}

/** The phases of a plan, in the order they run: one per server, with its references' cases. */
export const phaseIds = (whole) => [...new Set(whole.cases.map((c) => c.phase))];

/**
 * The part of a plan one k6 process runs: one server's cases and its references', the runner's
 * phase or SERVER with k6 alone (the first server by default).
 */
export function k6Plan(whole, env) {
  const ids = phaseIds(whole);
  const wanted = env.SERVER || env.PHASE || whole.phase || ids[0];
  if (!ids.includes(wanted)) throw new Error(`SERVER=${wanted}: no such server in this plan; it has ${ids.join(', ')}`);
  return {
    ...whole,
    phase: wanted,
    cases: whole.cases.filter((c) => c.phase === wanted),
    durationS: whole.phaseS[wanted],
  };
}

/**
 * The requests a run could send whatever the server does: an open run at most its schedule, a
 * closed one without a top. A range holding all of them judges nothing.
 */
export function possibleCounts(c) {
  if (!sentByK6(c)) return {};
  if (c.kind === 'open')
    return { requests: { lo: 0, hi: Math.round(c.rate * c.seconds), why: 'k6 sends at most the schedule' } };
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
  // wrk sends it: the lab judges it from wrk's report (lab/run/wrk.mjs); k6 has nothing of it.
  if (!sentByK6(c)) return t;
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
  else
    t[`http_reqs{case:${c.id}}`] =
      e.requests.hi === undefined
        ? [`count>=${e.requests.lo}`]
        : [`count>=${e.requests.lo}`, `count<=${e.requests.hi}`];
  if (e.p99Ms) t[`http_req_duration{case:${c.id}}`] = [`p(99)<${e.p99Ms.hi}`];
  if (e.errorRate) t[`http_req_failed{case:${c.id}}`] = [`rate<${e.errorRate.hi}`];
  t[relayedMetric(c)] = [`min>=${e.relayMinMs.lo}`];
  return t;
}

/** Per threshold of capacityThresholds, the figure and the rule it came from (CAPACITY). */
export function capacityNotes(c) {
  const e = c.expected;
  if (!sentByK6(c)) return {};
  const notes = {};
  if (c.kind === 'ramp') {
    const first = `${c.metric}_${c.steps[0]}`;
    notes[`${first}_reqs`] =
      `the first step, ${c.steps[0]} r/s, answered in its ${c.holdS} s hold: at least CAPACITY.sustain ${CAPACITY.sustain * 100} % of its arrivals`;
    notes[`${first}_failed`] = `the first step's failed share: under CAPACITY.errorRate ${CAPACITY.errorRate}`;
    notes[`${first}_ms`] = `the first step's p99 (ms): under CAPACITY.p99Ms ${CAPACITY.p99Ms}`;
    notes[`http_reqs{case:${c.id}}`] = keepNote(
      'requests',
      "the ramp's whole count holds failed requests too; its first step is judged instead",
    );
  } else {
    const shown = shownRanges(e, possibleCounts(c)).requests;
    notes[`http_reqs{case:${c.id}}`] = shown
      ? keepNote('requests', shown)
      : `requests: ${c.kind === 'open' ? `the schedule's ${Math.round(c.rate * c.seconds)}, at least CAPACITY.sustain ${CAPACITY.sustain * 100} % answered` : `at least ${FIRST_STEP} r/s over the run`}: ${e.requests.lo}..${e.requests.hi ?? ''}`;
  }
  if (e.p99Ms) notes[`http_req_duration{case:${c.id}}`] = `p99 (ms): under CAPACITY.p99Ms ${CAPACITY.p99Ms}`;
  if (e.errorRate)
    notes[`http_req_failed{case:${c.id}}`] = `failed share: under CAPACITY.errorRate ${CAPACITY.errorRate}`;
  notes[relayedMetric(c)] =
    `a relayed answer comes no sooner than the backend's delay, less 1 ms: at least ${e.relayMinMs.lo} ms`;
  return notes;
}

/**
 * Capacity plans are not simulated, so what their thresholds catch is read off them: only a
 * backend answering sooner than the relayed-latency floor is a policy change any case sees.
 */
function sensitivity(exp, base) {
  const delay = base.knobs.backend_delay_ms;
  // k6's cases judge the relayed latency floor; wrk reports no minimum.
  const floored = base.cases.filter((c) => c.expected.relayMinMs);
  const floor = Math.min(...floored.map((c) => c.expected.relayMinMs.lo));
  const knobs = {
    backend_delay_ms: {
      down: { delta: delay - floor + 1, by: 'relayed min' },
      up: null,
      cases: floored.length,
      why: 'a slower backend slows the references as much as the filters',
    },
    backend_timeout_ms: { down: null, up: null, cases: 0, why: 'no case makes the backend slower than the timeout' },
    cluster_workers: {
      down: null,
      up: null,
      cases: 0,
      why: 'no threshold models how cost or throughput scale with workers',
    },
  };
  return {
    experiment: exp.name,
    suite: base.suite,
    factor: base.factor,
    kind: 'capacity',
    cases: [],
    knobs,
    unseen: Object.entries(knobs)
      .filter(([, s]) => s.cases === 0)
      .map(([k]) => k),
    oneSided: Object.entries(knobs)
      .filter(([, s]) => s.cases > 0 && (s.down === null || s.up === null))
      .map(([k]) => k),
  };
}

/**
 * Per server a short open run at a fixed arrival rate, a closed run with a fixed number of
 * connections (opened first, each in a window of its own), or a ramp of held arrival rates.
 */
function scenarios(plan) {
  const out = {};
  for (const c of plan.cases.filter(sentByK6)) {
    const common = {
      exec: 'hit',
      startTime: `${Math.round(c.startMs)}ms`,
      gracefulStop: `${c.graceS}s`,
      tags: { case: c.id },
    };
    if (c.connectS) {
      // Every VU opens its connection (GET /healthz) in the window before the run.
      out[`${c.id}-connect`] = {
        executor: 'per-vu-iterations',
        vus: c.vus,
        iterations: 1,
        exec: 'warm',
        startTime: `${Math.round(c.startMs - c.connectS * 1000)}ms`,
        maxDuration: `${c.connectS * 1000 - 500}ms`,
        gracefulStop: '0s',
        tags: { case: `${c.id}-connect` },
      };
    }
    if (c.kind === 'closed') {
      out[c.id] = { ...common, executor: 'constant-vus', vus: c.vus, duration: `${Math.round(c.durationMs)}ms` };
    } else if (c.kind === 'open') {
      out[c.id] = {
        ...common,
        executor: 'ramping-arrival-rate',
        startRate: c.rate,
        timeUnit: '1s',
        preAllocatedVUs: c.vus,
        maxVUs: c.vus,
        stages: heldRateStages(c.rate, c.rate * c.seconds, c.catchUpS * 1000),
      };
    } else {
      out[c.id] = {
        ...common,
        executor: 'ramping-arrival-rate',
        startRate: c.steps[0],
        timeUnit: '1s',
        preAllocatedVUs: 300,
        maxVUs: 3000,
        stages: c.steps.flatMap((r) => [
          { target: r, duration: `${Math.round(c.rampS * 1000)}ms` },
          { target: r, duration: `${Math.round(c.holdS * 1000)}ms` },
        ]),
      };
    }
  }
  return out;
}

export default {
  name: 'capacity',
  plan,
  scenarios,
  thresholds: capacityThresholds,
  notes: capacityNotes,
  phaseIds,
  k6Plan,
  possible: possibleCounts,
  caseTargets: (exp, suite, knobs) => exp.cases[suite](knobs, 1).map((c) => [c.target, c.id]),
  sensitivity,
};
