/*
 * The generated tables of this stack's README (`just docs`): the measured spread of each
 * comparison with the references, and the threshold it gives; per suite, which rows are judged
 * or shown.
 */
import { experiments } from '../../thresholds/plan.js';
import { comparisonBounds } from '../../thresholds/kinds/capacity.js';
import { judgedRowsTable } from '../../lab/judge/judged-rows.mjs';
import { table } from '../../lab/cli/markdown.mjs';

function jsonFilterBounds() {
  const exp = experiments['json-filter'];
  const { floors, ceilings } = comparisonBounds(exp.measuredSpread, exp.perturbMs);
  const rows = Object.entries(exp.measuredSpread.efficiency).flatMap(([server, refs]) => Object.entries(refs).map(([ref, [min, max]]) =>
    [server, `CPU per request: ${ref}'s / its own`, `${min.toFixed(2)}..${max.toFixed(2)}`, `>= ${floors[server][ref].toFixed(2)}`]));
  for (const [server, [min, max]] of Object.entries(exp.measuredSpread.overheadMs)) {
    rows.push([server, 'relayed p50 over direct at 500 r/s', `${min.toFixed(1)}..${max.toFixed(1)} ms`, `<= ${ceilings[server]} ms`]);
  }
  return `${table(['server', 'measure', 'measured (runs below)', 'threshold'], rows)}\n\nRuns: ${exp.measuredSpread.runs}`;
}

export default { 'json-filter-bounds': jsonFilterBounds, 'json-filter-judged': () => judgedRowsTable('json-filter') };
