/*
 * How late k6 kept the limiter's schedule, from the recorded runs (docs/runs/): per run the
 * spread of each case's lateness (how much later than the schedule its latest arrival started
 * than its earliest), the figure the model's JITTER_MS must cover and every run judges.
 */
import { recordedRuns, recordedLine, table } from '../lib.mjs';
import { JITTER_MS } from '../../thresholds/models/limiter-replay.js';
import { LATE_MEASURE } from '../kinds/limiter.mjs';

/** The recorded runs that measured it: [{testid, info, spreads: {case: ms}}]. */
export function recordedLateness(root) {
  return recordedRuns(root)
    .map((r) => ({
      ...r,
      spreads: Object.fromEntries(
        r.outcomes.flatMap((o) =>
          (o.figures || [])
            .filter((f) => f.measure === LATE_MEASURE && f.measured !== null)
            .map((f) => [o.case, f.measured]),
        ),
      ),
    }))
    .filter((r) => Object.keys(r.spreads).length);
}

const round = (v) => (Math.round(v * 10) / 10).toFixed(1);
const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];

/** The generated block: per run and experiment, the cases' median and largest spread. */
export function latenessTable(root) {
  const runs = recordedLateness(root);
  const rows = runs.flatMap((r) => {
    const byExp = {};
    for (const [c, v] of Object.entries(r.spreads)) (byExp[c.split('/')[0]] ||= []).push(v);
    return Object.entries(byExp).map(([exp, xs]) => [
      r.testid,
      `x${r.info.factor}${r.info.metrics === false ? ', --no-metrics' : ''}`,
      exp,
      String(xs.length),
      round(quantile(xs, 0.5)),
      round(Math.max(...xs)),
    ]);
  });
  const all = runs.flatMap((r) => Object.values(r.spreads));
  return (
    `${recordedLine(runs, 'just test spike --quick[=N]')}:\n\n${table(['run (testid)', '--quick', 'experiment', 'cases', 'median spread ms', 'largest spread ms'], rows)}\n\n` +
    `Largest over ${all.length} cases: ${round(Math.max(...all))} ms; the model sweeps up to JITTER_MS = ${JITTER_MS} ms.`
  );
}
