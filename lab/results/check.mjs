/*
 * Do a run's pages show what the run folder holds? Each page opened in Debian's chromium from
 * file://: no console error or failed resource; every chart drew each series with the points
 * expected (read from the uPlot instances on the page); every case of outcomes.json shown with
 * its pass or fail; a screenshot of each page saved into the run folder.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { readRun, readJson, runDir, listRuns } from './runs.mjs';
import { pointCounts } from './chart.mjs';
import { experimentPage } from './page-run.mjs';
import { historyPage, historyPath } from './page-history.mjs';
import { comparePage, comparePath } from './page-compare.mjs';
import { defaultBaseline } from './build.mjs';
import { runFigures, checkCharts, disagreement } from '../judge/chart-truth.mjs';

export const CHROMIUM = '/usr/bin/chromium';

/** What each page of a run must show, from the run folder: [{name, file, charts, cases, kind}]. */
export function expectations(results, id) {
  const dir = runDir(results, id);
  const site = join(results, 'site');
  const outcomes = readJson(join(dir, 'outcomes.json'), []);
  const run = readRun(results, id);
  // What each chart must draw, and what its series must equal among the run's figures.
  const charts = (p) => p.data.charts.map((c) => ({ id: c.id, series: pointCounts(c), spec: c }));
  const of = (name) => outcomes.filter((o) => o.case.startsWith(`${name}/`));
  const pages = [
    { name: 'runs', file: join(site, 'index.html'), kind: 'list', charts: [], cases: outcomes },
    { name: 'run', file: join(site, 'runs', id, 'index.html'), kind: 'run', charts: [], cases: outcomes },
  ];
  const infos = listRuns(results).runs.map((r) => readRun(results, r, { panels: false }));
  for (const exp of run.experiments) {
    pages.push({
      name: `run-${exp.name}`,
      file: join(site, 'runs', id, `${exp.name}.html`),
      kind: 'run',
      experiment: exp.name,
      charts: charts(experimentPage(run, exp)),
      cases: of(exp.name),
    });
    const runs = infos
      .filter((r) => r.info.suite === run.info.suite && r.experiments.some((e) => e.name === exp.name))
      .map((r) => ({ id: r.id, info: r.info, exp: r.experiments.find((e) => e.name === exp.name) }));
    pages.push({
      name: `history-${run.info.suite}.${exp.name}`,
      file: join(site, historyPath(run.info.suite, exp.name)),
      kind: 'history',
      charts: charts(historyPage(run.info.suite, exp.name, runs)),
      cases: of(exp.name),
      factor: run.info.factor,
    });
  }
  const baseline = defaultBaseline(results, id, infos);
  if (baseline) {
    // The compare page shows the experiments both runs have.
    const base = readRun(results, baseline);
    const shared = run.info.experiments.filter((e) => base.info.experiments.includes(e));
    pages.push({
      name: 'compare',
      file: join(site, comparePath(id, baseline)),
      kind: 'compare',
      charts: charts(comparePage(run, base)),
      cases: outcomes.filter((o) => shared.some((e) => o.case.startsWith(`${e}/`))),
    });
  }
  const held = MISSING_NOTES.filter((n) => existsSync(join(dir, n.file))).map((n) => n.file);
  return { id, dir, pages: pages.map((p) => ({ ...p, held })) };
}

// What a page says when a run file it reads is absent: a page saying so of a file the run folder
// holds was built before the file was written (the pages once said it of every run's counts.json).
export const MISSING_NOTES = [
  { file: 'counts.json', says: 'No counts.json in the run folder' },
  { file: 'panels.json', says: 'has no panels.json' },
];

