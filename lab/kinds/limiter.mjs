/*
 * Judging a limiter plan: reads k6's summary for each case and decides pass/fail with the plan's
 * own ranges (the same numbers k6's thresholds were given): the 200s, the limited answers, the
 * longest wait (or p99 where nothing queues), and that k6 sent the schedule. The same judge
 * reads a summary rebuilt from Prometheus (summaryFromPrometheus), for `just verdict`.
 */
import {
  sentMetric,
  okMetric,
  limitedMetric,
  alsoMetric,
  latencyMetric,
  lateMetric,
  caseThresholds,
  possibleCounts,
  replayExpected,
} from '../../thresholds/kinds/limiter.js';
import { shownRanges } from '../../thresholds/kinds/judged.js';
import { within, range, ms, caseRows } from '../judge/table.mjs';
import { outcome, figure, summaryValue, judgedWithin, judgedFigures } from '../judge/outcome.mjs';
import { storeCounts, RUN_LOOKBACK } from '../judge/nothing-lost.mjs';
import { promQuery } from '../stores/prom-query.mjs';
import { replayRecord, caseSends } from '../judge/sends.mjs';
import { experimentOfPlan } from '../../thresholds/plan.js';

/** The judged figure of k6's lateness, as outcomes.json names it (lab/cli/k6-lateness.mjs reads it). */
export const LATE_MEASURE = 'k6 late spread ms';

/** How much later k6 started a case's latest arrival than its earliest, against the schedule (ms). */
function lateSpread(summary, c) {
  const [lo, hi] = ['min', 'max'].map((stat) => summaryValue(summary, lateMetric(c), stat));
  return lo === null || hi === null ? null : Math.round((hi - lo) * 10) / 10;
}

/**
 * The replay's expectation of a case, from the sends k6 made to it and the proxy's sightings of
 * them (caseSends), and of the case it follows on its bucket where it follows one: null (the case
 * is judged on the plan's ranges) with why, where the run holds neither for either.
 */
function replayOf(plan, c, sent, sends, sentOf) {
  if (!sends) return { why: 'no send times in the run (--no-metrics, or a run made before the replay)' };
  const own = caseSends(sends, c.id, sent);
  if (own.why) return own;
  const lead = c.follows ? caseSends(sends, c.follows, sentOf(c.follows)) : null;
  if (lead?.why) return { why: `it follows ${c.follows} on its bucket: ${lead.why}` };
  const input = { ...own, clockOffsetMs: sends.offsetMs, lead };
  return {
    expected: replayExpected(experimentOfPlan(plan), plan, c, own.times, input),
    input,
  };
}

