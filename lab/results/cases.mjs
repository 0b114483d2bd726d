/*
 * Each case of a run as the terminal's table showed it: the kind's own judge (lab/kinds/) run
 * again on the run folder's plan, summary, CPU samples and resources, its rows grouped per case;
 * and every range a case was judged on, with where the measurement fell in it.
 */
import { kinds } from '../kinds/index.mjs';
import { CASE_HEAD } from '../judge/table.mjs';

/**
 * What the judge is given, from the folder: the cgroups' samples are rebuilt from the resources
 * table (two samples per service, at the edges of the loaded window, or of the case's length
 * from 0 when k6 never loaded it), which gives back the same table.
 */
export function measuredFromFolder(phase) {
  // A phase k6 never loaded (no summary) kept its resources over all it sampled: from 0.
  const t0 = phase.summary?.setup_data?.t0 ?? 0;
  const c = phase.plan?.cases?.[0];
  const cgroupSamples = {};
  const caps = {};
  if (phase.resources && c?.durationMs) {
    for (const r of phase.resources) {
      const common = { memBytes: r.memBytes, memMaxBytes: r.memMaxBytes, pids: r.pids };
      cgroupSamples[r.service] = [
        [t0, { ...common, cpuS: 0, throttledS: 0, oomKills: 0 }],
        [t0 + c.durationMs, { ...common, cpuS: r.cpuS ?? 0, throttledS: r.throttledS ?? 0, oomKills: r.oomKills }],
      ];
      caps[r.service] = { cpu: r.capPct ? r.capPct / 100 : 0, memBytes: r.memLimitBytes };
    }
  }
  return {
    summary: phase.summary,
    cpu: phase.cpu || {},
    cgroupSamples,
    caps,
    wrk: phase.wrk ?? null,
    sends: phase.sends ?? null,
  };
}

/** Table rows (from caseRows: the case's name on its first row) grouped by case name. */
function byCase(rows) {
  const out = new Map();
  let current = null;
  for (const r of rows) {
    if (r[0]) current = r[0];
    if (!out.has(current)) out.set(current, []);
    out.get(current).push(r.slice(1));
  }
  return out;
}

/** A case's rows from its outcome alone: every expected figure beside its measured one. */
function outcomeRows(o) {
  return Object.entries(o.expected || {})
    .filter(([, r]) => r && typeof r === 'object')
    .map(([k, r]) => {
      const m = o.measured?.[k];
      const exp = r.lo !== undefined || r.hi !== undefined ? `${r.lo ?? ''}..${r.hi ?? ''}` : JSON.stringify(r);
      const pass = o.checks?.[k];
      return [
        k,
        o.seed?.[k] ?? '-',
        exp,
        typeof m === 'object' ? JSON.stringify(m) : (m ?? '-'),
        pass === undefined ? '-' : pass ? 'ok' : 'FAIL',
      ];
    });
}

/**
 * Per case of an experiment: {name, outcome, head, rows} where rows are the terminal table's
 * (without the case column). A judge that cannot run on the folder (a file missing) falls back
 * to the outcome's own figures, and says why.
 */
export function caseTables(exp) {
  const out = [];
  for (const phase of exp.phases) {
    let judged = null;
    let why = null;
    try {
      if (!phase.plan || !phase.summary) throw new Error(`no ${phase.plan ? 'summary' : 'plan'} in the run folder`);
      const j = kinds[exp.kindName].judge(phase.plan, measuredFromFolder(phase));
      judged = { head: (j.head || CASE_HEAD).slice(1), rows: byCase(j.rows) };
    } catch (e) {
      why = e.message;
    }
    for (const c of phase.plan?.cases || []) {
      const o = exp.outcomes.find((x) => x.case === c.name) || null;
      const rows = judged?.rows.get(c.name);
      if (rows) out.push({ name: c.name, case: c, phase, outcome: o, head: judged.head, rows });
      else
        out.push({
          name: c.name,
          case: c,
          phase,
          outcome: o,
          head: CASE_HEAD.slice(1),
          rows: o ? outcomeRows(o) : [],
          note: why || 'the judge gave no rows for it',
        });
    }
  }
  // Outcomes without a plan case (a plan file missing) are still listed.
  for (const o of exp.outcomes.filter((x) => !out.some((t) => t.name === x.case)))
    out.push({
      name: o.case,
      case: null,
      phase: null,
      outcome: o,
      head: CASE_HEAD.slice(1),
      rows: outcomeRows(o),
      note: 'no plan for it in the run folder',
    });
  return out;
}

/**
 * Where a measured value stands against a range (either end may be missing): below, within or above;
 * '-' for no number.
 */
export const sideOf = (value, lo, hi) =>
  typeof value !== 'number' ? '-' : lo != null && value < lo ? 'below' : hi != null && value > hi ? 'above' : 'within';

/**
 * Every judged range of a case with a number measured against it: {measure, lo, hi, value,
 * side: below | within | above}, and `edge`: within 10 % of the range's width from an end,
 * where the model did not predict it. Only a range with the model's own figure in it counts (a
 * min..max the tolerance widened into lo..hi, or a model value): the others bound what k6 sent
 * of its schedule, where the top is the schedule itself.
 */
export function rangesOf(o) {
  const out = [];
  for (const [k, r] of Object.entries(o?.expected || {})) {
    const v = o.measured?.[k];
    if (!r || typeof r !== 'object' || typeof v !== 'number') continue;
    const lo = typeof r.lo === 'number' ? r.lo : null;
    const hi = typeof r.hi === 'number' ? r.hi : null;
    if (lo === null && hi === null) continue;
    const side = sideOf(v, lo, hi);
    const width = lo !== null && hi !== null ? hi - lo : null;
    const gap = width ? Math.min(v - lo, hi - v) : null;
    const modelRange = typeof r.min === 'number' && typeof r.max === 'number';
    const predicted = modelRange && v >= r.min && v <= r.max;
    const edge =
      side === 'within' && width > 0 && gap <= 0.1 * width && (modelRange || typeof r.model === 'number') && !predicted;
    out.push({ measure: k, lo, hi, value: v, side, edge });
  }
  return out;
}
