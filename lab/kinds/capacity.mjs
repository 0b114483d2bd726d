/*
 * Judging a capacity plan (json-filter) from k6's summary and the services' CPU samples: each
 * ramp's breakpoint, each run's errors and throughput, each server's cost against the references
 * of the same run, and per case the relayed latency floor and what the backend received.
 */
import {
  CAPACITY,
  capacityThresholds,
  possibleCounts,
  firstStepFloor,
  relayedMetric,
  phaseIds,
  k6Plan,
} from '../../thresholds/kinds/capacity.js';
import { sentByK6 } from '../../thresholds/generator.js';
import { shownRanges } from '../../thresholds/kinds/judged.js';
import { cpuBetween } from '../stack/cpu.mjs';
import { fixed, pct, caseRows } from '../judge/table.mjs';
import { outcome, figure, summaryValue, judgedFigures } from '../judge/outcome.mjs';

/** Per-step figures of a ramp from k6's summary: achieved rate, p99, error share, sustained? */
export function rampSteps(c, metrics) {
  return c.steps.map((rate) => {
    const m = (k) => metrics[`${c.metric}_${rate}_${k}`]?.values;
    const reqs = m('reqs')?.count ?? 0;
    const failed = m('failed')?.passes ?? 0; // a k6 Rate counts its true samples as passes
    // k6 reports a trend with no samples as zeros: no requests, no latency.
    const p99 = reqs ? (m('ms')?.['p(99)'] ?? null) : null;
    const relayP50 = reqs ? (m('relay_ms')?.med ?? null) : null;
    const achieved = reqs / c.holdS;
    const errorRate = reqs ? failed / reqs : 1;
    const sustained =
      reqs > 0 &&
      achieved >= CAPACITY.sustain * rate &&
      errorRate < CAPACITY.errorRate &&
      p99 !== null &&
      p99 < CAPACITY.p99Ms;
    return {
      rate,
      reqs,
      achieved: Math.round(achieved),
      delivered: Math.round((reqs - failed) / c.holdS),
      p99,
      relayP50,
      errorRate,
      sustained,
    };
  });
}

/** The breakpoint: the highest step sustained with every step below it sustained too. */
export function breakpoint(steps) {
  let best = 0;
  for (const s of steps) {
    if (!s.sustained) break;
    best = s.rate;
  }
  return best;
}

/** The steady part of a run: its requests, and its window relative to the scenarios' start. */
export function steadyWindow(c, metrics) {
  const n = metrics[`${c.metric}_steady_reqs`]?.values?.count;
  return { requests: n ?? null, fromMs: c.startMs + c.warmS * 1000, toMs: c.startMs + c.durationMs };
}

/**
 * Steady closed-run throughput (r/s) from k6's summary: shown, not judged. With k6 on the same
 * two cores it is mostly k6's, and it varied between runs for the same server (measured:
 * docs/json-filter.md).
 */
export function steadyRps(c, metrics) {
  const w = steadyWindow(c, metrics);
  return w.requests === null ? null : (w.requests * 1000) / (w.toMs - w.fromMs);
}

/**
 * What the backend must have received for a case, from k6's own counts: exactly the documents
 * the rule relays. At least every relay-route request answered 204, at most that plus the ones
 * whose fate k6 cannot know, each counted: no answer seen (timed out, cut off at the end of a
 * scenario), or a 502/504 answer (the filter tried the backend and says so).
 */
export function backendBounds(c, metrics) {
  const n = (k) => metrics[`${c.metric}_${k}`]?.values?.count ?? 0;
  const ok = n('relay_ok');
  const unknown = n('relay_sent') - n('relay_answered') + n('relay_gateway_error');
  return {
    lo: ok,
    hi: ok + unknown,
    unknown,
    received: metrics[`${c.metric}_backend_received`]?.values?.count ?? null,
  };
}

/**
 * A closed case wrk sent (lab/run/wrk.mjs), from wrk's report: its rate and CPU per request
 * (the service's CPU over the requests), errors (non-2xx answers and socket errors over
 * requests), p99, and what the backend must have received: every 2xx (each document asked to be
 * relayed), at most that plus the non-2xx answers and one request in flight per connection each
 * time wrk stopped. The rate and CPU per request are the steady parts' of its slices where they
 * were measured (requests: what the backend received in them; every document is relayed), else
 * wrk's whole window's (a run recorded before slices).
 */
