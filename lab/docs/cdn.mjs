/*
 * The generated block of this stack's README (`just docs`): which rows of each level's table
 * are judged and which are shown, each level as the runner judges it. The capped levels are
 * judged on the costs the cost level of the same run measured; the seed's own (its balancer
 * at 5.37 % of a core for 106.26 r/s) stand in for them here: other costs name another
 * bottleneck, not other rows.
 */
import { experiments } from '../../thresholds/plan.js';
import { withCosts } from '../../thresholds/kinds/capped.js';
import { judgedRowsTable } from '../results/judged-rows.mjs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { recordedRuns, recordedLine, table } from '../lib.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const seed = experiments.cdn.seedFigures['uncapped-load'];
const costs = { 'cdn-lb': seed.lbCpuPct / 100 / seed.rps };
const predicted = (c) => Boolean(c.level.cpu) && !c.level.measuresCosts;
const levels = (p, judged) => ({ ...p, cases: p.cases.filter((c) => predicted(c) === judged) });
const phases = (p) => [
  levels(p, false),
  withCosts(levels(p, true), costs, "the seed's", { seed: seed.rps, measured: null }),
];

/** Per cap level of a recorded run: its throughput, the model's, and the balancer's CPU per request. */
const levelsOf = (r) =>
  Object.fromEntries(
    r.outcomes.map((o) => {
      const lb = o.measured.resources.find((x) => x.service === 'cdn-lb');
      return [
        o.case.split('/')[1].split('-')[0],
        { rps: o.measured.rps, model: o.expected.rps?.model, cost: lb.cpuS / o.measured.requests },
      ];
    }),
  );

/** Least-most of `xs` to `d` places, as the text quotes a spread. */
const range = (xs, d = 2) => `${Math.min(...xs).toFixed(d)}-${Math.max(...xs).toFixed(d)}`;

/** Measured over the model at level `id` (cap `cap`), the model on the cost level `on` measured. */
const onCost = (l, id, cap, on) => l[id].rps / (cap / l[on].cost);

/**
 * A run's row: the uncapped cost, the 4 % level (`calib`, its id), and at 2 % and 1 % measured /
 * model with the costs measured uncapped and at 4 %.
 */
function throttlingRow(r, l, calib = 'cpu4') {
  const cell = (id, cap) =>
    `${l[id].rps.toFixed(0)}, ${(l[id].cost * 1e6).toFixed(0)}, x${onCost(l, id, cap, 'uncapped').toFixed(2)}, x${onCost(l, id, cap, calib).toFixed(2)}`;
  return [
    r.testid,
    (l.uncapped.cost * 1e6).toFixed(1),
    `${l[calib].rps.toFixed(0)}, ${(l[calib].cost * 1e6).toFixed(0)}`,
    cell('cpu2', 0.02),
    cell('cpu1', 0.01),
  ];
}

/**
 * The spreads the text reads off the table, and a fixed wake-up cost per CFS period fitted on
 * each run's 4 % and 2 % levels (rps = (cap - w) / c) asked for its 1 % level.
 */
function throttlingText(levels) {
  const of = (id, f) => levels.map((l) => f(l[id]));
  const before = (id, cap) => levels.map((l) => onCost(l, id, cap, 'uncapped'));
  const after = (id, cap) => levels.map((l) => onCost(l, id, cap, 'cpu4'));
  const wakeUp = levels.map((l) => {
    const c = 0.02 / (l.cpu4.rps - l.cpu2.rps);
    return (0.01 - (0.04 - l.cpu4.rps * c)) / c / l.cpu1.rps;
  });
  const us = (id) =>
    range(
      of(id, (x) => x.cost * 1e6),
      0,
    );
  const rps = (id) =>
    range(
      of(id, (x) => x.rps),
      0,
    );
  return [
    `- Measured throughput: ${rps('cpu2')} r/s at 2 %, ${rps('cpu1')} r/s at 1 %.`,
    `- The uncapped cost moved between ${range(
      of('uncapped', (x) => x.cost * 1e6),
      1,
    )} us: most of \`before\`'s spread (${range(before('cpu2', 0.02))} at 2 %, ${range(before('cpu1', 0.01))} at 1 %).`,
    `- Calibrated at 4 %, the spread is ${range(after('cpu2', 0.02))} at 2 % and ${range(after('cpu1', 0.01))} at 1 %: the balancer's cost per request rises as its cap falls (${us('cpu4')} us at 4 %, ${us('cpu2')} at 2 %, ${us('cpu1')} at 1 %), by a factor that changed between runs (1 % over 4 %: ${range(levels.map((l) => l.cpu1.cost / l.cpu4.cost))}).`,
    `- A fixed wake-up cost per 100 ms period, fitted on the 4 % and 2 % levels of each run, predicts the 1 % level at ${range(wakeUp)} of what was measured.`,
  ].join('\n');
}

/**
 * The recorded load runs with a 4 % calibration level: per level the throughput and the
 * balancer's CPU per request, and measured / model with the cost measured uncapped (as judged)
 * and with the cost measured at 4 % (the calibration).
 */
function throttling() {
  const command = 'just test load/cdn --quick cpu_levels=0,4,2,1 mem_levels=0,0,25,15';
  const runs = recordedRuns(
    ROOT,
    (i) => i.suite === 'load' && i.experiments.join() === 'cdn' && i.knobs?.cdn?.cpu_levels === '0,4,2,1',
  );
  const levels = runs.map(levelsOf);
  const rows = runs.map((r, i) => throttlingRow(r, levels[i]));
  const head = [
    'run (testid)',
    'uncapped: balancer us/req',
    '4 %: r/s, us/req',
    '2 %: r/s, us/req, before, after',
    '1 %: r/s, us/req, before, after',
  ];
  return `${recordedLine(runs, command)}:\n\n${table(head, rows)}\n\n${throttlingText(levels)}`;
}

/**
 * The recorded default load runs, their costs measured at the cost level (4 %): per level the
 * throughput and the balancer's CPU per request, and measured / model on the uncapped cost and
 * on the 4 % cost (as judged).
 */
function costLevel() {
  const runs = recordedRuns(
    ROOT,
    (i) => i.suite === 'load' && i.experiments.join() === 'cdn' && !Object.keys(i.knobs?.cdn ?? {}).length,
  ).filter((r) => r.outcomes.some((o) => o.case === 'cdn/costs-cpu4-load'));
  const levels = runs.map(levelsOf);
  const head = [
    'run (testid)',
    'uncapped: balancer us/req',
    '4 % (the cost level): r/s, us/req',
    '2 %: r/s, us/req, on the uncapped cost, on the 4 % cost (judged)',
    '1 %: the same',
  ];
  const spread = (on) =>
    `${range(levels.map((l) => onCost(l, 'cpu2', 0.02, on)))} at 2 %, ${range(levels.map((l) => onCost(l, 'cpu1', 0.01, on)))} at 1 %`;
  return [
    `${recordedLine(runs, 'just test load/cdn --quick')}:`,
    table(
      head,
      runs.map((r, i) => throttlingRow(r, levels[i], 'costs')),
    ),
    `- Measured over the model, judged on the 4 % cost: ${spread('costs')}; on the uncapped cost it would have been ${spread('uncapped')}.`,
  ].join('\n\n');
}

export default {
  'cdn-cost-level': costLevel,
  'cdn-judged': () => judgedRowsTable('cdn', phases),
  'cdn-throttling': throttling,
};
