/*
 * `panels [testid]`: does every panel query of every dashboard return data for a run (default:
 * the latest), and does each series say what the run measured? Runs each query against the
 * stores; a panel with no data fails (exit 1), and so does a series that disagrees with the
 * run's own figures (lab/judge/chart-truth.mjs), naming the board, panel, series and both.
 */
import { join } from 'node:path';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { experiments } from '../../thresholds/plan.js';
import { labEnv, openRun } from '../run/suite.mjs';
import { storesForRun } from '../stores/stores.mjs';
import { checkPanels } from '../stores/panels.mjs';
import { formatTable } from '../judge/table.mjs';
import { checkTestid, runNamed, readRun } from '../results/runs.mjs';
import { runFigures, checkBoards, checkCharts } from '../judge/chart-truth.mjs';
import { experimentPage } from '../results/page-run.mjs';
import { sayTruth } from './truth-table.mjs';

export default async function panels([testid, ...rest], { root, say, topology }) {
  if (rest.length) throw new Error(`usage: ./labw panels [testid]; got '${[testid, ...rest].join(' ')}'`);
  // A checked testid that is a folder under results/ (or what results/latest names).
  const dir = join(root, 'results', runNamed(join(root, 'results'), testid));
  if (!existsSync(join(dir, 'run.json')))
    throw new Error(`no run ${testid || '(latest)'} with metrics under results/: run './labw test smoke' first`);
  const info = JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8'));
  // Its testid goes into the queries: a run.json from elsewhere (an artifact) is checked too.
  checkTestid(info.testid);
  if (!info.metrics) throw new Error(`run ${info.testid} ran with --no-metrics: nothing in the stores to check`);
  const t = topology();
  const check = await openRun(root, `panels-${info.testid}`, { kind: 'panels', say, latest: false });
  let stores;
  let results;
  try {
    stores = await storesForRun({
      root,
      env: labEnv(root),
      topology: t,
      tmp: check.tmp,
      dir: check.dir,
      state: check.state,
      say,
      wanted: true,
    });
    // A capped phase saves its resources table: the run put services in cgroups.
    const cgroups = readdirSync(dir).some((f) => f.endsWith('.resources.json'));
    results = await checkPanels(root, stores.urls, { ...info, cgroups, allExperiments: Object.keys(experiments) });
  } finally {
    await stores?.close();
    check.close();
  }
  const rows = results.map((r) => [
    r.board,
    r.panel,
    r.refId ?? '',
    r.skipped ? `skipped: ${r.skipped}` : r.error ? `error: ${r.error}` : `${r.series} series, ${r.points} points`,
    r.skipped ? '-' : r.ok ? 'ok' : 'FAIL',
  ]);
  say(formatTable(rows, ['dashboard', 'panel', 'query', 'returned', 'pass']));
  for (const r of results.filter((x) => x.query && !x.ok))
    say(`\nFAIL ${r.board} / ${r.panel} ${r.refId}:\n  ${r.query}`);
  const failed = results.filter((r) => !r.skipped && !r.ok).length;
  writeFileSync(join(check.dir, 'panels.json'), JSON.stringify(results, null, 1));
  say(
    `\npanels of run ${info.testid}: ${results.filter((r) => r.ok).length} queries returned data, ${failed} returned none, ${results.filter((r) => r.skipped).length} skipped`,
  );
  const figures = runFigures(dir);
  // The run pages' charts as they are built from the run folder (the browser check proves that
  // each is drawn with these points: lab/results/check.mjs).
  const run = readRun(join(root, 'results'), info.testid);
  const pages = run.experiments.flatMap((exp) =>
    checkCharts(experimentPage(run, exp).data.charts, figures, `page ${exp.name}`, exp.name),
  );
  const truth = [...checkBoards(results, figures), ...pages];
  writeFileSync(join(check.dir, 'chart-truth.json'), JSON.stringify(truth, null, 1));
  const disagree = sayTruth(truth, say, `the boards and the run pages against run ${info.testid}'s own figures`);
  return failed || disagree ? 1 : 0;
}
