/*
 * The thresholds view of a run page: every threshold k6 was given (from its summary: the
 * metric, the expression, the value k6 judged it on, ok) and every judgement the lab made on
 * top (the judge's rows that pass or fail), failures first.
 */
import { format } from './units.js';
import { keepsOnly } from '../../thresholds/kinds/judged.js';

const EXPR = /^\s*(count|rate|value|min|max|avg|med|p\([\d.]+\))\s*(<=|>=|<|>|===|==|!=)\s*(\S+)\s*$/;

/** The case a sub-metric names ({case:x} or {scenario:x}), or '' for a whole-run metric. */
export const caseOfMetric = (name) => /[{,](?:case|scenario):([^,}]+)/.exec(name)?.[1] ?? '';

/** A value as k6 judged it: trends of time in ms, rates as shares, counts as numbers. */
function judgedValue(metric, stat) {
  const v = metric?.values?.[stat];
  if (v === undefined) return '-';
  if (stat === 'rate') return format('percentunit', v);
  if (metric.contains === 'time') return format('ms', v);
  return format('none', v);
}

/**
 * k6's thresholds of one phase's summary, one row per metric (its expressions together, and the
 * value of each statistic they name): [{source, phase, case, name, expression, value, ok}].
 */
export function k6Thresholds(phase) {
  const out = [];
  for (const [name, m] of Object.entries(phase.summary?.metrics || {})) {
    // A keep-only expression only keeps a sub-metric in the summary: it judges nothing.
    const exprs = Object.keys(m.thresholds || {})
      .filter((x) => !keepsOnly(x))
      .sort((a, b) => b.localeCompare(a));
    if (!exprs.length) continue;
    const stats = [...new Set(exprs.map((x) => EXPR.exec(x)?.[1]).filter(Boolean))];
    const value =
      stats.map((s) => (stats.length > 1 ? `${s} ${judgedValue(m, s)}` : judgedValue(m, s))).join(', ') || '-';
    const failed = exprs.filter((x) => m.thresholds[x].ok === false);
    out.push({
      source: 'k6',
      phase: phase.phase,
      case: caseOfMetric(name),
      name,
      expression: exprs.join(', '),
      value,
      ok: !failed.length,
      failed,
    });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

/** The lab's judgements: the judge's rows that pass or fail (not the ones only shown). */
export function labJudgements(tables) {
  return tables.flatMap((t) =>
    t.rows
      .filter((r) => r[r.length - 1] === 'ok' || r[r.length - 1] === 'FAIL')
      .map((r) => ({
        source: 'lab',
        phase: t.phase?.phase ?? null,
        case: t.name,
        name: String(r[0]),
        expression: String(r[r.length - 3]),
        value: String(r[r.length - 2]),
        ok: r[r.length - 1] === 'ok',
      })),
  );
}

/** Both, failures first, then case by case (k6's rows before the lab's), whole-run metrics last. */
export function thresholdRows(exp, tables) {
  const order = (r) => {
    const i = exp.cases.findIndex((c) => c.id === r.case || c.name === r.case);
    return i < 0 ? exp.cases.length : i;
  };
  const named = (r) => ({ ...r, case: exp.cases.find((c) => c.id === r.case)?.name ?? r.case });
  // A case judged on the replay of what k6 sent is judged by the lab's rows: k6's own thresholds
  // held the plan's a-priori ranges, shown beside them, not a verdict (docs/model.md).
  const replayed = new Set((exp.outcomes || []).filter((o) => o.judgedOn === 'replay').map((o) => o.case));
  const shownOnly = (r) =>
    replayed.has(r.case) && r.ok !== null
      ? { ...r, ok: null, k6ok: r.ok, expression: `${r.expression} (the plan's; judged on the replay)` }
      : r;
  const all = [...exp.phases.flatMap(k6Thresholds).map(named).map(shownOnly), ...labJudgements(tables)];
  return all
    .map((r, i) => [r, i])
    .sort(([a, i], [b, j]) => Number(a.ok !== false) - Number(b.ok !== false) || order(a) - order(b) || i - j)
    .map(([r]) => r);
}
