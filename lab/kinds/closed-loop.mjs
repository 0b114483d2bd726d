/*
 * Judging a closed-loop plan (caching) from k6's summary, with the plan's own ranges (the same
 * numbers k6's thresholds were given). Per case the figures the seed reports, each as seed |
 * model | expected | measured: responses/s, the share of 503s, mean, min and max latency, and
 * how many requests reached the application.
 */
import { closedThresholds } from '../../thresholds/kinds/limiter.js';
import { within, ms } from './limiter.mjs';

// One object, so the runner prints every closed-loop plan's rows in one table.
const HEAD = ['case', 'measure', 'seed', 'model', 'expected', 'measured', 'pass'];
const mark = (b) => (b === null ? '-' : b ? 'ok' : 'FAIL');
const range = (r, f = (x) => x) => (r.lo === r.hi ? f(r.lo) : `${f(r.lo)}..${f(r.hi)}`);
const pct = (v) => (v == null ? '-' : `${(v * 100).toFixed(1)} %`);
const rps = (v) => (v == null || !Number.isFinite(v) ? '-' : v.toFixed(1));

export function closedOutcomes(plan, summary) {
  const metrics = summary?.metrics || {};
  const v = (name, stat) => metrics[name]?.values?.[stat] ?? (stat === 'count' ? 0 : null);
  const rows = [];
  const outcomes = plan.cases.map((c) => {
    const e = c.expected;
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
    const checks = {
      responses: within(m.responses, e.responses) && m.unexpected === 0,
      ok: within(m.ok, e.ok),
      limited: within(m.limited, e.limited),
      span: within(m.spanMs, e.spanMs),
      mean: within(m.meanMs, e.meanMs),
      max: within(m.maxMs, e.maxMs),
      appServed: within(m.appServed, e.appServed),
    };
    const k6ok = Object.entries(closedThresholds(c)).every(([name, exprs]) => exprs.every((x) => metrics[name]?.thresholds?.[x]?.ok !== false));
    const seed = c.seed || {};
    const p = c.model;
    // responses/s from the run's length: the longest run is the lowest rate.
    const perS = (span) => (c.responses * 1000) / span;
    const caseRows = [
      ['responses/s', rps(seed.throughput), `${rps(perS(p.durationMs.max))}..${rps(perS(p.durationMs.min))}`, `${rps(perS(e.spanMs.hi))}..${rps(perS(e.spanMs.lo))}`, rps(m.throughput), checks.span],
      ['503 share', pct(seed.limitedShare), `${pct(p.limitedShare.min)}..${pct(p.limitedShare.max)}`, `${range(e.limited)} of ${c.responses}`, `${pct(m.limitedShare)} (${m.limited})`, checks.limited && checks.ok],
      ['mean latency', ms(seed.meanMs), `${ms(p.meanMs.min)}..${ms(p.meanMs.max)}`, range(e.meanMs, ms), ms(m.meanMs), checks.mean],
      ['min latency', ms(seed.minMs), `${ms(p.minMs.min)}..${ms(p.minMs.max)}`, '(shown)', ms(m.minMs), null],
      ['max latency', ms(seed.maxMs), `${ms(p.maxMs.min)}..${ms(p.maxMs.max)}`, range(e.maxMs, ms), ms(m.maxMs), checks.max],
      ['app served', '-', range({ lo: p.appServed.min, hi: p.appServed.max }), range(e.appServed), m.appServed, checks.appServed],
    ];
    if (!checks.responses) caseRows.push(['responses', '-', c.responses, range(e.responses), `${m.responses}, ${m.unexpected} other status`, false]);
    caseRows.forEach((r, i) => rows.push([i ? '' : c.name, ...r.slice(0, 5), mark(r[5])]));
    return {
      suite: plan.suite,
      case: c.name,
      params: { mode: c.mode, users: c.users.length, requests: c.responses, rampMs: c.rampMs, policy: plan.policy },
      seed: c.seed,
      expected: e,
      measured: m,
      checks,
      pass: summary != null && k6ok && Object.values(checks).every(Boolean),
    };
  });
  return { outcomes, rows, head: HEAD };
}