export function wrkFigures(c, w, cpuSeries) {
  if (!w)
    return {
      rps: null,
      errorRate: null,
      p99Ms: null,
      costUs: null,
      backend: { lo: 0, hi: 0, unknown: 0, received: null },
    };
  const errors = w.non2xx + w.socketErrors;
  const cpuOver = (windows) => {
    const parts = windows.map(([from, to]) => cpuBetween(cpuSeries, from, to));
    return parts.includes(null) ? null : parts.reduce((a, b) => a + b, 0);
  };
  const slices = w.slices ?? [w]; // a run recorded before slices: its one window
  const steady = slices.every((x) => x.steady) ? slices.map((x) => x.steady) : null;
  const seconds = (parts) => parts.reduce((a, x) => a + (x.toMs - x.fromMs) / 1000, 0);
  const windows = (parts) => parts.map((x) => [x.fromMs, x.toMs]);
  const received = steady && steady.reduce((a, x) => a + x.received, 0);
  const steadyS = steady && seconds(steady);
  const [rps, cpuS, counted] = steady
    ? [steadyS > 0 ? received / steadyS : null, cpuOver(windows(steady)), received]
    : [w.rps, cpuOver(windows(slices)), w.requests];
  const ok = w.requests - w.non2xx;
  const stops = slices.length;
  return {
    rps,
    wrkRps: w.rps,
    requests: w.requests,
    errorRate: w.requests ? errors / w.requests : 1,
    p99Ms: w.latencyMs?.['99'] ?? null,
    costUs: cpuS === null || !counted ? null : (cpuS * 1e6) / counted,
    // One request in flight per connection each time wrk stopped: once per slice.
    backend: {
      lo: ok,
      hi: ok + w.non2xx + c.vus * stops,
      unknown: w.non2xx + c.vus * stops,
      received: w.backendReceived ?? null,
    },
  };
}

/**
 * judge(plan, {summary, cpu, wrk}): `cpu` is {service: [[epochMs, cpuS], ...]} from the run's
 * sampler; k6's setup() returned the epoch time at which the scenarios' clock starts. Per ramp
 * the breakpoint and its first step, held in full; per closed or open run the error share and
 * throughput; per server its cost against the references (CPU per request at the fixed cost
 * rate, relayed median latency at the first step over the direct backend's); per case the
 * relayed latency floor and what the backend received against what the case relayed; `wrk`:
 * the wrk stage's figures by case id, for the cases wrk sent (wrkFigures).
 */
/** What every case's judge reads: k6's summary, the CPU samples, wrk's reports, and the references beside it. */
function judgeContext(plan, { summary, cpu = {}, wrk = null }) {
  const metrics = summary?.metrics || {};
  const t0 = summary?.setup_data?.t0;
  // Microseconds of the service's CPU per request over a case's steady window.
  const costUs = (c) => {
    const w = steadyWindow(c, metrics);
    const s = t0 === undefined || !w.requests ? null : cpuBetween(cpu[c.service], t0 + w.fromMs, t0 + w.toMs);
    return s === null ? null : (s * 1e6) / w.requests;
  };
  const v = (name, stat, dflt = null) => summaryValue(summary, name, stat, dflt);
  const byId = Object.fromEntries(plan.cases.map((c) => [c.id, c]));
  // Runs made before relayedMetric kept every answer on the relay route, errors too.
  const relayed = (c, stat) => v(relayedMetric(c), stat) ?? v(`http_req_duration{case:${c.id},route:backend}`, stat);
  const relayP50 = (c) => relayed(c, 'med');
  // A reference's figures, measured beside the case in the same phase.
  const reference = (id, own) => (byId[id] ? own(byId[id]) : null);
  // A case wrk sent: its figures, worked out once (a reference's are read by every case beside it).
  const wrkSeen = new Map();
  const wrkOf = (x) => {
    if (!wrkSeen.has(x.id)) wrkSeen.set(x.id, wrkFigures(x, wrk?.[x.id], cpu[x.service]));
    return wrkSeen.get(x.id);
  };
  return { plan, summary, cpu, metrics, v, costUs, relayed, relayP50, reference, wrkOf };
}