/** What the page shows, read in the browser: its charts' data, and its cases' marks. */
function readPage() {
  const charts = (window.labCharts || []).map((c) => ({
    id: c.id,
    sized: c.u.width > 0 && c.u.height > 0,
    xLabels: (window.LAB_PAGE?.charts || []).find((s) => s.id === c.id)?.xLabels ?? null,
    x: c.u.data[0],
    series: c.u.series.slice(1).map((s, i) => ({
      label: s.label,
      points: c.u.data[i + 1].filter((v) => v != null).length,
      shown: s.show,
      values: c.u.data[i + 1],
    })),
  }));
  const cases = [...document.querySelectorAll('[data-case]')].map((el) => ({
    case: el.dataset.case,
    pass: el.dataset.pass,
    mark: el.querySelector('.mark')?.textContent ?? null,
    chart: el.querySelector('[data-chart]')?.dataset.chart ?? null,
    visible: el.getClientRects().length > 0,
  }));
  const runRows = [...document.querySelectorAll('tr[data-run]')].map((r) => ({
    run: r.dataset.run,
    passed: r.dataset.passed,
    failed: r.dataset.failed,
    text: r.textContent,
    // Where its verdict ends on the screen, against the window's width: a reader sees it unscrolled.
    verdictRight: r.querySelector('td')?.getBoundingClientRect().right ?? null,
    verdict: r.querySelector('td .mark')?.textContent ?? null,
    width: window.innerWidth,
  }));
  // Every row of a table that gives a case a verdict (the Thresholds tab's), with its mark.
  const verdictRows = [...document.querySelectorAll('tr[data-verdict-case]')].map((r) => ({
    case: r.dataset.verdictCase,
    mark: r.querySelector('.mark')?.textContent ?? null,
  }));
  return { charts, cases, runRows, verdictRows, text: document.body.innerText };
}

/** The page's charts against those drawn: each drawn, sized, with its series and their points, and none extra. */
function chartProblems(page, shown) {
  const problems = [];
  const byId = new Map(shown.charts.map((c) => [c.id, c]));
  for (const want of page.charts) {
    const got = byId.get(want.id);
    if (!got) {
      problems.push(`chart ${want.id}: not drawn`);
      continue;
    }
    if (!got.sized) problems.push(`chart ${want.id}: drawn with no size`);
    if (got.series.length !== want.series.length)
      problems.push(`chart ${want.id}: ${got.series.length} series drawn, ${want.series.length} expected`);
    want.series.forEach((s, i) => {
      const g = got.series[i];
      if (g && (g.label !== s.label || g.points !== s.points))
        problems.push(
          `chart ${want.id}: series '${s.label}' has ${g.points} points ('${g.label}'), ${s.points} expected`,
        );
      if (g && !g.shown) problems.push(`chart ${want.id}: series '${s.label}' hidden`);
    });
  }
  for (const c of shown.charts.filter((x) => !page.charts.some((w) => w.id === x.id)))
    problems.push(`chart ${c.id}: drawn, but not expected`);
  return problems;
}

/** The runs list: the run listed, with its passed and failed counts as outcomes.json has them. */
function listProblems(page, shown, id) {
  const row = shown.runRows.find((r) => r.run === id);
  const passed = page.cases.filter((o) => o.pass).length;
  if (!row) return [`run ${id}: not in the list`];
  if (Number(row.passed) !== passed || Number(row.failed) !== page.cases.length - passed)
    return [
      `run ${id}: listed ${row.passed} passed / ${row.failed} failed, outcomes.json has ${passed} / ${page.cases.length - passed}`,
    ];
  // A run whose cases all passed may still have failed (a stack broke): 'failed' is then its verdict.
  const verdict = passed === page.cases.length ? 'passed' : 'failed';
  if (row.verdict !== verdict && !(row.verdict === 'failed' && verdict === 'passed'))
    return [`run ${id}: listed as ${row.verdict}, outcomes.json says ${verdict}`];
  if (row.verdictRight === null || row.verdictRight > row.width)
    return [`run ${id}: its verdict ends at ${row.verdictRight} px, off a ${row.width} px window`];
  return [];
}

/** One case on a page: shown with its verdict, or, in a history, a point for this run, red where it failed. */
function caseProblem(page, shown, id, o) {
  // A history has a chart per case in each group of comparable runs: the one of this run's group.
  const els = shown.cases.filter((c) => c.case === o.case);
  const inGroup = (c) => shown.charts.find((x) => x.id === c.chart)?.xLabels?.includes(id);
  const el = page.kind === 'history' ? (els.find(inGroup) ?? els[0]) : els[0];
  if (!el || !el.visible) return `case ${o.case}: not on the page`;
  if (page.kind === 'history') {
    const ch = shown.charts.find((c) => c.id === el.chart);
    const at = ch?.xLabels?.indexOf(id) ?? -1;
    if (!ch || at < 0) return `case ${o.case}: no point for run ${id} in its history`;
    if ((ch.series.find((s) => s.label === 'failed')?.values[at] != null) === o.pass)
      return `case ${o.case}: ${o.pass ? 'passed but marked failed' : 'failed but not marked in red'} in its history`;
    return null;
  }
  if (el.pass !== String(o.pass) || el.mark !== (o.pass ? 'ok' : 'FAIL'))
    return `case ${o.case}: shown as ${el.mark} (${el.pass}), outcomes.json says ${o.pass ? 'pass' : 'fail'}`;
  return null;
}

