/*
 * What a person should look at first on a run page, derived from the run folder: failed cases
 * and which range each missed, iterations k6 dropped, k6's own CPU near a core, a case within
 * 10 % of the edge of its range, counts that differ, writes a store refused; and which policy
 * explains a failed case.
 */
import { rangesOf } from './cases.mjs';
import { format } from './units.js';
import { refusalProblems } from '../stores/refusals.mjs';

const NEAR_CORE_PCT = 90;
const STEP_MS = 1000;

/**
 * k6's CPU as % of one core ([[epochMs, cumulative CPU s], ...]): the peak over any 1 s of the
 * samples, and the mean.
 */
export function k6Cpu(all) {
  // Up to the first sample that goes back (the process gone: the sampler reads nothing).
  const end = (all || []).findIndex(([, c], i) => i && c < all[i - 1][1]);
  const series = end < 0 ? all : all.slice(0, end);
  if (!series || series.length < 2) return null;
  let peak = 0;
  for (let i = 0, j = 0; i < series.length; i += 1) {
    while (j < series.length && series[j][0] < series[i][0] + 1000) j += 1;
    if (j >= series.length) break;
    peak = Math.max(peak, ((series[j][1] - series[i][1]) / ((series[j][0] - series[i][0]) / 1000)) * 100);
  }
  const [t0, c0] = series[0];
  const [t1, c1] = series[series.length - 1];
  return { peakPct: peak, meanPct: t1 > t0 ? ((c1 - c0) / ((t1 - t0) / 1000)) * 100 : 0 };
}

/** The plan's value of each knob an explanation names (rate=4 or burst=60 -> rate=3, burst=50). */
function planned(exp, o) {
  const knobs =
    exp.phases.find((p) => p.plan?.cases?.some((c) => `${p.plan.experiment}/${c.id}` === o.case))?.plan?.knobs ?? {};
  return [...o.explanation.matchAll(/([a-z_]+)(?:\[(\d+)\])?=/g)]
    .map(([, k, listed]) => `${k}${listed ? `[${listed}]` : ''}=${listed ?? JSON.stringify(knobs[k])}`)
    .join(', ');
}

const phaseName = (exp, p) => (p.phase ? `${exp.name} / ${p.phase}` : exp.name);

/** A failed case: what failed, and which knob alone would explain what it measured, by the model. */
function failedCase(exp, o, say) {
  const missed = rangesOf(o)
    .filter((r) => r.side !== 'within')
    .map((r) => `${r.measure} ${format('none', r.value)} is ${r.side} ${r.lo ?? ''}..${r.hi ?? ''}`);
  const checks = Object.entries(o.checks || {})
    .filter(([, v]) => !v)
    .map(([k]) => k);
  say(
    'fail',
    `${o.case} failed${checks.length ? ` (checks: ${checks.join(', ')})` : " (k6's thresholds, or the phase broke)"}${missed.length ? `: ${missed.join('; ')}` : ''}.`,
  );
  // The model searched over the knobs at the end of the run (lab/run/judge.mjs).
  if (o.explanation?.startsWith('no single knob')) say('fail', `${o.case}: ${o.explanation}, by the model.`);
  else if (o.explanation)
    say('fail', `${o.case}: what it measured fits ${o.explanation}, by the model; the plan says ${planned(exp, o)}.`);
}

