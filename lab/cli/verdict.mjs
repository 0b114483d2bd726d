/*
 * `verdict <testid> [suite/experiment [--quick[=N]] [knobs]]`: the limiter cases of a run judged
 * from Prometheus alone. The plans come from the run's results folder or, for a run made
 * elsewhere (k6-operator), from the suite/experiment, --quick and knobs it ran with.
 */
import { join } from 'node:path';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { parseRunArgs } from './args.mjs';
import { labEnv, plansFor, openRun } from '../run/suite.mjs';
import { storesForRun } from '../stores/stores.mjs';
import { verdict as judge } from '../results/verdict.mjs';
import { formatTable, failedLines } from '../judge/table.mjs';
import { checkTestid } from '../results/runs.mjs';

export default async function verdict(words, { root, say, topology }) {
  const [testid, ...spec] = words;
  if (!testid || testid.startsWith('-'))
    throw new Error(
      'usage: ./labw verdict <testid> [suite/experiment [--quick[=N]] [knobs]] (the plan, for a run made elsewhere)',
    );
  // It names folders (results/, .lab/tmp/) and goes into PromQL: checked before either.
  checkTestid(testid);
  let plans;
  const dir = join(root, 'results', testid);
  if (spec.length) {
    plans = plansFor(parseRunArgs(spec, { target: 'suite' }));
  } else {
    if (!existsSync(join(dir, 'run.json')))
      throw new Error(`no results/${testid}: name the plan it ran (suite/experiment, --quick, knobs) after the testid`);
    const info = JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8'));
    plans = info.experiments.map((e) => JSON.parse(readFileSync(join(dir, `${info.suite}.${e}.plan.json`), 'utf8')));
  }
  const check = await openRun(root, `verdict-${testid}`, { kind: 'verdict', say, latest: false });
  let stores;
  let judged;
  try {
    stores = await storesForRun({
      root,
      env: labEnv(root),
      topology: topology(),
      tmp: check.tmp,
      dir: check.dir,
      state: check.state,
      say,
      wanted: true,
    });
    judged = await judge(stores.urls.prometheus, testid, plans);
  } finally {
    await stores?.close();
    check.close();
  }
  writeFileSync(join(check.dir, 'outcomes.json'), JSON.stringify(judged.outcomes, null, 1));
  say(`\nverdict of ${testid}, from Prometheus:\n${formatTable(judged.rows)}`);
  const passed = judged.outcomes.filter((o) => o.pass).length;
  if (passed < judged.outcomes.length) say(`failed:\n${failedLines(judged.outcomes).join('\n')}`);
  say(`cases: ${passed} passed, ${judged.outcomes.length - passed} failed`);
  return passed === judged.outcomes.length && passed > 0 ? 0 : 1;
}
