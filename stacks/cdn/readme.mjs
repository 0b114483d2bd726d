/*
 * The generated block of this stack's README (`just docs`): which rows of each level's table
 * are judged and which are shown, each level as the runner judges it. The capped levels are
 * judged on the costs the uncapped level of the same run measured; the seed's own (its balancer
 * at 5.37 % of a core for 106.26 r/s) stand in for them here: other costs name another
 * bottleneck, not other rows.
 */
import { experiments } from '../../thresholds/plan.js';
import { withCosts } from '../../thresholds/kinds/capped.js';
import { judgedRowsTable } from '../../lab/judge/judged-rows.mjs';

const seed = experiments.cdn.seedFigures['uncapped-load'];
const costs = { 'cdn-lb': seed.lbCpuPct / 100 / seed.rps };
const levels = (p, capped) => ({ ...p, cases: p.cases.filter((c) => Boolean(c.level.cpu) === capped) });
const phases = (p) => [levels(p, false), withCosts(levels(p, true), costs, "the seed's", { seed: seed.rps, measured: null })];

export default { 'cdn-judged': () => judgedRowsTable('cdn', phases) };