function judgeCase(plan, c, summary, sends) {
  const value = (name, stat) => summaryValue(summary, name, stat, stat === 'count' ? 0 : null);
  const measured = {
    sent: value(sentMetric(c), 'count'),
    ok: value(okMetric(c), 'count'),
    limited: value(limitedMetric(c), 'count'),
    maxMs: value(latencyMetric(c), 'max'),
    p99Ms: value(latencyMetric(c), 'p(99)'),
    unexpected: value(`unexpected_status{case:${c.id}}`, 'count'),
    ...(c.alsoStatuses
      ? { also: Object.fromEntries(c.alsoStatuses.map((st) => [st, value(alsoMetric(c, st), 'count')])) }
      : {}),
    dropped: value(`dropped_iterations{scenario:${c.id}}`, 'count'),
    lateSpreadMs: lateSpread(summary, c),
  };
  const sentOf = (id) => value(sentMetric(plan.cases.find((x) => x.id === id)), 'count');
  const replay = replayOf(plan, c, measured.sent, sends, sentOf);
  // The ranges the case is judged on: the replay's where it has one, else the plan's.
  const e = replay.expected ? { ...c.expected, ...replay.expected } : c.expected;
  // A count range that admits every count the case could give is shown (null), not judged.
  const shown = shownRanges(e, possibleCounts(c));
  const checks = {
    ok: judgedWithin(shown, 'ok', measured.ok, e),
    limited: judgedWithin(shown, 'limited', measured.limited, e),
    // The refusals of its other limits, each by its status.
    ...(e.also ? { also: Object.entries(e.also).every(([st, r]) => within(measured.also[st], r)) } : {}),
    latency: e.maxMs ? within(measured.maxMs, e.maxMs) : measured.p99Ms !== null && measured.p99Ms < e.p99Ms.hi,
    // k6's lateness is the plan's assumption: judged where the plan judges the case, shown
    // where the replay does (it replays the lateness itself). Runs recorded before k6 measured
    // it (and plans made before) show nothing here.
    timing:
      replay.expected || !e.lateSpreadMs || measured.lateSpreadMs === null
        ? null
        : measured.lateSpreadMs <= e.lateSpreadMs.hi,
    clean:
      measured.unexpected === 0 && measured.dropped === 0 && judgedWithin(shown, 'sent', measured.sent, e) !== false,
  };
  const params = {
    rate: c.rate,
    seconds: c.durationMs / 1000,
    startS: c.startMs / 1000,
    factor: plan.factor,
    policy: plan.policy,
  };
  // Judged on the replay, k6's own thresholds (the plan's a-priori ranges) are not the verdict:
  // the lab's checks are (docs/model.md#the-verdict-and-k6s-exit-code).
  const thresholds = replay.expected ? {} : caseThresholds(c);
  const o = outcome({ plan, c, params, measured, checks, summary, thresholds });
  const out = {
    ...o,
    expected: e,
    plan: c.expected,
    judgedOn: replay.expected ? 'replay' : 'plan',
    ...(replay.why ? { noReplay: replay.why } : {}),
  };
  // What the replay ran on, for the diagnosis of a failed case (lab/run/judge.mjs), not kept in outcomes.json.
  if (replay.input) Object.defineProperty(out, 'replayInput', { value: replay.input, enumerable: false });
  return out;
}

/** A case's rows: 200s, limited, the longest wait or p99, how late k6 was, what it failed to send. */
function tableRows(o, c) {
  const { seed, expected: e, plan: p = e, measured: m, checks } = o;
  const replayed = o.judgedOn === 'replay';
  const both = (f) => [f(p), replayed ? f(e) : '-'];
  const wait = (x) => (x.maxMs ? `${ms(x.maxMs.lo)}..${ms(x.maxMs.hi)}` : `< ${ms(x.p99Ms.hi)}`);
  const rows = [
    ['200', seed?.ok ?? '-', ...both((x) => range(x.ok)), m.ok, checks.ok],
    [String(c.limitedStatus), seed?.limited ?? '-', ...both((x) => range(x.limited)), m.limited, checks.limited],
    ...Object.keys(e.also ?? {}).map((st) => [
      st,
      '-',
      ...both((x) => range(x.also[st])),
      m.also[st],
      within(m.also[st], e.also[st]),
    ]),
    [
      e.maxMs ? 'max wait' : 'p99',
      seed ? `${e.maxMs ? '' : 'max '}${ms(seed.maxS * 1000)}` : '-',
      ...both(wait),
      ms(e.maxMs ? m.maxMs : m.p99Ms),
      checks.latency,
    ],
  ];
  if (m.lateSpreadMs !== null && p.lateSpreadMs)
    rows.push([
      'k6 late, spread',
      '-',
      `<= ${ms(p.lateSpreadMs.hi)}`,
      replayed ? 'replayed' : '-',
      ms(m.lateSpreadMs),
      checks.timing,
    ]);
  if (!checks.clean)
    rows.push([
      'sent',
      '-',
      range(p.sent),
      '-',
      `${m.sent} sent, ${m.unexpected} other status, ${m.dropped} dropped`,
      false,
    ]);
  return caseRows(o.case, rows);
}

/** The limiter's table head: the plan's range (a priori) and the replay's (from what k6 sent). */
export const LIMITER_HEAD = ['case', 'measure', 'seed', 'expected (plan)', 'expected (replay)', 'measured', 'pass'];

/** The plan's outcomes, in plan order, and their table rows. */
export function judge(plan, { summary, sends = null }) {
  const record = sends && replayRecord(sends);
  const outcomes = plan.cases.map((c) => judgeCase(plan, c, summary, record));
  return { outcomes, head: LIMITER_HEAD, rows: outcomes.flatMap((o, i) => tableRows(o, plan.cases[i])) };
}