/** A case wrk sent: its errors, p99 and throughput, against the references' beside it. */
function judgeWrkCase(c, { reference, wrkOf }, checks, row) {
  const e = c.expected;
  const measured = { ...wrkOf(c) };
  checks.errors = measured.errorRate !== null && measured.errorRate < e.errorRate.hi;
  row(
    'wrk: errors',
    `< ${pct(e.errorRate.hi)}`,
    measured.errorRate === null ? '-' : `${pct(measured.errorRate)} of ${measured.requests}`,
    checks.errors,
  );
  // Shown (thresholds/kinds/capacity.js says why), beside the mean a closed loop must have.
  row(
    'wrk: p99',
    '(measured)',
    `${fixed(measured.p99Ms)} ms (mean ${fixed(measured.rps ? (c.vus * 1000) / measured.rps : null)} ms = connections / rate)`,
    null,
  );
  row(
    'wrk: throughput',
    '(measured)',
    `${fixed(measured.rps, 0)} r/s${measured.rps === measured.wrkRps ? '' : ` steady (wrk: ${fixed(measured.wrkRps, 0)})`}, ${fixed(measured.costUs)} us CPU/req`,
    null,
    c.seed ? `${c.seed.krps} k r/s (i3)` : '-',
  );
  for (const [ref, bound] of Object.entries(e.throughput || {})) {
    const theirs = reference(bound.case, (x) => wrkOf(x).rps);
    const ratio = measured.rps && theirs ? measured.rps / theirs : null;
    measured.throughputRatio = { ...measured.throughputRatio, [ref]: ratio };
    checks[`throughput_${ref}`] = ratio !== null && ratio >= bound.lo;
    row(
      `r/s: its / ${ref}'s`,
      `>= ${bound.lo.toFixed(2)}`,
      ratio === null ? '-' : `${ratio.toFixed(2)} (${fixed(theirs, 0)} r/s)`,
      checks[`throughput_${ref}`],
    );
  }
  efficiencyRows(e.efficiency, measured, (id) => reference(id, (x) => wrkOf(x).costUs), checks, row);
  const b = measured.backend;
  checks.backend = b.received !== null && b.received >= b.lo && b.received <= b.hi;
  row('backend received', `${b.lo}..${b.hi}`, b.received ?? '-', checks.backend);
  return measured;
}

/** A ramp: its first step sustained (as k6 judges it), and where the server stopped keeping up. */
function judgeRamp(c, { metrics }, measured, checks, row) {
  measured.steps = rampSteps(c, metrics);
  measured.breakpoint = breakpoint(measured.steps);
  const top = measured.steps.find((s) => s.rate === measured.breakpoint);
  // Its first step is sustained, as every server's must be (k6 judges the same: capacityThresholds).
  const first = measured.steps[0];
  measured.firstStep = {
    reqs: first.reqs,
    errorRate: first.errorRate,
    p99Ms: first.p99,
    delivered: first.delivered,
    floor: firstStepFloor(c),
  };
  checks.firstReqs = first.reqs >= firstStepFloor(c);
  checks.firstErrors = first.reqs > 0 && first.errorRate < CAPACITY.errorRate;
  checks.firstP99 = first.p99 !== null && first.p99 < CAPACITY.p99Ms;
  row(
    `${first.rate} r/s step: answered`,
    `>= ${firstStepFloor(c)}`,
    `${first.reqs} (${first.delivered} r/s delivered)`,
    checks.firstReqs,
  );
  row(`${first.rate} r/s step: errors`, `< ${pct(CAPACITY.errorRate)}`, pct(first.errorRate), checks.firstErrors);
  row(`${first.rate} r/s step: p99`, `< ${CAPACITY.p99Ms} ms`, `${fixed(first.p99)} ms`, checks.firstP99);
  row('breakpoint', '(measured)', `${measured.breakpoint} r/s${top ? ` (p99 ${fixed(top.p99, 0)} ms)` : ''}`, null);
}

