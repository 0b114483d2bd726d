// Stores that last (issue 21): the series a run adds to each store, computed from the tag sets the
// lab's own k6 code gives its samples (lab/bench/cardinality.mjs), bounded whatever the VUs and
// the iterations, and stated in the docs as computed; InfluxDB's counts taken from what
// Prometheus forwards; the retention the stores start with; a database at its series limit
// failing the run, naming it; and a store's real refusal, as k6 and Prometheus log it, read as one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { freePort } from './lib/listening.mjs';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { plan as makePlan, suites } from '../thresholds/plan.js';
import {
  runTagSets,
  checkBounded,
  seriesPerRun,
  seriesMarkdown,
  seriesBlock,
  withSeriesBlock,
  SERIES_DOC,
  storeSeries,
} from '../lab/bench/cardinality.mjs';
import { modules, sim } from '../lab/bench/k6-shim.mjs';
import { storeCounts } from '../lab/judge/nothing-lost.mjs';
import { refusedWrites, refusalProblems } from '../lab/stores/refusals.mjs';
import {
  metricsRetention,
  shardDuration,
  applyRetention,
  withinSeriesBudget,
  seriesBudget,
  oldestTestid,
  untilScrapedSince,
} from '../lab/stores/stores.mjs';
import { needs, absent } from './lib/needs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const vendored = existsSync(join(root, 'k6/lib/vendor/http-cache-semantics.js'))
  ? null
  : 'k6/lib/vendor/http-cache-semantics.js is not bundled';

/** Every series of a run's samples, as "metric {tags}". */
const seriesKeys = (samples) =>
  new Set([...samples].flatMap(([name, { sets }]) => [...sets.keys()].map((k) => `${name} ${k}`)));
const onlyIn = (a, b) => [...a].filter((k) => !b.has(k));

/** What differs between a run on the plan's VUs, on one VU, and with twice the iterations. */
async function growth(p) {
  const planned = seriesKeys(await runTagSets(p));
  const oneVu = seriesKeys(await runTagSets(p, { vus: 1 }));
  const twice = seriesKeys(await runTagSets(p, { cap: 128 }));
  return { perVu: onlyIn(planned, oneVu), perIteration: onlyIn(twice, planned), planned };
}

const every = Object.entries(suites).flatMap(([suite, names]) => names.map((experiment) => ({ experiment, suite })));

test("every tag of every sample a run emits is bounded, and no experiment's series grow with its VUs or its iterations", async (t) => {
  if (needs(t, vendored, 'run ./labw setup')) return;
  for (const { experiment, suite } of every) {
    const p = makePlan({ experiment, suite });
    assert.deepEqual(
      checkBounded(await runTagSets(p)),
      [],
      `${suite}/${experiment}: a tag not in BOUNDED_TAGS (lab/bench/cardinality.mjs): say what bounds it, or drop it`,
    );
    const g = await growth(p);
    assert.ok(g.planned.size > 10, `${suite}/${experiment}: the simulation saw its samples`);
    assert.deepEqual(
      g.perVu.slice(0, 5),
      [],
      `${suite}/${experiment}: series that exist only because there are many VUs`,
    );
    assert.deepEqual(g.perIteration.slice(0, 5), [], `${suite}/${experiment}: series that more iterations add`);
  }
});

test("a per-VU or per-iteration tag fails those checks (what lab_requests' sender tag was)", async (t) => {
  if (needs(t, vendored, 'run ./labw setup')) return;
  // The executors' requests, each given a tag as a careless script would.
  const httpModule = modules['k6/http'].default;
  const get = httpModule.get;
  const tagging =
    (extra) =>
    (url, params = {}) =>
      get(url, { ...params, tags: { ...params.tags, ...extra(url, params) } });
  const spike = makePlan({ experiment: suites.spike[0], suite: 'spike' });
  try {
    // A new tag, with one value per VU.
    httpModule.get = tagging(() => ({ sender: String(sim.ctx.vu) }));
    assert.ok(
      checkBounded(await runTagSets(spike)).some((x) => x.endsWith(': sender')),
      'an undeclared tag is named',
    );
    assert.ok((await growth(spike)).perVu.length > 0, 'and its series grow with the VUs');
    // A declared tag given a value per iteration: a URL name with the iteration in it.
    httpModule.get = tagging((url) => ({ name: `${url}?i=${sim.ctx.iteration}` }));
    assert.deepEqual(checkBounded(await runTagSets(spike)), [], 'name is a declared tag');
    assert.ok((await growth(spike)).perIteration.length > 0, 'series that grow with the iterations are caught');
  } finally {
    httpModule.get = get;
  }
  const g = await growth(spike);
  assert.deepEqual([g.perVu.length, g.perIteration.length], [0, 0], 'restored');
});

