/*
 * Measured against expected: reads k6's summary for each case of a plan and decides pass/fail
 * with the plan's own ranges (the same numbers k6's thresholds were given), then prints the
 * table a user reads first: case | seed | expected | measured | pass.
 */
import { sentMetric, okMetric, limitedMetric, latencyMetric, caseThresholds } from '../../thresholds/kinds/limiter.js';

export const within = (v, r) => v !== null && v >= r.lo && v <= r.hi;

export function caseOutcomes(plan, summary) {
  const metrics = summary?.metrics || {};
  const value = (name, stat) => metrics[name]?.values?.[stat] ?? (stat === 'count' ? 0 : null);
  return plan.cases.map((c) => {
    const e = c.expected;
    const measured = {
      sent: value(sentMetric(c), 'count'),
      ok: value(okMetric(c), 'count'),
      limited: value(limitedMetric(c), 'count'),
      maxMs: value(latencyMetric(c), 'max'),
      p99Ms: value(latencyMetric(c), 'p(99)'),
      unexpected: value(`unexpected_status{case:${c.id}}`, 'count'),
      dropped: value(`dropped_iterations{scenario:${c.id}}`, 'count'),
    };
    const checks = {
      ok: within(measured.ok, e.ok),
      limited: within(measured.limited, e.limited),
      latency: e.maxMs ? within(measured.maxMs, e.maxMs) : measured.p99Ms !== null && measured.p99Ms < e.p99Ms.hi,
      clean: measured.unexpected === 0 && measured.dropped === 0 && within(measured.sent, e.sent),
    };
    // k6 judged the same thresholds; a case passes only if both agree it did.
    const k6ok = Object.entries(caseThresholds(c)).every(([m, exprs]) => exprs.every((x) => metrics[m]?.thresholds?.[x]?.ok !== false));
    return {
      suite: plan.suite,
      case: `${plan.experiment}/${c.id}`,
      params: { rate: c.rate, seconds: c.durationMs / 1000, startS: c.startMs / 1000, factor: plan.factor, policy: plan.policy },
      seed: c.seed,
      expected: e,
      measured,
      checks,
      pass: summary != null && k6ok && Object.values(checks).every(Boolean),
    };
  });
}

/** The limiter cases' outcomes and their table rows; outcomes come in plan order. */
export function limiterOutcomes(plan, summary) {
  const outcomes = caseOutcomes(plan, summary);
  return { outcomes, rows: outcomes.flatMap((o, i) => tableRows(o, plan.cases[i].limitedStatus)) };
}

const range = (r) => (r.lo === r.hi ? `${r.lo}` : `${r.lo}..${r.hi}`);
export const ms = (v) => (v == null ? '-' : v >= 1000 ? `${(v / 1000).toFixed(2)}s` : `${v.toFixed(1)}ms`);

export function tableRows(outcome, limitedStatus) {
  const { seed, expected: e, measured: m, checks } = outcome;
  const mark = (b) => (b ? 'ok' : 'FAIL');
  const rows = [
    [outcome.case, '200', seed?.ok ?? '-', range(e.ok), m.ok, mark(checks.ok)],
    ['', String(limitedStatus), seed?.limited ?? '-', range(e.limited), m.limited, mark(checks.limited)],
    e.maxMs
      ? ['', 'max wait', seed ? ms(seed.maxS * 1000) : '-', `${ms(e.maxMs.lo)}..${ms(e.maxMs.hi)}`, ms(m.maxMs), mark(checks.latency)]
      : ['', 'p99', seed ? `max ${ms(seed.maxS * 1000)}` : '-', `< ${ms(e.p99Ms.hi)}`, ms(m.p99Ms), mark(checks.latency)],
  ];
  if (!checks.clean) {
    rows.push(['', 'sent', '-', range(e.sent), `${m.sent} sent, ${m.unexpected} other status, ${m.dropped} dropped`, 'FAIL']);
  }
  return rows;
}

export function formatTable(rows, head = ['case', 'measure', 'seed', 'expected', 'measured', 'pass']) {
  const all = [head, ...rows].map((r) => r.map(String));
  const w = head.map((_, i) => Math.max(...all.map((r) => r[i].length)));
  return all.map((r) => r.map((c, i) => c.padEnd(w[i])).join('  ').trimEnd()).join('\n');
}