/** An open or closed run k6 sent: errors, requests or throughput, p99, and the comparisons with the references. */
function judgeRun(c, { v, metrics, costUs, relayP50, reference }, measured, checks, row) {
  const e = c.expected;
  measured.requests = v(`http_reqs{case:${c.id}}`, 'count', 0);
  measured.errorRate = v(`http_req_failed{case:${c.id}}`, 'rate');
  checks.errors = measured.errorRate !== null && measured.errorRate < e.errorRate.hi;
  // A range of requests that admits every count the run could send is shown (null), not judged.
  checks.requests = shownRanges(e, possibleCounts(c)).requests
    ? null
    : measured.requests >= e.requests.lo && measured.requests <= (e.requests.hi ?? Infinity);
  row('errors', `< ${pct(e.errorRate.hi)}`, measured.errorRate === null ? '-' : pct(measured.errorRate), checks.errors);
  if (c.kind === 'closed') {
    measured.rps = steadyRps(c, metrics);
    measured.costUs = costUs(c);
    const floor = Math.round(e.requests.lo / (c.durationMs / 1000));
    row(
      'throughput',
      `>= ${floor} r/s`,
      `${fixed(measured.rps, 0)} r/s, ${fixed(measured.costUs)} us CPU/req`,
      checks.requests,
      c.seed ? `${c.seed.krps} k r/s (i3)` : '-',
    );
  } else {
    row('requests', `${e.requests.lo}..${e.requests.hi}`, `${measured.requests}`, checks.requests);
    measured.p99Ms = v(`http_req_duration{case:${c.id}}`, 'p(99)');
    checks.p99 = measured.p99Ms !== null && measured.p99Ms < e.p99Ms.hi;
    row('p99', `< ${e.p99Ms.hi} ms`, `${fixed(measured.p99Ms)} ms`, checks.p99);
    if ((c.judge ?? c.compared) === 'cost') {
      measured.costUs = costUs(c);
      row('CPU per request', '(measured)', `${fixed(measured.costUs)} us`, null);
    }
    efficiencyRows(e.efficiency, measured, (id) => reference(id, costUs), checks, row);
    for (const [ref, b] of Object.entries(e.overheadMs || {})) {
      const mine = relayP50(c);
      const theirs = reference(b.case, relayP50);
      const over = mine === null || theirs === null ? null : mine - theirs;
      measured.overheadMs = { ...measured.overheadMs, [ref]: over };
      checks[`overhead_${ref}`] = over !== null && over <= b.hi;
      row(
        `relayed p50 - ${ref}'s`,
        `<= ${b.hi} ms`,
        over === null ? '-' : `${fixed(over, 2)} ms (${fixed(mine)} - ${fixed(theirs)})`,
        checks[`overhead_${ref}`],
      );
    }
  }
}

/** A case k6 sent: its kind's figures, then the relayed minimum and the backend's own count. */
function judgeK6Case(c, ctx, checks, row) {
  const e = c.expected;
  const measured = { relayMinMs: ctx.relayed(c, 'min'), backend: backendBounds(c, ctx.metrics) };
  if (c.kind === 'ramp') judgeRamp(c, ctx, measured, checks, row);
  else judgeRun(c, ctx, measured, checks, row);
  checks.relayMin = measured.relayMinMs !== null && measured.relayMinMs >= e.relayMinMs.lo;
  row(
    'relayed min',
    `>= ${e.relayMinMs.lo} ms`,
    measured.relayMinMs === null ? '-' : `${fixed(measured.relayMinMs)} ms`,
    checks.relayMin,
  );
  const b = measured.backend;
  checks.backend = b.received !== null && b.received >= b.lo && b.received <= b.hi;
  row('backend received', b.unknown ? `${b.lo}..${b.hi}` : `${b.lo}`, b.received ?? '-', checks.backend);
  return measured;
}

export function judge(plan, inputs) {
  const ctx = judgeContext(plan, inputs);
  const rows = [];
  const outcomes = plan.cases.map((c) => {
    const checks = {};
    const mine = [];
    const row = (measure, expected, got, pass, seed = '-') => mine.push([measure, seed, expected, got, pass]);
    const measured = sentByK6(c) ? judgeK6Case(c, ctx, checks, row) : judgeWrkCase(c, ctx, checks, row);
    rows.push(...caseRows(c.name, mine));
    const params = { kind: c.kind, factor: plan.factor, policy: plan.policy };
    return outcome({ plan, c, params, measured, checks, summary: inputs.summary, thresholds: capacityThresholds(c) });
  });
  return { outcomes, rows };
}