test('the series per run the docs state are the computed ones (node lab/cli/index.mjs metrics series --write)', async (t) => {
  if (needs(t, vendored, 'run ./labw setup')) return;
  const per = await seriesPerRun();
  const stated = seriesBlock(readFileSync(join(root, SERIES_DOC), 'utf8'));
  assert.equal(
    stated,
    seriesMarkdown(per),
    `${SERIES_DOC}: stale series table; run: node lab/cli/index.mjs metrics series --write`,
  );
  // The counts come from the tag sets: at least a series of http_reqs per case, the same in
  // both stores (name is the URL), each trend stat a series of its own; no lab_requests anywhere.
  const first = per.find((r) => r.suite === 'smoke' && r.experiment === suites.smoke[0]);
  const p = makePlan({ experiment: first.experiment, suite: 'smoke' });
  assert.ok(first.byMetric.prometheus.k6_http_reqs_total >= p.cases.length);
  assert.equal(first.byMetric.influx.k6.http_reqs, first.byMetric.prometheus.k6_http_reqs_total);
  assert.equal(first.byMetric.prometheus.k6_http_req_duration_p99, first.byMetric.prometheus.k6_http_reqs_total);
  for (const r of per) {
    assert.ok(
      !('lab_requests' in r.byMetric.influx.k6) && !('k6_lab_requests_total' in r.byMetric.prometheus),
      `${r.suite}/${r.experiment}`,
    );
    assert.equal(
      r.influxForwarded,
      Object.entries(r.byMetric.prometheus)
        .filter(([n]) => /^(k6_|lab_)/.test(n))
        .reduce((a, [, v]) => a + v, 0),
      'Prometheus forwards its k6_ and lab_ series',
    );
  }
  assert.throws(() => withSeriesBlock('no block', 'x'), /no <!-- stores:series -->/);
  const s = storeSeries(
    new Map([
      [
        'x',
        {
          type: 'trend',
          sets: new Map([
            ['a', { url: 'u1', case: 'c' }],
            ['b', { url: 'u2', case: 'c' }],
          ]),
        },
      ],
    ]),
    { influx: true },
  );
  assert.deepEqual([s.influx.k6.x, s.prometheus.k6_x_p99], [1, 2], 'url is a field in InfluxDB, a label in Prometheus');
});

