/*
 * Building the results site: results/<run>/ folders in, results/site/ out (the runs list, each
 * run's pages, each test's history, each run compared with its baseline, and the assets: the
 * pages' script bundled with uPlot by esbuild). buildSite(root, {only}) is what a run calls at
 * its end to add its own pages.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';
import { listRuns, readRun, readJson, runDir, checkTestid } from './runs.mjs';
import { dataScript } from './layout.mjs';
import { factorOf, isPlain } from './run-kind.mjs';
import { runsPage } from './page-runs.mjs';
import { experimentPage, runIndexPage } from './page-run.mjs';
import { historyPage, historyPath } from './page-history.mjs';
import { comparePage, comparePath } from './page-compare.mjs';

const here = dirname(fileURLToPath(import.meta.url));

/** The results folder of a tree, unless a caller names another (the tests use copies). */
const resultsOf = (root, results) => results || join(root, 'results');

/** Writes a page and its data file under the site. */
export function writePage(site, p) {
  const file = join(site, p.path);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, p.html);
  if (p.data) writeFileSync(file.replace(/\.html$/, '.data.js'), dataScript(p.data));
  return file;
}

/** The pages' script and styles: client/site.js with uPlot, bundled into site/assets/. */
export function buildAssets(site) {
  buildSync({
    entryPoints: [join(here, 'client', 'site.js')],
    bundle: true,
    minify: true,
    format: 'iife',
    target: 'es2020',
    outdir: join(site, 'assets'),
    entryNames: 'site',
    logLevel: 'warning',
  });
}

/** results/baselines.json: {suite: testid}. */
export const readBaselines = (results) => readJson(join(results, 'baselines.json'), {});

/** Marks a run as its suite's baseline. */
export function markBaseline(results, id) {
  runDir(results, id);
  const run = readRun(results, id, { panels: false });
  const all = { ...readBaselines(results), [run.info.suite]: id };
  writeFileSync(join(results, 'baselines.json'), `${JSON.stringify(all, null, 1)}\n`);
  return run.info.suite;
}

/**
 * The baseline a run is compared with: its suite's marked one, else the latest plain run (no
 * what-if knobs, no perturbation) of its suite before it whose experiments ran as this run's
 * did (factor, segments), with the same experiments, else sharing any; null if none. A what-if
 * or perturbed run is thus compared with the plain run it departs from, never with another.
 */
export function defaultBaseline(results, id, infos = null) {
  const all = infos || listRuns(results).runs.map((r) => readRun(results, r, { panels: false }));
  const me = all.find((r) => r.id === id);
  const marked = readBaselines(results)[me.info.suite];
  if (marked && marked !== id && all.some((r) => r.id === marked)) return marked;
  const shared = (r) => me.info.experiments.filter((e) => r.info.experiments.includes(e));
  const alike = (r) =>
    shared(r).every((e) => factorOf(r.info, e) === factorOf(me.info, e)) &&
    (r.info.segments || 1) === (me.info.segments || 1);
  const before = all
    .filter((r) => r.id < id && r.info.suite === me.info.suite && isPlain(r.info) && alike(r))
    .sort((a, b) => (a.id < b.id ? 1 : -1));
  const same = (r) =>
    r.info.experiments.length === me.info.experiments.length && shared(r).length === me.info.experiments.length;
  return (before.find(same) ?? before.find((r) => shared(r).length > 0))?.id ?? null;
}

/** Builds the compare page of `a` against `b` (default: its baseline); returns its file, or null without a baseline. */
export function buildCompare(root, a, b = null, { results: given } = {}) {
  const results = resultsOf(root, given);
  checkTestid(a);
  runDir(results, a);
  const base = b ?? defaultBaseline(results, a);
  if (base === null) return null;
  runDir(results, base);
  const site = join(results, 'site');
  buildAssets(site);
  return writePage(site, comparePage(readRun(results, a), readRun(results, base)));
}

/** Every (suite, experiment) pair of the runs, with its runs (newest first). */
function histories(infos) {
  const out = new Map();
  for (const r of infos) {
    for (const exp of r.experiments) {
      const key = `${r.info.suite}.${exp.name}`;
      if (!out.has(key)) out.set(key, { suite: r.info.suite, experiment: exp.name, runs: [] });
      out.get(key).runs.push({ id: r.id, info: r.info, exp });
    }
  }
  return [...out.values()];
}

/**
 * Builds the site into <results>/site/: everything, or with `only` (a testid) that run's pages,
 * its compare page, the runs list and the histories it is in. Returns {site, pages, skipped}.
 */
export function buildSite(root, { only = null, results: given = null } = {}) {
  const results = resultsOf(root, given);
  if (only !== null) runDir(results, only);
  const site = join(results, 'site');
  if (only === null) rmSync(site, { recursive: true, force: true });
  const { runs, skipped } = listRuns(results);
  const infos = runs.map((id) => readRun(results, id, { panels: false }));
  const hist = histories(infos);
  const pages = [];
  const put = (p) => pages.push(writePage(site, p));
  buildAssets(site);
  for (const id of only === null ? runs : [only]) {
    if (!runs.includes(id)) continue; // a run under way: no run.json yet
    const run = readRun(results, id);
    const baseline = defaultBaseline(results, id, infos);
    const compare = baseline
      ? put(comparePage(run, readRun(results, baseline))) && `../../${comparePath(id, baseline)}`
      : null;
    const historyOf = Object.fromEntries(
      run.experiments.map((e) => [e.name, `../../${historyPath(run.info.suite, e.name)}`]),
    );
    put(runIndexPage(run, { compare, baseline, history: historyOf }));
    for (const exp of run.experiments) put(experimentPage(run, exp, { history: historyOf[exp.name], compare }));
  }
  const suite = only === null ? null : infos.find((r) => r.id === only)?.info.suite;
  for (const h of hist) {
    if (only !== null && !(h.suite === suite && h.runs.some((r) => r.id === only))) continue;
    put(historyPage(h.suite, h.experiment, h.runs));
  }
  put(
    runsPage(
      infos,
      hist.map((h) => ({
        suite: h.suite,
        experiment: h.experiment,
        path: historyPath(h.suite, h.experiment),
        runs: h.runs.length,
      })),
    ),
  );
  return { site, pages, skipped };
}

/** The site's index page, for a command to print. */
export const siteIndex = (root, given = null) => join(resultsOf(root, given), 'site', 'index.html');

/** How large a built page is with everything it loads (its HTML, data file and the shared assets), in bytes. */
export function pageWeight(file) {
  const html = readFileSync(file, 'utf8');
  let n = Buffer.byteLength(html);
  for (const m of html.matchAll(/(?:src|href)="([^"#]+\.(?:js|css))"/g)) {
    try {
      n += readFileSync(join(dirname(file), m[1])).length;
    } catch {
      // a missing asset: the browser tests report it
    }
  }
  return n;
}
