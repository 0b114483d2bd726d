/*
 * The last stage of a phase: its kind's judge on what was measured. A phase whose k6 or stack
 * failed fails its cases whatever the summary says; services in cgroups get a resources table
 * of the loaded window, saved beside the summary.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { resourceRows } from '../stack/resources.mjs';
import { runName } from '../lib/run-names.mjs';
import { explainCase } from '../../thresholds/plan.js';

/** A diagnosis in words: each knob's values that give the counts, or how far the search went. */
const fitWords = (fits) =>
  fits.found.length
    ? `${fits.found.map((f) => `${f.knob}=${f.lo === f.hi ? f.lo : `${f.lo}..${f.hi}`} (planned ${f.planned})`).join(' or ')}${fits.on === 'replay' ? ', replayed over what k6 sent' : ''}`
    : `no single knob of the plan gives these counts (searched ${fits.searched.join('; ')})`;

export function judgePhase(plan, kind, measured, { broken }, { run }) {
  const j = kind.judge(plan, measured);
  for (const o of j.outcomes) o.figures = kind.figures(o);
  if (broken) for (const o of j.outcomes) o.pass = false;
  // A failed case the model can explain: which single knob's value gives what was measured.
  for (const o of j.outcomes.filter((x) => !x.pass && !broken)) {
    const fits = explainCase(plan, o.case.split('/')[1], o.measured, o.replayInput ?? null);
    if (fits) o.explanation = fitWords(fits);
  }
  const more = [];
  for (const o of j.outcomes.filter((x) => x.measured?.resources?.length)) {
    writeFileSync(join(run.dir, `${runName(plan)}.resources.json`), JSON.stringify(o.measured.resources, null, 1));
    more.push(resourceRows(o.case, o.measured.resources));
  }
  return { outcomes: j.outcomes, rows: j.rows, head: j.head, more };
}
