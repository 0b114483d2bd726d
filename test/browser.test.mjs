/*
 * The results site in a real browser (Debian's chromium, driven by playwright-core), on a copy
 * of test/fixtures/results/: each page from file:// without a console error or failed resource,
 * every chart with each series' points, every case with its pass or fail, a screenshot each;
 * and each of these checks seen failing on a page broken on purpose.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSite } from '../lab/results/build.mjs';
import { CHROMIUM, expectations, checkPages } from '../lab/results/check.mjs';
import results from '../lab/cli/results.mjs';
import { needs } from './lib/needs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const FIXTURE = join(root, 'test', 'fixtures', 'results');
const SMOKE = '20261123-090928-smoke';
const FAILED = '20261123-091219-spike-quick5';
const NO_METRICS = '20261123-091350-spike-quick5';
// Locally a missing chromium skips these tests; under CI it fails them (test/lib/needs.mjs).
const missing = existsSync(CHROMIUM) ? null : `${CHROMIUM} is not installed`;
const HINT = "./labw setup installs Debian's chromium";

/** A copy of the fixture as <tmp>/results, its site built. */
function built() {
  const tmp = mkdtempSync(join(tmpdir(), 'lab-browser-'));
  const dir = join(tmp, 'results');
  cpSync(FIXTURE, dir, { recursive: true });
  symlinkSync(NO_METRICS, join(dir, 'latest'));
  buildSite(root, { results: dir });
  return { tmp, dir, done: () => rmSync(tmp, { recursive: true, force: true }) };
}

/** The checks of some pages of a run, and the problems they found by page name. */
async function problemsOf(dir, id, names = null) {
  const e = expectations(dir, id);
  if (names) e.pages = e.pages.filter((p) => names.includes(p.name));
  assert.ok(e.pages.length, 'pages to check');
  return Object.fromEntries((await checkPages(e, { screenshots: false })).map((p) => [p.name, p.problems]));
}

const edit = (file, f) => writeFileSync(file, f(readFileSync(file, 'utf8')));

test(
  'every page of each fixture run passes: runs list, a run page of each kind, histories, compare; screenshots saved',
  { timeout: 180_000 },
  async (t) => {
    if (needs(t, missing, HINT)) return;
    const r = built();
    try {
      for (const id of [SMOKE, FAILED, NO_METRICS]) {
        const e = expectations(r.dir, id);
        const checked = await checkPages(e);
        for (const p of checked) {
          assert.deepEqual(p.problems, [], `${id} ${p.name}`);
          assert.ok(readFileSync(p.screenshot).subarray(1, 4).toString() === 'PNG', p.screenshot);
          assert.ok(p.screenshot.startsWith(join(r.dir, id, 'screenshots')));
        }
        const names = checked.map((p) => p.name);
        assert.ok(
          names.includes('runs') && names.includes('run') && names.some((n) => n.startsWith('history-')),
          names.join(' '),
        );
        if (id === SMOKE)
          assert.deepEqual(
            names.filter((n) => /^run-/.test(n)),
            ['run-burst', 'run-envoy-vs-nginx', 'run-caching', 'run-cdn', 'run-json-filter'],
            'a run page of each kind',
          );
        if (id !== SMOKE) assert.ok(names.includes('compare'));
        // The checks had something to check: charts with points, and every case.
        const charts = e.pages.flatMap((p) => p.charts);
        if (id !== NO_METRICS)
          assert.ok(charts.length > 20 && charts.every((c) => c.series.length), `${id}: ${charts.length} charts`);
      }
    } finally {
      r.done();
    }
  },
);

test('a chart whose data lost points, or a series, fails the check', { timeout: 60_000 }, async (t) => {
  if (needs(t, missing, HINT)) return;
  const r = built();
  try {
    const data = join(r.dir, 'site', 'runs', FAILED, 'burst.data.js');
    edit(data, (s) => {
      const page = JSON.parse(s.replace(/^window\.LAB_PAGE = /, '').replace(/;\s*$/, ''));
      const c = page.charts.find((x) => x.id === 'case-b50-9rps');
      c.data[1] = c.data[1].map((v, i) => (i % 2 ? null : v)); // every other point of '200 so far'
      const o = page.charts.find((x) => x.id.startsWith('overview-3-'));
      o.series.pop();
      o.data.pop();
      return `window.LAB_PAGE = ${JSON.stringify(page)};\n`;
    });
    const problems = (await problemsOf(r.dir, FAILED, ['run-burst']))['run-burst'];
    assert.ok(
      problems.some((p) =>
        /^chart case-b50-9rps: series '200 so far' has \d+ points \('200 so far'\), \d+ expected$/.test(p),
      ),
      problems.join('\n'),
    );
    assert.ok(
      problems.some((p) => /^chart overview-3-.*: \d+ series drawn, \d+ expected$/.test(p)),
      problems.join('\n'),
    );
  } finally {
    r.done();
  }
});

