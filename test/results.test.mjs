/*
 * The results site's builder on a copy of test/fixtures/results/: the pages it writes, every
 * case on them, the runs newest first, what a --no-metrics run's page says, the insights, the
 * baseline, and a testid refused before it names any path.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSite, buildCompare, markBaseline, defaultBaseline } from '../lab/results/build.mjs';
import { checkTestid, runDir, runNamed, readRun } from '../lab/results/runs.mjs';
import { rangesOf } from '../lab/results/cases.mjs';
import { insights, k6Cpu } from '../lab/results/insights.mjs';
import { format } from '../lab/results/units.js';
import { resultKinds } from '../lab/results/kinds.mjs';
import { kinds } from '../lab/kinds/index.mjs';
import results from '../lab/cli/results.mjs';
import { plan as makePlan } from '../thresholds/plan.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const FIXTURE = join(root, 'test', 'fixtures', 'results');
const SMOKE = '20261123-090928-smoke';
const SPIKE = '20261123-091050-spike-quick5';
const FAILED = '20261123-091219-spike-quick5';
const NO_METRICS = '20261123-091350-spike-quick5';

/** A copy of the fixture as <tmp>/results, with results/latest. */
function copy() {
  const tmp = mkdtempSync(join(tmpdir(), 'lab-results-'));
  const dir = join(tmp, 'results');
  cpSync(FIXTURE, dir, { recursive: true });
  symlinkSync(NO_METRICS, join(dir, 'latest'));
  return { tmp, dir, done: () => rmSync(tmp, { recursive: true, force: true }) };
}

const read = (...p) => readFileSync(join(...p), 'utf8');
const dataOf = (file) =>
  JSON.parse(
    read(file)
      .replace(/^window\.LAB_PAGE = /, '')
      .replace(/;\s*$/, ''),
  );

test("the site: a runs list, each run's index and experiment pages, each history, compare pages and the assets", () => {
  const r = copy();
  try {
    const { site, pages } = buildSite(root, { results: r.dir });
    assert.equal(site, join(r.dir, 'site'));
    for (const f of ['index.html', 'assets/site.js', 'assets/site.css']) assert.ok(existsSync(join(site, f)), f);
    for (const id of [SMOKE, SPIKE, FAILED, NO_METRICS]) {
      const run = readRun(r.dir, id, { panels: false });
      assert.ok(existsSync(join(site, 'runs', id, 'index.html')), id);
      for (const e of run.info.experiments) {
        assert.ok(existsSync(join(site, 'runs', id, `${e}.html`)), `${id}/${e}`);
        assert.ok(existsSync(join(site, 'history', `${run.info.suite}.${e}.html`)), `${run.info.suite}.${e}`);
      }
    }
    // Each run compared with the run of its suite before it; the first of a suite has none.
    assert.deepEqual(
      readdirSync(join(site, 'compare'))
        .filter((f) => f.endsWith('.html'))
        .sort(),
      [`${FAILED}.vs.${SPIKE}.html`, `${NO_METRICS}.vs.${FAILED}.html`],
    );
    // 4 run indexes, 11 experiment pages, 7 histories, 2 compare pages and the runs list.
    assert.equal(pages.length, 4 + 11 + 7 + 2 + 1);
    // The bundle is uPlot's, drawn by the pages' own script.
    assert.match(read(site, 'assets', 'site.js'), /uplot/i);
  } finally {
    r.done();
  }
});

test("every case of outcomes.json is on its experiment's page and the run's index, with its pass or fail", () => {
  const r = copy();
  try {
    buildSite(root, { results: r.dir });
    for (const id of [SMOKE, FAILED, NO_METRICS]) {
      const outcomes = JSON.parse(read(r.dir, id, 'outcomes.json'));
      const index = read(r.dir, 'site', 'runs', id, 'index.html');
      for (const o of outcomes) {
        const tag = `data-case="${o.case}" data-pass="${o.pass}"`;
        assert.ok(read(r.dir, 'site', 'runs', id, `${o.case.split('/')[0]}.html`).includes(tag), `${id}: ${o.case}`);
        assert.ok(index.includes(tag), `${id} index: ${o.case}`);
      }
    }
    assert.ok(
      read(r.dir, 'site', 'runs', FAILED, 'envoy-vs-nginx.html').includes(
        'data-case="envoy-vs-nginx/envoy-2s" data-pass="false"',
      ),
    );
  } finally {
    r.done();
  }
});