/**
 * Against each reference beside the case: its efficiency, the reference's CPU per request over
 * the case's (`theirCost(caseId)`), judged at or above the floor, or shown where the floor is null.
 */
function efficiencyRows(bounds, measured, theirCost, checks, row) {
  for (const [ref, b] of Object.entries(bounds || {})) {
    const theirs = theirCost(b.case);
    const eff = measured.costUs && theirs ? theirs / measured.costUs : null;
    measured.efficiency = { ...measured.efficiency, [ref]: eff };
    const judged = b.lo !== null;
    if (judged) checks[`efficiency_${ref}`] = eff !== null && eff >= b.lo;
    row(
      `CPU/req: ${ref}'s / its`,
      judged ? `>= ${b.lo.toFixed(2)}` : '(measured)',
      eff === null ? '-' : `${eff.toFixed(2)} (${fixed(theirs)} us)`,
      judged ? checks[`efficiency_${ref}`] : null,
    );
  }
}

/**
 * Its judged figures: errors, requests, p99, CPU per request and latency against the references,
 * relayed min, what the backend received.
 */
function figures(o) {
  const { expected: e, measured: m, checks } = o;
  const out = [];
  if ('errors' in checks) out.push(figure('error rate', { hi: e.errorRate.hi }, m.errorRate, checks.errors));
  if ('requests' in checks) out.push(figure('requests', e.requests, m.requests, checks.requests));
  if ('p99' in checks) out.push(figure('p99 ms', { hi: e.p99Ms.hi }, m.p99Ms, checks.p99));
  if ('firstReqs' in checks) {
    out.push(figure('first step answered', { lo: m.firstStep.floor }, m.firstStep.reqs, checks.firstReqs));
    out.push(figure('first step error rate', { hi: CAPACITY.errorRate }, m.firstStep.errorRate, checks.firstErrors));
    out.push(figure('first step p99 ms', { hi: CAPACITY.p99Ms }, m.firstStep.p99Ms, checks.firstP99));
  }
  // Under the closed load (wrk) or at the fixed cost rate (k6); a shown one is no figure.
  const effName = o.params?.kind === 'closed' ? 'closed efficiency' : 'efficiency';
  for (const [ref, b] of Object.entries(e.efficiency || {}))
    if (b.lo !== null)
      out.push(figure(`${effName} vs ${ref}`, { lo: b.lo }, m.efficiency?.[ref], checks[`efficiency_${ref}`]));
  for (const [ref, b] of Object.entries(e.throughput || {}))
    out.push(figure(`throughput vs ${ref}`, { lo: b.lo }, m.throughputRatio?.[ref], checks[`throughput_${ref}`]));
  for (const [ref, b] of Object.entries(e.overheadMs || {}))
    out.push(figure(`overhead ms vs ${ref}`, { hi: b.hi }, m.overheadMs?.[ref], checks[`overhead_${ref}`]));
  if ('relayMin' in checks) out.push(figure('relayed min ms', { lo: e.relayMinMs.lo }, m.relayMinMs, checks.relayMin));
  out.push(figure('backend received', m.backend, m.backend.received, checks.backend));
  return judgedFigures(out);
}

/**
 * The phases of a capacity plan: one stack, one k6 run and one wrk stage per server, with the
 * references' cases beside its own (thresholds/kinds/capacity.js).
 */
export function* phases(plan) {
  for (const id of phaseIds(plan)) yield k6Plan(plan, { PHASE: id });
}

export default {
  name: 'capacity',
  judge,
  figures,
  phases,
  // k6's influxdb output writes every sample: at this kind's rates that took the CPU the load
  // needed (docs/metrics-and-dashboards.md); Prometheus gets k6's aggregated series.
  streams: ['prometheus'],
  // The filters count what they relayed, not per case and status: no proxy column.
  proxyCounts: false,
};