test('a case removed from a page, or shown with the wrong verdict, fails the check', { timeout: 60_000 }, async (t) => {
  if (needs(t, missing, HINT)) return;
  const r = built();
  try {
    const page = join(r.dir, 'site', 'runs', FAILED, 'envoy-vs-nginx.html');
    edit(page, (s) =>
      s
        .replace(
          /<div class="case [^"]*" data-case="envoy-vs-nginx\/nginx-1s"/,
          '<div class="case" data-gone="envoy-vs-nginx/nginx-1s"',
        )
        .replace(
          'data-case="envoy-vs-nginx/envoy-2s" data-pass="false"',
          'data-case="envoy-vs-nginx/envoy-2s" data-pass="true"',
        ),
    );
    // The run's index loses a case too, and the history page the failed run's red point.
    edit(join(r.dir, 'site', 'runs', FAILED, 'index.html'), (s) =>
      s.replace(/<tr data-case="burst\/b0-2rps"[^]*?<\/tr>/, ''),
    );
    edit(join(r.dir, 'site', 'history', 'spike.envoy-vs-nginx.data.js'), (s) => {
      const d = JSON.parse(s.replace(/^window\.LAB_PAGE = /, '').replace(/;\s*$/, ''));
      const c = d.charts.find((x) => x.id.startsWith('history-group-') && x.id.endsWith('-envoy-2s'));
      const failed = c.series.findIndex((x) => x.label === 'failed') + 1;
      c.data[failed] = c.data[failed].map(() => null);
      return `window.LAB_PAGE = ${JSON.stringify(d)};\n`;
    });
    const problems = await problemsOf(r.dir, FAILED, ['run-envoy-vs-nginx', 'run', 'history-spike.envoy-vs-nginx']);
    assert.ok(
      problems['run-envoy-vs-nginx'].includes('case envoy-vs-nginx/nginx-1s: not on the page'),
      problems['run-envoy-vs-nginx'].join('\n'),
    );
    assert.ok(
      problems['run-envoy-vs-nginx'].includes(
        'case envoy-vs-nginx/envoy-2s: shown as FAIL (true), outcomes.json says fail',
      ),
    );
    assert.deepEqual(problems.run, ['case burst/b0-2rps: not on the page']);
    assert.ok(
      problems['history-spike.envoy-vs-nginx'].some((p) => /envoy-2s.*failed but not marked in red/.test(p)),
      problems['history-spike.envoy-vs-nginx'].join('\n'),
    );
  } finally {
    r.done();
  }
});

test('a console error or a failed resource fails the check', { timeout: 60_000 }, async (t) => {
  if (needs(t, missing, HINT)) return;
  const r = built();
  try {
    edit(join(r.dir, 'site', 'runs', SMOKE, 'cdn.html'), (s) =>
      s.replace('</main>', '<script>console.error("broken on purpose")</script></main>'),
    );
    edit(join(r.dir, 'site', 'runs', SMOKE, 'caching.html'), (s) =>
      s.replace('</main>', '<img src="missing-on-purpose.png" alt=""></main>'),
    );
    rmSync(join(r.dir, 'site', 'runs', SMOKE, 'json-filter.data.js'));
    const problems = await problemsOf(r.dir, SMOKE, ['run-cdn', 'run-caching', 'run-json-filter']);
    assert.ok(problems['run-cdn'].includes('console error: broken on purpose'), problems['run-cdn'].join('\n'));
    assert.ok(
      problems['run-caching'].some((p) =>
        /^failed resource: file:.*missing-on-purpose\.png \(net::ERR_FILE_NOT_FOUND\)$/.test(p),
      ),
      problems['run-caching'].join('\n'),
    );
    // Without its data file, the page fails twice: the file, and every chart not drawn.
    assert.ok(problems['run-json-filter'].some((p) => /^failed resource: .*json-filter\.data\.js/.test(p)));
    assert.ok(problems['run-json-filter'].some((p) => /^chart .*: not drawn$/.test(p)));
  } finally {
    r.done();
  }
});

test(
  "`results check` builds a run's pages, checks them, saves the screenshots in the run folder, and fails on a broken page",
  { timeout: 120_000 },
  async (t) => {
    if (needs(t, missing, HINT)) return;
    const r = built();
    const said = [];
    const ctx = { root: r.tmp, say: (m) => said.push(m) };
    try {
      assert.equal(await results(['check', FAILED], ctx), 0, said.join('\n'));
      assert.match(said.join('\n'), /pages of run 20261123-091219-spike-quick5: \d+ passed, 0 failed/);
      assert.ok(existsSync(join(r.dir, FAILED, 'screenshots', 'run-burst.png')));
      // The default is results/latest. An outcomes.json that says otherwise than run.json's
      // counts (which the runs list shows) fails it.
      edit(join(r.dir, NO_METRICS, 'outcomes.json'), (s) =>
        JSON.stringify(JSON.parse(s).map((o, i) => (i ? o : { ...o, pass: false }))),
      );
      said.length = 0;
      assert.equal(await results(['check'], ctx), 1);
      assert.match(
        said.join('\n'),
        /run 20261123-091350-spike-quick5: listed 22 passed \/ 0 failed, outcomes\.json has 21 \/ 1/,
      );
    } finally {
      r.done();
    }
  },
);

test(
  'a page built before the run folder held counts.json, saying it is missing, fails the check',
  { timeout: 60_000 },
  async (t) => {
    if (needs(t, missing, HINT)) return;
    const r = built();
    try {
      // As a run did when it built its pages 5 ms before writing counts.json.
      const counts = join(r.dir, FAILED, 'counts.json');
      const held = readFileSync(counts);
      rmSync(counts);
      buildSite(root, { only: FAILED, results: r.dir });
      writeFileSync(counts, held);
      const problems = await problemsOf(r.dir, FAILED, ['run-burst']);
      assert.ok(
        problems['run-burst'].includes(
          "the page says 'No counts.json in the run folder', but the run folder holds counts.json: built before the run's files were complete",
        ),
        problems['run-burst'].join('\n'),
      );
      buildSite(root, { only: FAILED, results: r.dir });
      assert.deepEqual((await problemsOf(r.dir, FAILED, ['run-burst']))['run-burst'], []);
    } finally {
      r.done();
    }
  },
);