/** The problems of one page: what it shows against what it must. */
export function compare(page, shown, id) {
  const problems = chartProblems(page, shown);
  for (const n of MISSING_NOTES.filter((x) => (page.held || []).includes(x.file) && shown.text?.includes(x.says)))
    problems.push(
      `the page says '${n.says}', but the run folder holds ${n.file}: built before the run's files were complete`,
    );
  if (page.kind === 'list') return [...problems, ...listProblems(page, shown, id)];
  for (const o of page.cases) {
    const problem = caseProblem(page, shown, id, o);
    if (problem) problems.push(problem);
  }
  return [...problems, ...verdictRowProblems(page, shown)];
}

/**
 * Every row that marks a case (the Thresholds tab's) against the case's verdict: a passed case has
 * no FAIL row, and a failed one at least one.
 */
function verdictRowProblems(page, shown) {
  const problems = [];
  for (const o of page.cases) {
    const rows = (shown.verdictRows || []).filter((r) => r.case === o.case);
    const failing = rows.filter((r) => r.mark === 'FAIL').length;
    if (o.pass && failing) problems.push(`case ${o.case}: passed, but ${failing} of its threshold rows say FAIL`);
    if (!o.pass && rows.length && !failing)
      problems.push(`case ${o.case}: failed, but none of its threshold rows says FAIL`);
  }
  return problems;
}

/**
 * The run page's charts as the browser drew them, against the run's figures (the series'
 * declared truths, from the page's own chart specs): rows of lab/judge/chart-truth.mjs.
 */
function drawnTruth(page, shown, expect) {
  if (page.kind !== 'run' || !page.charts.length) return [];
  expect.figures ??= runFigures(expect.dir);
  const drawn = page.charts
    .map((want) => {
      const got = shown.charts.find((c) => c.id === want.id);
      return got ? { ...want.spec, data: [got.x, ...got.series.map((s) => s.values)] } : null;
    })
    .filter(Boolean);
  return checkCharts(drawn, expect.figures, page.name, page.experiment);
}

/**
 * Opens every page of `expect` (expectations()) in chromium; returns [{name, file, problems,
 * screenshot}]. Screenshots go to <run folder>/screenshots/<page>.png unless `screenshots` is false.
 */
export async function checkPages(expect, { screenshots = true, executablePath = CHROMIUM } = {}) {
  const browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
  const out = [];
  try {
    const shots = join(expect.dir, 'screenshots');
    if (screenshots) mkdirSync(shots, { recursive: true });
    for (const page of expect.pages) {
      const problems = [];
      if (!existsSync(page.file)) {
        out.push({ name: page.name, file: page.file, problems: ['the page was not built'] });
        continue;
      }
      const tab = await browser.newPage({ viewport: { width: 1440, height: 900 } });
      tab.on('console', (m) => m.type() === 'error' && problems.push(`console error: ${m.text()}`));
      tab.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
      tab.on('requestfailed', (r) => problems.push(`failed resource: ${r.url()} (${r.failure()?.errorText})`));
      await tab.goto(pathToFileURL(page.file).href, { waitUntil: 'load' });
      const shown = await tab.evaluate(readPage);
      problems.push(...compare(page, shown, expect.id));
      const truth = drawnTruth(page, shown, expect);
      problems.push(...truth.filter((r) => r.verdict === 'DISAGREE').map((r) => `chart truth: ${disagreement(r)}`));
      const screenshot = screenshots ? join(shots, `${page.name}.png`) : null;
      if (screenshot) await tab.screenshot({ path: screenshot, fullPage: true });
      await tab.close();
      out.push({ name: page.name, file: page.file, problems, screenshot, truth });
    }
  } finally {
    await browser.close();
  }
  return out;
}