/** A phase: k6's dropped iterations, the stores' refusals, cases shorter than a chart's step, k6 near a core. */
function phaseNotes(exp, p, say) {
  const dropped = p.summary?.metrics?.dropped_iterations?.values?.count ?? 0;
  if (dropped > 0) {
    const where = Object.entries(p.summary.metrics)
      .filter(([k, m]) => k.startsWith('dropped_iterations{') && m.values.count > 0)
      .map(([k, m]) => `${/scenario:([^,}]+)/.exec(k)?.[1] ?? k} ${m.values.count}`);
    say(
      'warn',
      `k6 dropped ${dropped} iterations in ${phaseName(exp, p)}${where.length ? ` (${where.join(', ')})` : ''}: it had no free VU or no CPU when an arrival was due, so the schedule the model assumed was not kept.`,
    );
  }
  for (const text of refusalProblems(p.refusals || [], phaseName(exp, p)))
    say('fail', `${text}: samples are missing from that store.`);
  const slow = (p.refusals || []).filter((r) => r.level === 'warn');
  if (slow.length)
    say(
      'warn',
      `k6's ${slow[0].store} output said ${slow.length} time(s) in ${phaseName(exp, p)} that it may have dropped samples: ${slow[0].message}`,
    );
  // The stores' per-second charts step by a second at the finest (k6 pushes every second).
  for (const c of (p.plan?.cases || []).filter((x) => x.rate && x.durationMs && x.durationMs < STEP_MS)) {
    say(
      'info',
      `${p.plan.experiment}/${c.id} was sent at ${c.rate} r/s for ${c.durationMs / 1000} s: the per-second charts, in steps of 1 s at the finest, draw it averaged over its step (about ${Math.round((c.rate * c.durationMs) / STEP_MS)} r/s); its counts so far are exact.`,
    );
  }
  const cpu = k6Cpu(p.cpu?.k6);
  if (cpu && cpu.peakPct >= NEAR_CORE_PCT)
    say(
      'warn',
      `k6 used up to ${cpu.peakPct.toFixed(0)} % of a core over 1 s (mean ${cpu.meanPct.toFixed(0)} %) in ${phaseName(exp, p)}: near or above a core, k6's own scheduling can be part of what was measured.`,
    );
}

/** A case: k6 later than the plan allowed (judged on the replay), and figures near the edge of their range. */
function caseNotes(o, say) {
  // k6 later than the plan allowed: the plan's ranges no longer held, the replay's did.
  const late = o.measured?.lateSpreadMs;
  const allowed = (o.plan ?? o.expected)?.lateSpreadMs?.hi;
  if (o.judgedOn === 'replay' && late != null && allowed != null && late > allowed) {
    say(
      'warn',
      `${o.case}: k6 started its requests up to ${late.toFixed(1)} ms later than its schedule, relative to each other, beyond the ${allowed} ms the plan's ranges allow; the case was judged against the requests k6 really sent, replayed through the model.`,
    );
  }
  for (const r of rangesOf(o).filter((x) => x.edge))
    say(
      'warn',
      `${o.case}: ${r.measure} ${format('none', r.value)} is within 10 % of the edge of its range ${r.lo}..${r.hi}.`,
    );
}

/** The run: counts that differ, forwarded series refused, problems and an interruption. */
function runNotes(run, exp, say) {
  for (const r of (exp.counts || []).filter((x) => x.agree !== 'ok')) {
    say(
      'fail',
      `Counts differ for ${r.case}, status ${r.status}: k6 ${r.k6}, Prometheus ${r.Prometheus}, InfluxDB ${r.InfluxDB}, proxy ${r.proxy}.`,
    );
  }
  for (const text of refusalProblems(run.refusals || [])) say('fail', `${text}: the forwarded series are incomplete.`);
  for (const p of run.info.problems) say('fail', `The run reported a problem: ${p}`);
  if (run.info.interrupted) say('fail', 'The run was interrupted: its later cases may not have run.');
}

/** [{level: fail | warn | info, text}] for one experiment of a run. */
export function insights(run, exp) {
  const out = [];
  const say = (level, text) => out.push({ level, text });
  for (const o of exp.outcomes.filter((x) => !x.pass)) failedCase(exp, o, say);
  for (const p of exp.phases) phaseNotes(exp, p, say);
  for (const o of exp.outcomes) caseNotes(o, say);
  runNotes(run, exp, say);
  if (!out.length)
    say(
      'info',
      'Nothing to point at: every case passed, k6 dropped nothing and kept below a core, no case near the edge of its range, the counts agree, and no store refused a write.',
    );
  return out;
}
