/*
 * The last stage of a phase: its kind's judge on what was measured. A phase whose k6 or stack
 * failed fails its cases whatever the summary says; services in cgroups get a resources table
 * of the loaded window, saved beside the summary.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { resourceRows } from '../stack/resources.mjs';
import { runName } from './k6.mjs';
import { explainCase } from '../../thresholds/plan.js';

export function judgePhase(plan, kind, measured, { broken }, { run }) {
  const j = kind.judge(plan, measured);
  for (const o of j.outcomes) o.figures = kind.figures(o);
  if (broken) for (const o of j.outcomes) o.pass = false;
  // A failed case the model can explain: which single knob's value gives what was measured.
  for (const o of j.outcomes.filter((x) => !x.pass && !broken)) {
    const fits = explainCase(plan, o.case.split('/')[1], o.measured);
    if (fits)
      o.explanation = fits.length
        ? fits.map((f) => `${f.knob}=${f.value}`).join(' or ')
        : 'no single knob of the plan gives these counts';
  }
  const more = [];
  for (const o of j.outcomes.filter((x) => x.measured?.resources?.length)) {
    writeFileSync(join(run.dir, `${runName(plan)}.resources.json`), JSON.stringify(o.measured.resources, null, 1));
    more.push(resourceRows(o.case, o.measured.resources));
  }
  return { outcomes: j.outcomes, rows: j.rows, head: j.head, more };
}