test("the runs list is newest first, with each run's counts, and filters by suite and experiment", () => {
  const r = copy();
  try {
    buildSite(root, { results: r.dir });
    const html = read(r.dir, 'site', 'index.html');
    const ids = [...html.matchAll(/data-run="([^"]+)"/g)].map((m) => m[1]);
    assert.deepEqual(ids, [NO_METRICS, FAILED, SPIKE, SMOKE]);
    assert.match(
      html,
      new RegExp(
        `data-run="${FAILED}" data-suite="spike" data-experiments=" burst envoy-vs-nginx " data-passed="21" data-failed="1"`,
      ),
    );
    assert.match(html, /<select id="filter-suite">/);
    assert.match(html, /<select id="filter-experiment">/);
  } finally {
    r.done();
  }
});

test('a bad testid is refused before any path is built from it', () => {
  const r = copy();
  try {
    for (const bad of [
      '../../etc',
      '20261123-091050-spike-quick5/../..',
      '/etc/passwd',
      'latest',
      '20261123-091050-SPIKE',
      '',
      undefined,
    ]) {
      assert.throws(() => checkTestid(bad), /not a testid/, String(bad));
      // Refused as not a testid even where no results folder exists: no path was looked at.
      assert.throws(() => runDir('/nonexistent', bad), /not a testid/, String(bad));
      assert.throws(() => buildSite(root, { only: bad ?? 'x', results: '/nonexistent' }), /not a testid/, String(bad));
      assert.throws(
        () => buildCompare(root, bad ?? 'x', null, { results: '/nonexistent' }),
        /not a testid/,
        String(bad),
      );
    }
    // A name of the right form that is a link out of results/, not a folder in it.
    symlinkSync('/etc', join(r.dir, '20990101-000000-elsewhere'));
    assert.throws(() => runDir(r.dir, '20990101-000000-elsewhere'), /no run/);
    assert.throws(() => runDir(r.dir, '20990101-000000-absent'), /no run/);
    // results/latest pointing outside the form is refused too.
    rmSync(join(r.dir, 'latest'));
    symlinkSync('../elsewhere', join(r.dir, 'latest'));
    assert.throws(() => runNamed(r.dir, 'latest'), /not a testid/);
  } finally {
    r.done();
  }
});

