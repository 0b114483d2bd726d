/*
 * Judging a closed-loop plan (caching) from k6's summary, with the plan's own ranges (the same
 * numbers k6's thresholds were given). Per case the figures the seed reports, each as seed |
 * model | expected | measured: responses/s, the share of 503s, mean, min and max latency, and
 * how many requests reached the application.
 */
import { closedThresholds, possibleCounts } from '../../thresholds/kinds/closed-loop.js';
import { shownRanges } from '../../thresholds/kinds/judged.js';
import { within, ms, pct, range, fixed, caseRows } from '../judge/table.mjs';
import { outcome, figure, summaryValue, judgedWithin, allOf, judgedFigures } from '../judge/outcome.mjs';

// Its own head: the runner prints every closed-loop plan's rows in one table.
const HEAD = ['case', 'measure', 'seed', 'model', 'expected', 'measured', 'pass'];
const rps = (v) => (v == null || !Number.isFinite(v) ? '-' : fixed(v));

function judgeCase(plan, c, summary) {
  const e = c.expected;
  const v = (name, stat) => summaryValue(summary, name, stat, stat === 'count' ? 0 : null);
  const m = {
    responses: v(`lab_responses{case:${c.id}}`, 'count'),
    ok: v(`lab_responses{case:${c.id},status:200}`, 'count'),
    limited: v(`lab_responses{case:${c.id},status:${c.limitedStatus}}`, 'count'),
    spanMs: v(`lab_case_end{case:${c.id}}`, 'max'),
    meanMs: v(`lab_response_time{case:${c.id}}`, 'avg'),
    minMs: v(`lab_response_time{case:${c.id}}`, 'min'),
    maxMs: v(`lab_response_time{case:${c.id}}`, 'max'),
    appServed: v(`lab_app_served{case:${c.id}}`, 'count'),
    unexpected: v(`unexpected_status{case:${c.id}}`, 'count'),
  };
  m.throughput = m.spanMs ? (m.responses * 1000) / m.spanMs : null;
  m.limitedShare = m.responses ? m.limited / m.responses : null;
  // A count range that admits every count the case could give is shown (null), not judged.
  const shown = shownRanges(e, possibleCounts(c));
  const checks = {
    responses: judgedWithin(shown, 'responses', m.responses, e) !== false && m.unexpected === 0,
    ok: judgedWithin(shown, 'ok', m.ok, e),
    limited: judgedWithin(shown, 'limited', m.limited, e),
    span: within(m.spanMs, e.spanMs),
    mean: within(m.meanMs, e.meanMs),
    max: within(m.maxMs, e.maxMs),
    appServed: judgedWithin(shown, 'appServed', m.appServed, e),
  };
  const params = { mode: c.mode, users: c.users.length, requests: c.responses, rampMs: c.rampMs, policy: plan.policy };
  return outcome({ plan, c, params, measured: m, checks, summary, thresholds: closedThresholds(c) });
}

/** The model's own range of a figure, as `f` writes each end. */
const modelRange = (r, f = String) => `${f(r.min)}..${f(r.max)}`;

/** A case's rows: per measure the seed's, the model's range, the judged range, what was measured and the verdict. */
function tableRows(o, c) {
  const { expected: e, measured: m, checks } = o;
  const seed = c.seed || {};
  const p = c.model;
  const share = (x) => pct(x, 1);
  // responses/s from the run's length: the longest run is the lowest rate.
  const perS = (span) => (c.responses * 1000) / span;
  const rows = [
    [
      'responses/s',
      rps(seed.throughput),
      `${rps(perS(p.durationMs.max))}..${rps(perS(p.durationMs.min))}`,
      `${rps(perS(e.spanMs.hi))}..${rps(perS(e.spanMs.lo))}`,
      rps(m.throughput),
      checks.span,
    ],
    [
      '503 share',
      share(seed.limitedShare),
      modelRange(p.limitedShare, share),
      `${range(e.limited)} of ${c.responses}`,
      `${share(m.limitedShare)} (${m.limited})`,
      allOf(checks.limited, checks.ok),
    ],
    ['mean latency', ms(seed.meanMs), modelRange(p.meanMs, ms), range(e.meanMs, ms), ms(m.meanMs), checks.mean],
    ['min latency', ms(seed.minMs), modelRange(p.minMs, ms), '(shown)', ms(m.minMs), null],
    ['max latency', ms(seed.maxMs), modelRange(p.maxMs, ms), range(e.maxMs, ms), ms(m.maxMs), checks.max],
    [
      'app served',
      '-',
      range({ lo: p.appServed.min, hi: p.appServed.max }),
      range(e.appServed),
      m.appServed,
      checks.appServed,
    ],
  ];
  if (!checks.responses)
    rows.push([
      'responses',
      '-',
      c.responses,
      range(e.responses),
      `${m.responses}, ${m.unexpected} other status`,
      false,
    ]);
  return caseRows(c.name, rows);
}

export function judge(plan, { summary }) {
  const outcomes = plan.cases.map((c) => judgeCase(plan, c, summary));
  return { outcomes, rows: outcomes.flatMap((o, i) => tableRows(o, plan.cases[i])), head: HEAD };
}

/** Its judged figures: answers, 200s, 503s, the run's length, mean and max latency, what the app served. */
function figures(o) {
  const { expected: e, measured: m, checks } = o;
  return judgedFigures([
    figure('responses', e.responses, m.responses, checks.responses),
    figure('ok', e.ok, m.ok, checks.ok),
    figure('limited', e.limited, m.limited, checks.limited),
    figure('span ms', e.spanMs, m.spanMs, checks.span),
    figure('mean ms', e.meanMs, m.meanMs, checks.mean),
    figure('max ms', e.maxMs, m.maxMs, checks.max),
    figure('app served', e.appServed, m.appServed, checks.appServed),
  ]);
}

export default {
  name: 'closed-loop',
  judge,
  figures,
  streams: ['influx', 'prometheus'],
};
