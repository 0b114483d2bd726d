/*
 * Which rows of a plan's table are judged (ok or FAIL) and which are shown, read off the plan
 * and the kind's own judge: given nothing measured, a judge prints every row a run can print
 * (the ones it prints only on a failure too, since nothing passes), each with its mark. The
 * stacks' READMEs list them per suite (`just docs`), so what a README says is judged is what
 * the table judges.
 */
import { kindFor } from '../kinds/index.mjs';
import { SHOWN } from '../judge/table.mjs';
import { plan as makePlan, experimentNamed } from '../../thresholds/plan.js';
import { table } from '../lib.mjs';

const NOTHING = { summary: { metrics: {} }, cpu: {}, cgroupSamples: {}, caps: {} };

/** Every row the plan's table can print: [{case, measure, judged}], in the table's order. */
export function rowStatus(plan) {
  const kind = kindFor(plan);
  // A kind whose k6 processes run a part each (capped: one cap level) is judged a part at a time.
  const parts = kind.k6Plan ? kind.phaseIds(plan).map((id) => kind.k6Plan(plan, { PHASE: id })) : [plan];
  const out = [];
  for (const part of parts) {
    let name = null;
    for (const r of kind.judge(part, NOTHING).rows) {
      name = r[0] || name;
      out.push({ case: name, measure: String(r[1]).trim(), judged: r[r.length - 1] !== SHOWN });
    }
  }
  return out;
}

/**
 * Markdown: per suite of an experiment, its cases grouped by the rows they print, judged and
 * shown. `phases(plan)` gives the plans as the runner judges them, where it adds to a plan
 * before judging (capped: the costs the uncapped level measured).
 */
export function judgedRowsTable(experiment, phases = (p) => [p]) {
  const rows = [];
  for (const suite of Object.keys(experimentNamed(experiment).suites)) {
    const whole = makePlan({ experiment, suite });
    const byCase = new Map(whole.cases.map((c) => [c.name, { judged: [], shown: [] }]));
    for (const r of phases(whole).flatMap(rowStatus)) byCase.get(r.case)[r.judged ? 'judged' : 'shown'].push(r.measure);
    // Cases that print the same rows, together; a measure's name may hold a comma.
    const groups = new Map();
    for (const [name, s] of byCase) {
      const cells = [s.judged.join('; ') || '-', s.shown.join('; ') || '-'];
      const key = cells.join('\n');
      if (!groups.has(key)) groups.set(key, { cells, ids: [] });
      groups.get(key).ids.push(name.split('/')[1]);
    }
    for (const { cells, ids } of groups.values())
      rows.push([
        suite,
        ids.length === whole.cases.length && ids.length > 1 ? `all ${ids.length}` : ids.join(', '),
        ...cells,
      ]);
  }
  return table(['suite', 'cases', 'judged (ok or FAIL)', 'shown'], rows);
}