/** A stand-in store answering `answers(url)` as JSON, recording what it was asked. */
async function fakeStore(answers) {
  const asked = [];
  const srv = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://x');
    asked.push(u);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(answers(u)));
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${srv.address().port}`, asked, close: () => srv.close() };
}

test("InfluxDB's counts are what Prometheus forwarded, for every plan; without InfluxDB, no say", async () => {
  const prom = await fakeStore(() => ({
    status: 'success',
    data: { result: [{ metric: { case: 'a', status: '200' }, value: [1, '5'] }] },
  }));
  const influx = await fakeStore(() => ({
    results: [{ series: [{ tags: { case: 'a', status: '200' }, values: [[0, 5]] }] }],
  }));
  try {
    const urls = { prometheus: prom.url, influx: influx.url, database: 'k6', forwarded: 'prometheus' };
    const got = await storeCounts(urls, 't1', 'e', ['influx', 'prometheus']);
    assert.deepEqual(got, { prometheus: { a: { 200: 5 } }, influx: { a: { 200: 5 } } });
    const q = influx.asked.at(-1);
    assert.equal(q.searchParams.get('db'), 'prometheus');
    assert.match(q.searchParams.get('q'), /FROM "k6_http_reqs_total"/);
    assert.deepEqual(await storeCounts({ prometheus: prom.url }, 't1', 'e', ['prometheus']), {
      prometheus: { a: { 200: 5 } },
      influx: null,
    });
  } finally {
    prom.close();
    influx.close();
  }
});

test('retention: 30 days unless LAB_METRICS_RETENTION says, in hours, days or weeks; shard groups as InfluxDB picks them', () => {
  assert.equal(metricsRetention({}), '30d');
  assert.equal(metricsRetention({ LAB_METRICS_RETENTION: '12w' }), '12w');
  for (const bad of ['30', '0d', '1.5d', '30 days', '5y'])
    assert.throws(() => metricsRetention({ LAB_METRICS_RETENTION: bad }), /whole number of hours, days or weeks/, bad);
  assert.deepEqual(['24h', '30d', '26w', '52w'].map(shardDuration), ['1h', '1d', '1d', '7d']);
  assert.equal(
    oldestTestid(['20261123-121604-011-12853-smoke', '20261123-082644-smoke', null]),
    '20261123-082644-smoke',
    'both id forms sort by their stamp',
  );
});

test('a database at max-series-per-database fails the run before its load, naming the limit; from 90 % it says so', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'lab-budget-'));
  let numSeries = 950;
  const influx = await fakeStore(() => ({
    'database:k6': { name: 'database', tags: { database: 'k6' }, values: { numSeries } },
    'database:_internal': { name: 'database', tags: { database: '_internal' }, values: { numSeries: 10_000 } },
  }));
  try {
    mkdirSync(join(dir, 'stacks', 'metrics'), { recursive: true });
    writeFileSync(join(dir, 'stacks/metrics/influxdb.conf'), '[data]\n  max-series-per-database = 1000\n');
    assert.equal(seriesBudget(dir), 1000);
    assert.equal(seriesBudget(root), 2_500_000, 'the lab sets it explicitly');
    const said = [];
    await withinSeriesBudget({ influx: influx.url }, dir, (m) => said.push(m));
    assert.match(said.join('\n'), /database k6 holds 950 series, 95 % of max-series-per-database = 1000/);
    numSeries = 1000;
    await assert.rejects(
      withinSeriesBudget({ influx: influx.url }, dir, () => {}),
      /InfluxDB database k6 holds 1000 series, at its limit max-series-per-database = 1000: no load was sent/,
    );
  } finally {
    influx.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

// The lines InfluxDB's refusals made k6 and Prometheus write, under max-series-per-database = 5
// (a scratch InfluxDB 1.6 with its in-memory index; k6 v1.8.1; Prometheus 2.42).
const K6_LINE =
  'time="2026-11-23T12:36:27Z" level=error msg="Couldn\'t write stats" error="{\\"error\\":\\"partial write: max-series-per-database limit exceeded: (5) dropped=100\\"}\\n" output=InfluxDBv1';
const PROMETHEUS_LINE =
  'ts=2026-11-23T12:36:48.168Z caller=dedupe.go:112 component=remote level=error remote_name=b6c094 url="http://127.0.0.1:28186/api/v1/prom/write?db=prometheus" msg="non-recoverable error" count=20 exemplarCount=0 err="server returned HTTP status 400 Bad Request: {\\"error\\":\\"partial write: max-series-per-database limit exceeded: (5) dropped=20\\"}"';

test("a store's real refusals, as k6 and Prometheus log them, are read as refusals naming the limit", () => {
  const r = refusedWrites(`${K6_LINE}\n${PROMETHEUS_LINE}\n`);
  assert.deepEqual(
    r.map((x) => [x.store, x.from, x.level]),
    [
      ['InfluxDB', 'k6', 'error'],
      ['InfluxDB', 'Prometheus remote_write', 'error'],
    ],
  );
  for (const p of refusalProblems(r, 'smoke/burst'))
    assert.match(
      p,
      /^InfluxDB refused writes from .* in smoke\/burst: .*max-series-per-database limit exceeded: \(5\)/,
    );
});

test(
  'for real: an InfluxDB with max-series-per-database = 5 refuses k6, and the run reads why; the retention the stores start with',
  { timeout: 60_000 },
  async (t) => {
    const env = {
      ...process.env,
      PATH: `${join(root, '.lab', 'bin')}:${process.env.PATH}`,
      K6_NO_USAGE_REPORT: 'true',
    };
    if (needs(t, absent('influxd', ['version'], { env }), 'apt-get install influxdb (./labw setup)')) return;
    if (needs(t, absent('k6', ['version'], { env }), 'run ./labw setup')) return;
    const dir = mkdtempSync(join(tmpdir(), 'lab-refusal-'));
    const [http1, rpc] = [await freePort(), await freePort()];
    writeFileSync(
      join(dir, 'influxdb.conf'),
      [
        'reporting-disabled = true',
        `bind-address = "127.0.0.1:${rpc}"`,
        '[meta]',
        `  dir = "${dir}/meta"`,
        '[data]',
        `  dir = "${dir}/data"`,
        `  wal-dir = "${dir}/wal"`,
        '  index-version = "inmem"',
        '  max-series-per-database = 5',
        '[http]',
        `  bind-address = "127.0.0.1:${http1}"`,
        '  log-enabled = false',
        '[monitor]',
        '  store-enabled = false',
        '',
      ].join('\n'),
    );
    const influxd = spawn('influxd', ['run', '-config', join(dir, 'influxdb.conf')], { env, stdio: 'ignore' });
    t.after(() => {
      influxd.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    });
    const urls = { influx: `http://127.0.0.1:${http1}`, database: 'k6', forwarded: 'prometheus' };
    for (let i = 0; ; i += 1) {
      try {
        if ((await fetch(`${urls.influx}/ping`)).status === 204) break;
      } catch {
        /* starting */
      }
      assert.ok(i < 100, 'influxd answers within 10 s');
      await new Promise((r) => setTimeout(r, 100));
    }
    await applyRetention(urls, '30d');
    for (const db of ['k6', 'prometheus']) {
      const rp = await (
        await fetch(`${urls.influx}/query?q=${encodeURIComponent(`SHOW RETENTION POLICIES ON "${db}"`)}`)
      ).json();
      const [name, duration, shards, , isDefault] = rp.results[0].series[0].values[0];
      assert.deepEqual([name, duration, shards, isDefault], ['autogen', '720h0m0s', '24h0m0s', true], db);
    }
    writeFileSync(
      join(dir, 'refuse.js'),
      [
        "import { Counter } from 'k6/metrics';",
        "const c = new Counter('lab_refusal_probe');",
        'export const options = { vus: 1, iterations: 20 };',
        'export default function () { c.add(1, { probe: String(__ITER) }); }',
        '',
      ].join('\n'),
    );
    const r = spawnSync('k6', ['run', '--quiet', '--out', `influxdb=${urls.influx}/k6`, join(dir, 'refuse.js')], {
      env,
      encoding: 'utf8',
      timeout: 40_000,
    });
    const refusals = refusedWrites(r.stderr);
    assert.ok(
      refusals.some(
        (x) =>
          x.store === 'InfluxDB' &&
          x.from === 'k6' &&
          x.level === 'error' &&
          /max-series-per-database limit exceeded: \(5\)/.test(x.message),
      ),
      `k6 said:\n${r.stderr}`,
    );
  },
);

