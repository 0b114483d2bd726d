/*
 * The README's sample of a run's table, from a recorded run (docs/runs/): its plans rebuilt
 * from its run.json, each judged again on the folder's summaries and sends, as the runner
 * printed it, cut to its first rows. The sample is thus what today's lab prints for that run.
 */
import { join } from 'node:path';
import { plan as makePlan } from '../../thresholds/plan.js';
import { kindFor } from '../kinds/index.mjs';
import { measuredFromFolder } from '../results/cases.mjs';
import { readRun } from '../results/runs.mjs';
import { formatTable } from '../judge/table.mjs';
import { recordedRuns } from '../lib.mjs';
import { isPlain } from '../results/run-kind.mjs';

/** The newest plain recorded run of `suite` at `factor`, judged again: its table's first `rows` rows. */
export function runSample(root, { suite = 'spike', factor = 2, rows: shown = 8 } = {}) {
  const runs = recordedRuns(root, (info) => info.suite === suite && info.factor === factor && isPlain(info));
  if (!runs.length)
    throw new Error(`no recorded plain ${suite} --quick=${factor} run in docs/runs/ for the README's sample`);
  const { testid } = runs[runs.length - 1];
  const run = readRun(join(root, 'docs', 'runs'), testid, { panels: false });
  let head = null;
  const rows = [];
  const outcomes = [];
  for (const exp of run.experiments) {
    const plan = makePlan({ experiment: exp.name, suite, factor, segments: run.info.segments ?? 1 });
    const kind = kindFor(plan);
    // One phase per experiment in this suite (a kind with phases would need the runner's walk).
    if (kind.phases) throw new Error(`${exp.name}: the README's sample takes experiments of one phase`);
    const judged = kind.judge(plan, measuredFromFolder({ ...exp.phases[0], plan }));
    head ??= judged.head;
    rows.push(...judged.rows);
    outcomes.push(...judged.outcomes);
  }
  const passed = outcomes.filter((o) => o.pass).length;
  const cmd = `$ ./labw test ${suite} --quick=${factor}      # run ${testid} (docs/runs/)`;
  return [
    '```',
    cmd,
    formatTable(rows.slice(0, shown), head ?? undefined),
    '...',
    `cases: ${passed} passed, ${outcomes.length - passed} failed`,
    '```',
  ].join('\n');
}