test('the command refuses a bad testid and a bad port, and names what it built', async () => {
  const r = copy();
  const said = [];
  const ctx = { root: r.tmp, say: (m) => said.push(m) };
  try {
    await assert.rejects(results(['compare', '../x'], ctx), /not a testid/);
    await assert.rejects(results(['baseline', '20261123-000000-none'], ctx), /no run/);
    await assert.rejects(results(['serve', '--port=70000'], ctx), /port number/);
    await assert.rejects(results(['nonsense'], ctx), /unknown 'nonsense'/);
    assert.equal(await results([], ctx), 0);
    assert.match(said.join('\n'), /results site: results\/site\/index\.html \(\d+ pages/);
    assert.equal(await results(['compare', FAILED], ctx), 0);
    assert.equal(said.at(-1), `results/site/compare/${FAILED}.vs.${SPIKE}.html`);
    await assert.rejects(results(['compare', SPIKE], ctx), /no baseline/);
  } finally {
    r.done();
  }
});

test("a --no-metrics run's page is built from the summary alone and says what is missing and why", () => {
  const r = copy();
  try {
    buildSite(root, { results: r.dir });
    const html = read(r.dir, 'site', 'runs', NO_METRICS, 'burst.html');
    assert.match(
      html,
      /made with --no-metrics: no metrics store ran, so there are no time series\. Missing: the overview over time/,
    );
    assert.match(html, /without the stores there is nothing to compare k6&#39;s counts with/);
    // What the summary and the folder give: thresholds, cases with the terminal's rows, HTTP, CPU.
    assert.match(html, /http_reqs\{case:b50-9rps,status:200\}/);
    assert.match(html, /<td>200<\/td><td>230<\/td><td>225\.\.235<\/td>/);
    const data = dataOf(join(r.dir, 'site', 'runs', NO_METRICS, 'burst.data.js'));
    assert.deepEqual(
      data.charts.map((c) => c.id).filter((id) => !id.startsWith('res-')),
      [],
      'no chart but CPU per service',
    );
    assert.ok(data.charts.some((c) => c.id === 'res-k6'));
  } finally {
    r.done();
  }
});

test("the pages draw the boards, the model's course, the failed run in red, and insights", () => {
  const r = copy();
  try {
    buildSite(root, { results: r.dir });
    const page = (id, e) => dataOf(join(r.dir, 'site', 'runs', id, `${e}.data.js`));
    // The model's band over time: the plan's (FAILED's burst plan has one), else replayed from the plan.
    const withCourse = page(FAILED, 'burst').charts.find((c) => c.id === 'case-b50-9rps');
    assert.deepEqual(
      withCourse.series.map((s) => s.label),
      ['200 so far', '503 so far', 'model 200 (max)', 'model 200 (min)', 'model 503 (max)', 'model 503 (min)'],
    );
    const plan = JSON.parse(read(r.dir, FAILED, 'spike.burst.plan.json')).cases.find((c) => c.id === 'b50-9rps');
    assert.equal(withCourse.data[3].filter((v) => v !== null).length, plan.course.tMs.length);
    const replayed = page(SPIKE, 'burst').charts.find((c) => c.id === 'case-b50-9rps');
    assert.equal(replayed.series[2].label, 'model 200 (max)');
    // The band ends at the range today's model gives that plan (thresholds/plan.js caseCourse
    // replays the same trials).
    const { factor } = JSON.parse(read(r.dir, SPIKE, 'spike.burst.plan.json'));
    const spikePlan = makePlan({ experiment: 'burst', suite: 'spike', factor }).cases.find((c) => c.id === 'b50-9rps');
    assert.equal(replayed.data[3].filter((v) => v !== null).at(-1), spikePlan.expected.ok.max);
    // The overview and the experiment's board, from panels.json, in the experiment's window only.
    const ids = page(SMOKE, 'caching').charts.map((c) => c.id);
    assert.ok(
      ids.some((id) => id.startsWith('overview-2-')) && ids.some((id) => id.startsWith('board-4-')),
      ids.join(' '),
    );
    assert.ok(
      !page(SMOKE, 'caching').charts.some((c) => c.series.some((s) => /b0-smoke/.test(s.label))),
      'no burst series on the caching page',
    );
    // History: the failed case's point is in the 'failed' series, at its run.
    const hist = dataOf(join(r.dir, 'site', 'history', 'spike.envoy-vs-nginx.data.js')).charts.find(
      (c) => c.id.startsWith('history-group-') && c.id.endsWith('-envoy-2s'),
    );
    const at = hist.xLabels.indexOf(FAILED);
    const failed = hist.series.findIndex((s) => s.label === 'failed') + 1;
    assert.notEqual(hist.data[failed][at], null);
    assert.equal(hist.data[failed][hist.xLabels.indexOf(SPIKE)], null);
    // Insights: the dropped iterations, the failed case with the range it missed, failures first in the thresholds.
    const html = read(r.dir, 'site', 'runs', FAILED, 'envoy-vs-nginx.html');
    assert.match(html, /k6 dropped 5 iterations in envoy-vs-nginx \(envoy-2s 5\)/);
    assert.match(html, /envoy-vs-nginx\/envoy-2s failed \(checks: clean\)/);
    const thresholds = html.slice(html.indexOf('id="thresholds"'), html.indexOf('id="cases"'));
    assert.match(
      thresholds.slice(0, thresholds.indexOf('<details>')),
      /dropped_iterations\{scenario:envoy-2s\}.*FAIL/s,
    );
  } finally {
    r.done();
  }
});

test('insights: counts that differ, k6 near a core, a case near the edge of its range', () => {
  const r = copy();
  try {
    const counts = JSON.parse(read(r.dir, SPIKE, 'counts.json'));
    counts[0] = { ...counts[0], InfluxDB: String(Number(counts[0].k6) - 1), agree: 'FAIL' };
    writeFileSync(join(r.dir, SPIKE, 'counts.json'), JSON.stringify(counts));
    const run = readRun(r.dir, SPIKE);
    const burst = run.experiments.find((e) => e.name === 'burst');
    const text = insights(run, burst)
      .map((i) => `${i.level}: ${i.text}`)
      .join('\n');
    assert.match(text, new RegExp(`fail: Counts differ for ${counts[0].case}, status ${counts[0].status}`));
    assert.match(text, /warn: k6 used up to \d+ % of a core over 1 s/);
    // Near the edge: outside the model's own range, within 10 % of the tolerance's width from an end.
    const near = rangesOf({ expected: { ok: { min: 230, max: 231, lo: 225, hi: 235 } }, measured: { ok: 234 } });
    assert.deepEqual(
      near.map((x) => [x.side, x.edge]),
      [['within', true]],
    );
    assert.equal(
      rangesOf({ expected: { ok: { min: 230, max: 234, lo: 225, hi: 235 } }, measured: { ok: 234 } })[0].edge,
      false,
      'the model said so',
    );
    assert.equal(
      rangesOf({ expected: { sent: { lo: 456, hi: 480 } }, measured: { sent: 478 } })[0].edge,
      false,
      'no model figure: k6 short of its schedule',
    );
    assert.equal(rangesOf({ expected: { rps: { model: 100, lo: 50, hi: 110 } }, measured: { rps: 52 } })[0].edge, true);
    assert.equal(rangesOf({ expected: { ok: { lo: 225, hi: 235 } }, measured: { ok: 240 } })[0].side, 'above');
    // k6's CPU: the peak over 1 s and the mean, up to where the process went away.
    assert.deepEqual(
      k6Cpu([
        [0, 0],
        [500, 0.5],
        [1000, 1],
        [2000, 1.5],
        [2500, 0],
      ]),
      { peakPct: 100, meanPct: 75 },
    );
  } finally {
    r.done();
  }
});

test('a baseline: marked per suite, the default of compare, else the run before', () => {
  const r = copy();
  try {
    assert.equal(defaultBaseline(r.dir, NO_METRICS), FAILED);
    assert.equal(defaultBaseline(r.dir, SMOKE), null);
    assert.equal(markBaseline(r.dir, SPIKE), 'spike');
    assert.deepEqual(JSON.parse(read(r.dir, 'baselines.json')), { spike: SPIKE });
    assert.equal(defaultBaseline(r.dir, NO_METRICS), SPIKE);
    assert.equal(defaultBaseline(r.dir, SPIKE), null, 'the baseline itself: the run before it, and there is none');
    // Outcomes that both carry their judged figures (runs since 3186e7d) are compared by them.
    const outcomes = JSON.parse(read(r.dir, NO_METRICS, 'outcomes.json'));
    outcomes[0].figures[2].measured = 30000;
    writeFileSync(join(r.dir, NO_METRICS, 'outcomes.json'), JSON.stringify(outcomes));
    const base = JSON.parse(read(r.dir, SPIKE, 'outcomes.json'));
    base[0].figures = outcomes[0].figures.map((f) => ({
      ...f,
      measured: f.measure === 'max wait ms' ? 26660 : f.measured,
    }));
    writeFileSync(join(r.dir, SPIKE, 'outcomes.json'), JSON.stringify(base));
    const file = buildCompare(root, NO_METRICS, null, { results: r.dir });
    assert.equal(file, join(r.dir, 'site', 'compare', `${NO_METRICS}.vs.${SPIKE}.html`));
    const html = read(file);
    assert.match(html, /No overlay: 20261123-091350-spike-quick5 has no boards&#39; data/);
    assert.doesNotMatch(html, /<td>ok<\/td>/, 'the key measure is not repeated as a range row');
    assert.match(
      html,
      /<tr class="bad"><td><\/td><td>max wait ms<\/td><td>30 s<\/td><td>26.66 s<\/td><td>\+3.34 s \(\+12\.5 %\)<\/td><td>25.31 s \.\. 28.2 s<\/td><td>above<\/td><td>within<\/td>/,
    );
    assert.match(html, /data-case="envoy-vs-nginx\/envoy-2s" data-pass="true"/);
  } finally {
    r.done();
  }
});

test('only one run: its pages, its compare page, the runs list and its histories', () => {
  const r = copy();
  try {
    const { pages } = buildSite(root, { only: FAILED, results: r.dir });
    const rel = pages.map((p) => p.slice(join(r.dir, 'site').length + 1)).sort();
    assert.deepEqual(rel, [
      `compare/${FAILED}.vs.${SPIKE}.html`,
      'history/spike.burst.html',
      'history/spike.envoy-vs-nginx.html',
      'index.html',
      `runs/${FAILED}/burst.html`,
      `runs/${FAILED}/envoy-vs-nginx.html`,
      `runs/${FAILED}/index.html`,
    ]);
  } finally {
    r.done();
  }
});

test('units are written as Grafana writes them', () => {
  assert.equal(format('reqps', 1234.5), '1234.5 req/s');
  assert.equal(format('reqps', 12345), '12.35 k req/s');
  assert.equal(format('s', 0.0021), '2.1 ms');
  assert.equal(format('s', 20), '20 s');
  assert.equal(format('ms', 23960), '23.96 s');
  assert.equal(format('percentunit', 0.0123), '1.23 %');
  assert.equal(format('percent', 26.94), '26.94 %');
  assert.equal(format('bytes', 5156864), '4.9 MiB');
  assert.equal(format('none', null), '-');
});

test('each plan kind has a results side: a key measure per case, a capacity ramp per step, its CPU per request against the references, a capped bottleneck against its quota', () => {
  assert.deepEqual(Object.keys(resultKinds).sort(), Object.keys(kinds).sort());
  const o = {
    case: 'x/node-ramp',
    pass: true,
    expected: {},
    measured: {
      breakpoint: 2000,
      steps: [
        { rate: 1000, achieved: 1000 },
        { rate: 2000, achieved: 1990 },
        { rate: 4000, achieved: 2500 },
      ],
    },
  };
  assert.deepEqual(resultKinds.capacity.keyMeasure(o, {}), {
    measure: 'breakpoint',
    unit: 'reqps',
    value: 2000,
    lo: null,
    hi: null,
  });
  const [c, noCost] = resultKinds.capacity.caseCharts(null, { outcomes: [o] }, null, {
    id: 'node-ramp',
    name: 'x/node-ramp',
  });
  assert.deepEqual(c.data, [
    [1000, 2000, 4000],
    [1000, 2000, 4000],
    [1000, 1990, 2500],
  ]);
  assert.match(c.note, /Breakpoint: 2000 r\/s/);
  assert.equal(noCost, null, 'a ramp has no cost figure');
  // nginx's cost from the case's own efficiency against it (theirs over its own: 60 / 150).
  const cost = {
    case: 'x/node-cost',
    expected: { efficiency: { nginx: { case: 'nginx-cost', lo: 0.5 } } },
    measured: { costUs: 150, efficiency: { nginx: 0.4 } },
  };
  const [, costChart] = resultKinds.capacity.caseCharts(null, { outcomes: [cost] }, null, {
    id: 'node-cost',
    name: 'x/node-cost',
  });
  assert.deepEqual(costChart.xLabels, ['node-cost', 'nginx-cost']);
  assert.deepEqual(
    costChart.data,
    [
      [0, 1],
      [150, 60],
      [120, null],
    ],
    "the case's and the reference's CPU per request, and the most the case may use (60 / 0.5)",
  );
  const capped = {
    case: 'x/cpu1',
    expected: { rps: { lo: 50, hi: 110 }, bottleneck: { service: 'lb', busyLo: 0.9, busyHi: 1.05 } },
    measured: { rps: 90, resources: [{ service: 'lb', capPct: 10 }] },
  };
  const phase = {
    cpu: {
      lb: [
        [0, 0],
        [1000, 0.095],
        [2000, 0.19],
      ],
    },
  };
  const [noBoard, busy] = resultKinds.capped.caseCharts(
    { panels: [] },
    { name: 'x', outcomes: [capped], window: {} },
    phase,
    { id: 'cpu1', name: 'x/cpu1', expected: capped.expected },
  );
  assert.equal(noBoard, null, 'no board data: no throughput chart');
  assert.deepEqual(
    busy.data.slice(1).map((ys) => ys.map((v) => v && Math.round(v * 100) / 100)),
    [
      [9.5, 9.5],
      [10, 10],
      [10.5, 10.5],
      [9, 9],
    ],
    'CPU % from the sampler, the quota, and the judged band',
  );
  const closed = { expected: { spanMs: { lo: 400, hi: 500 } }, measured: { throughput: 9 }, params: { requests: 4 } };
  assert.deepEqual(resultKinds['closed-loop'].keyMeasure(closed, {}), {
    measure: 'responses/s',
    unit: 'reqps',
    value: 9,
    lo: 8,
    hi: 10,
  });
  assert.deepEqual(
    resultKinds.capped.keyMeasure({ expected: { rps: { model: 100, lo: 50, hi: 110 } }, measured: { rps: 90 } }),
    { measure: 'throughput', unit: 'reqps', value: 90, lo: 50, hi: 110 },
  );
});

test("a store's refused writes are read from the writers' logs: k6's outputs fail the phase, a slow flush only warns", async () => {
  const { refusedWrites, refusalProblems } = await import('../lab/stores/refusals.mjs');
  const log = [
    'time="2026-11-23T09:13:28Z" level=info msg="Starting" output=InfluxDBv1',
    'time="2026-11-23T09:13:29Z" level=error msg="Couldn\'t write stats" error="{\\"error\\":\\"partial write: max-series-per-database limit exceeded: (1000) dropped=12\\"}" output=InfluxDBv1',
    'time="2026-11-23T09:13:30Z" level=error msg="Couldn\'t write stats" error="{\\"error\\":\\"partial write: max-series-per-database limit exceeded: (1000) dropped=12\\"}" output=InfluxDBv1',
    'time="2026-11-23T09:13:31Z" level=warning msg="Successful flushed time series to remote write endpoint but it took 1.2s while flush period is 1s. Some samples may be dropped." nts=2 output="Prometheus remote write"',
    'time="2026-11-23T09:13:32Z" level=warning msg="Insufficient VUs, reached 63 active VUs and cannot initialize more" executor=ramping-arrival-rate scenario=envoy-2s',
    'ts=2026-11-23T09:13:33Z caller=dedupe.go:112 component=remote level=error remote_name=influxdb msg="non-recoverable error" err="server returned HTTP status 400 Bad Request"',
  ].join('\n');
  const r = refusedWrites(log);
  assert.deepEqual(
    r.map((x) => [x.store, x.from, x.level]),
    [
      ['InfluxDB', 'k6', 'error'],
      ['InfluxDB', 'k6', 'error'],
      ['Prometheus', 'k6', 'warn'],
      ['InfluxDB', 'Prometheus remote_write', 'error'],
    ],
  );
  assert.deepEqual(
    refusalProblems(r, 'k6 spike.burst'),
    [
      'InfluxDB refused writes from k6 in k6 spike.burst: Couldn\'t write stats: {"error":"partial write: max-series-per-database limit exceeded: (1000) dropped=12"} (2 times)',
      'InfluxDB refused writes from Prometheus remote_write in k6 spike.burst: non-recoverable error: server returned HTTP status 400 Bad Request',
    ],
    'the limit is named; a warning is no refusal',
  );
  assert.deepEqual(refusedWrites('level=info msg="ok" output=InfluxDBv1'), []);
});

test("a capacity run's pages build: its phases, the cases wrk sent and the references beside them (perturbed fixtures)", () => {
  const tmp = mkdtempSync(join(tmpdir(), 'lab-results-'));
  try {
    const dir = join(tmp, 'results');
    const ids = ['20261124-142845-921-17693-breakpoint-quick5', '20261124-144133-545-20052-breakpoint-quick5'];
    for (const id of ids) cpSync(join(root, 'test', 'fixtures', 'perturbed', id), join(dir, id), { recursive: true });
    const { site } = buildSite(root, { results: dir });
    const page = read(site, 'runs', ids[1], 'json-filter.html');
    for (const c of ['node-closed', 'nginx-closed-beside-node', 'erlang-cost']) assert.match(page, new RegExp(c), c);
    assert.ok(existsSync(join(site, 'compare', `${ids[1]}.vs.${ids[0]}.html`)), 'compared with the control');
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test('every run says what it was: a what-if and a perturbed run are grouped apart in the history, marked, and never a default baseline', () => {
  const r = copy();
  try {
    // Two copies of the failed spike run: one a what-if (rate=5), one perturbed (--stack-knob rate=4).
    const WHAT_IF = '20261123-091300-spike-quick5';
    const PERTURBED = '20261123-091310-spike-quick5';
    const LATER = '20261123-091320-spike-quick5';
    const as = (id, change) => {
      cpSync(join(r.dir, FAILED), join(r.dir, id), { recursive: true });
      const info = JSON.parse(read(r.dir, id, 'run.json'));
      writeFileSync(join(r.dir, id, 'run.json'), JSON.stringify({ ...info, testid: id, ...change }));
    };
    as(WHAT_IF, { knobs: { burst: { rate: 5 } } });
    as(PERTURBED, { perturbed: { knobs: { burst: { rate: 4 } } } });
    as(LATER, { factors: { burst: 5, 'envoy-vs-nginx': 2 } });
    assert.equal(defaultBaseline(r.dir, PERTURBED), FAILED, 'the plain run before it, not the what-if');
    assert.equal(defaultBaseline(r.dir, WHAT_IF), FAILED);
    buildSite(root, { results: r.dir });
    const run = read(r.dir, 'site', 'runs', PERTURBED, 'burst.html');
    assert.match(run, /data-perturbed><dt>PERTURBED<\/dt><dd>--stack-knob burst.rate=4/);
    assert.match(read(r.dir, 'site', 'runs', WHAT_IF, 'index.html'), /<dt>knobs<\/dt><dd>what-if burst.rate=5<\/dd>/);
    assert.match(read(r.dir, 'site', 'runs', LATER, 'index.html'), /<dd>x5 \(envoy-vs-nginx capped at x2\)<\/dd>/);
    const list = read(r.dir, 'site', 'index.html');
    assert.match(list, /<span class="mark fail">PERTURBED --stack-knob burst.rate=4<\/span>/);
    const hist = read(r.dir, 'site', 'history', 'spike.burst.html');
    const titles = [...hist.matchAll(/<h2>([^<]*)<\/h2>/g)].map((m) => m[1]);
    assert.deepEqual(
      titles.map((t) => t.replace(/ \(\d+ runs?\)$/, '')),
      ['--quick=5 · defaults', '--quick=5 · what-if burst.rate=5', '--quick=5 · PERTURBED --stack-knob burst.rate=4'],
      titles.join(' | '),
    );
    // envoy-vs-nginx ran capped at x2 in every run (its plans say so), and burst's knobs are not its own.
    const other = read(r.dir, 'site', 'history', 'spike.envoy-vs-nginx.html');
    assert.deepEqual(
      [...other.matchAll(/<h2>([^<]*)<\/h2>/g)].map((m) => m[1]),
      ['--quick=2 · defaults (6 runs)'],
    );
    // The compare page says how two runs differ.
    const file = buildCompare(root, WHAT_IF, PERTURBED, { results: r.dir });
    assert.match(
      read(file),
      /Not alike, so differences are expected: burst: knobs burst.rate=5 against default knobs; burst: no perturbation against --stack-knob burst.rate=4/,
    );
  } finally {
    r.done();
  }
});