test("before the stores stop, Prometheus has scraped every target once more (a stopped stack's series marked stale), within a bound", async () => {
  const since = Date.now();
  let asked = 0;
  // Each target's last scrape: the proxy's a second before `since`, until the third question.
  const server = http.createServer((req, res) => {
    asked += 1;
    const proxyAt = asked < 3 ? since - 1000 : since + 100;
    const activeTargets = [
      { lastScrape: new Date(since + 50).toISOString() },
      { lastScrape: new Date(proxyAt).toISOString() },
    ];
    res.end(JSON.stringify({ data: { activeTargets } }));
  });
  const port = await freePort();
  await new Promise((r) => server.listen(port, '127.0.0.1', r));
  try {
    const urls = { prometheus: `http://127.0.0.1:${port}` };
    assert.equal(await untilScrapedSince(urls, since), true);
    assert.equal(asked, 3);
    // A target never scraped again: the wait ends at its bound, saying so.
    const t = Date.now();
    assert.equal(await untilScrapedSince(urls, Date.now() + 60_000, { timeoutMs: 600 }), false);
    assert.ok(Date.now() - t < 2000);
  } finally {
    server.close();
  }
  // No Prometheus answering: nothing to wait for.
  assert.equal(await untilScrapedSince({ prometheus: `http://127.0.0.1:${port}` }, since), false);
});