/**
 * What Prometheus holds for one experiment of a run, as a k6 summary of the metrics a limiter
 * plan is judged on: per case and status the requests, the longest latency, the largest p99,
 * unexpected statuses and dropped iterations, over every segment.
 */
export async function summaryFromPrometheus(url, testid, plan) {
  const sel = `testid="${testid}", experiment="${plan.experiment}"`;
  const last = (metric, by) =>
    `${by.startsWith('max') ? 'max' : 'sum'} by (${by.replace(/^max:/, '')}) (last_over_time(${metric}{${sel}}[${RUN_LOOKBACK}]))`;
  // The requests per case and status: the same query as the nothing-lost table's.
  const [{ prometheus: reqs }, max, p99, unexpected, dropped, lateMin, lateMax] = await Promise.all([
    storeCounts({ prometheus: url }, testid, plan.experiment, ['prometheus']),
    promQuery(url, last('k6_http_req_duration_max', 'max:case')),
    promQuery(url, last('k6_http_req_duration_p99', 'max:case')),
    promQuery(url, last('k6_unexpected_status_total', 'case')),
    promQuery(url, last('k6_dropped_iterations_total', 'scenario')),
    promQuery(url, `min by (case) (min_over_time(k6_lab_arrival_late_ms_min{${sel}}[${RUN_LOOKBACK}]))`),
    promQuery(url, last('k6_lab_arrival_late_ms_max', 'max:case')),
  ]);
  if (!Object.keys(reqs).length)
    throw new Error(`Prometheus has no k6_http_reqs_total for testid ${testid}, experiment ${plan.experiment}`);
  const metrics = {};
  const put = (name, values) => {
    metrics[name] = { values: { ...metrics[name]?.values, ...values } };
  };
  for (const c of plan.cases) {
    const mine = reqs[c.id] || {};
    put(sentMetric(c), { count: Object.values(mine).reduce((a, n) => a + n, 0) });
    put(okMetric(c), { count: mine['200'] ?? 0 });
    put(limitedMetric(c), { count: mine[String(c.limitedStatus)] ?? 0 });
    for (const st of c.alsoStatuses ?? []) put(alsoMetric(c, st), { count: mine[String(st)] ?? 0 });
    // k6 exports trends in seconds.
    const inMs = (rows) => {
      const v = rows.find((r) => r.labels.case === c.id)?.value;
      return v === undefined ? null : v * 1000;
    };
    put(latencyMetric(c), { max: inMs(max), 'p(99)': inMs(p99) });
    put(`unexpected_status{case:${c.id}}`, { count: unexpected.find((r) => r.labels.case === c.id)?.value ?? 0 });
    const lo = inMs(lateMin);
    const hi = inMs(lateMax);
    if (lo !== null && hi !== null) put(lateMetric(c), { min: lo, max: hi });
    put(`dropped_iterations{scenario:${c.id}}`, { count: dropped.find((r) => r.labels.scenario === c.id)?.value ?? 0 });
  }
  return { metrics };
}

/** Its judged figures: 200s, limited, the longest wait (or p99), requests sent. */
function figures(o) {
  const { expected: e, measured: m, checks } = o;
  return judgedFigures([
    figure('ok', e.ok, m.ok, checks.ok),
    figure('limited', e.limited, m.limited, checks.limited),
    ...Object.entries(e.also ?? {}).map(([st, r]) => figure(`refused ${st}`, r, m.also[st], within(m.also[st], r))),
    e.maxMs
      ? figure('max wait ms', e.maxMs, m.maxMs, checks.latency)
      : figure('p99 ms', { hi: e.p99Ms.hi }, m.p99Ms, checks.latency),
    figure('sent', e.sent, m.sent, checks.clean),
    figure(LATE_MEASURE, e.lateSpreadMs, m.lateSpreadMs, checks.timing),
  ]);
}

export default {
  name: 'limiter',
  judge,
  figures,
  streams: ['influx', 'prometheus'],
  summaryFromPrometheus,
  // Its cases are judged by replaying the sends k6 really made (lab/judge/sends.mjs).
  replaysSends: true,
};
