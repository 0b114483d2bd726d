// Metrics streaming and dashboards: the counts comparison, the dashboards as code, and the panel
// check's logic (against a stand-in Prometheus; CI runs it against the real stores after smoke).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, rmSync, readdirSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';
import YAML from 'yaml';
import { parsePrometheusText, countsTable, addLoggedCounts, ownCounterRows } from '../lab/judge/nothing-lost.mjs';
import { proxyNamed } from '../lab/policy/proxies/index.mjs';
import { macros, expand, checkPanels } from '../lab/stores/panels.mjs';
import { buildDashboards } from '../dashboards/build.mjs';
import { boards, loadExperimentBoards } from '../dashboards/src/boards.mjs';
import { list } from '../thresholds/experiments/index.js';
import { loadTopology, scrapeTargets } from '../lab/stack/topology.mjs';
import { plan } from '../thresholds/plan.js';
import { needs, notRun } from './lib/needs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

test('Prometheus text: names, labels with escapes, values', () => {
  const s = parsePrometheusText(
    '# HELP x y\nlab_nginx_requests_total{location="/b0",case="b0-3rps",limit_req="REJECTED",status="503"} 61\nup 1\nq{a="x\\"y"} 2.5\n',
  );
  assert.deepEqual(s, [
    {
      name: 'lab_nginx_requests_total',
      labels: { location: '/b0', case: 'b0-3rps', limit_req: 'REJECTED', status: '503' },
      value: 61,
    },
    { name: 'up', labels: {}, value: 1 },
    { name: 'q', labels: { a: 'x"y' }, value: 2.5 },
  ]);
});

test('nothing lost: every source must give the same count per case and status, or the row says LOST', () => {
  const p = plan({ experiment: 'burst', suite: 'smoke' });
  const k6 = Object.fromEntries(p.cases.map((c) => [c.id, { all: 3, 200: 3, 503: 0 }]));
  const same = Object.fromEntries(p.cases.map((c) => [c.id, { 200: 3 }]));
  const ok = countsTable(p, k6, { prometheus: same, influx: same }, same);
  assert.equal(ok.agree, true);
  assert.equal(ok.rows.length, p.cases.length * 3);
  const lostOne = { ...same, b0: { 200: 3 }, 'b0-smoke': { 200: 2 } };
  const bad = countsTable(p, k6, { prometheus: same, influx: lostOne }, same);
  assert.equal(bad.agree, false);
  assert.deepEqual(
    bad.rows.filter((r) => r.at(-1) === 'LOST').map((r) => r.slice(0, 2)),
    [
      ['burst/b0-smoke', '200'],
      ['burst/b0-smoke', 'all'],
    ],
  );
});

test("nothing lost, closed loop: the application's served count is a row of its own, not in 'all'", () => {
  const p = plan({ experiment: 'caching', suite: 'smoke' });
  const k6 = Object.fromEntries(p.cases.map((c) => [c.id, { all: 4, 200: 4, 503: 0, 'app served': 1 }]));
  const seen = Object.fromEntries(p.cases.map((c) => [c.id, { 200: 4, 'app served': 1 }]));
  const t = countsTable(p, k6, { prometheus: seen, influx: { ...seen } }, seen);
  assert.equal(t.agree, true);
  const short = { ...seen, 'server-smoke': { 200: 4, 'app served': 0 } };
  const bad = countsTable(p, k6, { prometheus: short, influx: null }, seen);
  assert.deepEqual(
    bad.rows.filter((r) => r.at(-1) === 'LOST').map((r) => r.slice(0, 2)),
    [['caching/server-smoke', 'app served']],
  );
});

test("Grafana's macros as Grafana expands them for a run", () => {
  const m = macros({ fromMs: 0, toMs: 120_000, testid: 'run-1' });
  assert.equal(m.$__interval, '1s', 'never under the scrape interval');
  assert.equal(m.$__rate_interval, '4s', 'max(interval + scrape, 4 x scrape)');
  assert.equal(
    expand('rate(x{testid=~"$testid", case=~"$case"}[$__rate_interval]) $__range', m),
    'rate(x{testid=~"run-1", case=~".*"}[4s]) 120s',
  );
  assert.equal(
    expand('WHERE $timeFilter GROUP BY time($__interval)', m),
    'WHERE time >= 0ms AND time <= 120000ms GROUP BY time(1s)',
  );
  assert.equal(macros({ fromMs: 0, toMs: 3_600_000 }).$__interval, '4s', '~1000 points over an hour');
});

test('the committed dashboards are what dashboards/src generates (run `just dashboards`)', () => {
  assert.deepEqual(buildDashboards({ check: true }), []);
});

test("every experiment of the list has its board, from dashboards/src/<experiment>.mjs, committed as dashboards/<experiment>.json, in the list's order", () => {
  const uids = boards().map((b) => b.uid);
  for (const { name } of list) {
    assert.ok(existsSync(join(root, 'dashboards/src', `${name}.mjs`)), `dashboards/src/${name}.mjs`);
    const d = JSON.parse(readFileSync(join(root, 'dashboards', `${name}.json`), 'utf8'));
    assert.equal(d.uid, `lab-${name}`, `${name}.json: uid`);
    assert.ok(d.tags.includes(name), `${name}.json: the panel check finds the experiment by its tag`);
  }
  assert.deepEqual(uids, [
    'lab-k6-run',
    'lab-k6-run-influxdb',
    'lab-k6-run-influxdb-forwarded',
    ...list.map((e) => `lab-${e.name}`),
    'lab-resources',
    'lab-runs',
    'lab-compare',
  ]);
});

test('an experiment without a board file fails the build, naming the file to add', async () => {
  await assert.rejects(
    loadExperimentBoards([...list, { name: 'no-such-experiment' }]),
    /add dashboards\/src\/no-such-experiment\.mjs/,
  );
});

test('dashboards: unique panel ids and refIds, only the provisioned datasources, every variable used is defined', () => {
  const provisioned = YAML.parse(
    readFileSync(join(root, 'dashboards/provisioning/datasources/lab.yml'), 'utf8'),
  ).datasources.map((d) => d.uid);
  for (const file of readdirSync(join(root, 'dashboards')).filter((f) => f.endsWith('.json'))) {
    const d = JSON.parse(readFileSync(join(root, 'dashboards', file), 'utf8'));
    const ids = d.panels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length, `${file}: panel ids repeat`);
    const vars = new Set((d.templating?.list || []).map((v) => v.name));
    for (const p of d.panels.filter((x) => x.type !== 'row')) {
      assert.ok(provisioned.includes(p.datasource.uid), `${file} / ${p.title}: datasource ${p.datasource.uid}`);
      const refs = p.targets.map((t) => t.refId);
      assert.equal(new Set(refs).size, refs.length, `${file} / ${p.title}: refIds repeat`);
      for (const t of p.targets) {
        for (const [, name] of (t.expr || t.query).matchAll(/\$([a-z]\w*)/g))
          assert.ok(vars.has(name) || name === 'timeFilter', `${file} / ${p.title}: $${name} is not a variable`);
      }
    }
  }
});

// A stand-in Prometheus that knows a few metric names: queries naming others return nothing.
async function fakePrometheus(known) {
  const srv = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://x');
    if (u.pathname === '/api/v1/series') {
      res.end(
        JSON.stringify({
          status: 'success',
          data: known.includes(u.searchParams.get('match[]')) ? [{ __name__: u.searchParams.get('match[]') }] : [],
        }),
      );
      return;
    }
    const q = u.searchParams.get('query') || '';
    const hit = known.some((n) => q.includes(n));
    const result = hit
      ? [
          {
            metric: { case: 'a' },
            values: [
              [1, '1'],
              [2, '2'],
            ],
            value: [2, '2'],
          },
        ]
      : [];
    res.end(JSON.stringify({ status: 'success', data: { resultType: 'matrix', result } }));
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return { srv, url: `http://127.0.0.1:${srv.address().port}` };
}

test('the panel check fails a panel whose query names a metric that does not exist (a broken copy)', async () => {
  const { srv, url } = await fakePrometheus([
    'k6_vus',
    'k6_vus_max',
    'k6_http_reqs_total',
    'k6_iterations_total',
    'k6_dropped_iterations_total',
    'k6_http_req_duration_p95',
    'k6_http_req_duration_p99',
    'k6_http_req_failed_rate',
  ]);
  const tmp = mkdtempSync(join(tmpdir(), 'lab-panels-'));
  try {
    mkdirSync(join(tmp, 'dashboards'));
    const good = readFileSync(join(root, 'dashboards/k6-run.json'), 'utf8');
    writeFileSync(join(tmp, 'dashboards/k6-run.json'), good);
    const run = {
      testid: 't',
      fromMs: 0,
      toMs: 60_000,
      suite: 'smoke',
      experiments: ['burst'],
      allExperiments: ['burst'],
    };
    const urls = { prometheus: url, influx: url, database: 'k6' };
    assert.ok(
      (await checkPanels(tmp, urls, run)).every((r) => r.ok),
      'every panel of the real board finds its metrics',
    );
    writeFileSync(
      join(tmp, 'dashboards/k6-run.json'),
      good.replace('k6_dropped_iterations_total', 'k6_dropped_iterationz_total'),
    );
    const broken = (await checkPanels(tmp, urls, run)).filter((r) => !r.ok);
    assert.deepEqual(
      broken.map((r) => [r.panel, r.error]),
      [['Dropped iterations per second, by case', "no such metric in the run's window: k6_dropped_iterationz_total"]],
      'it fails although its zeros fallback still returns data',
    );
  } finally {
    srv.close();
    rmSync(tmp, { recursive: true, force: true });
  }
});

test('the topology declares the metrics stores and the scrape targets; every service has a native twin or says why not', () => {
  const t = loadTopology(join(root, 'docker-compose.yml'));
  for (const s of ['influxdb', 'prometheus', 'process-exporter'])
    assert.ok(t.services[s]?.profiles.includes('metrics'), s);
  assert.ok(t.unavailable.grafana.why.length > 0);
  const scraped = scrapeTargets(t).map((s) => s.service);
  for (const s of [
    'burst-nginx',
    'envoy-vs-nginx-envoy',
    'envoy-vs-nginx-nginx',
    'burst-hello',
    'json-filter-node',
    'json-filter-erlang',
    'process-exporter',
  ])
    assert.ok(scraped.includes(s), s);
});

test('a typo in a compose service fails the compose validation', (t) => {
  const tmp = mkdtempSync(join(tmpdir(), 'lab-compose-'));
  try {
    const text = readFileSync(join(root, 'docker-compose.yml'), 'utf8').replace(
      '    network_mode: host\n    profiles: [metrics]\n    command: [influxd',
      '    network_mod: host\n    profiles: [metrics]\n    command: [influxd',
    );
    writeFileSync(join(tmp, 'docker-compose.yml'), text);
    const r = spawnSync('docker-compose', ['-f', join(tmp, 'docker-compose.yml'), 'config', '-q'], {
      encoding: 'utf8',
    });
    if (needs(t, notRun('docker-compose', r), 'the Debian package: run just setup')) return;
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /network_mod/);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test("a proxy's own counters against k6: the log places each case's requests at the counter that counted them", () => {
  const haproxy = proxyNamed('haproxy');
  const log = [
    'fill 1000 200 api app',
    'fill 1001 429 api api',
    'over 1002 200 api app',
    'over 1003 429 api api',
    'over 1004 429 api api',
    // The lab's /healthz, answered by the frontend itself (its backend is still the frontend).
    '- - 200 api api',
  ].join('\n');
  const proxy = addLoggedCounts({ byCase: {}, own: {}, placeOf: {}, lab: {} }, log, new Set(['fill', 'over']), haproxy);
  assert.deepEqual(proxy.byCase, { fill: { 200: 1, 429: 1 }, over: { 200: 1, 429: 2 } });
  const k6 = { fill: { all: 2, 200: 1, 429: 1 }, over: { all: 3, 200: 1, 429: 2 } };
  // The frontend's denials and intercepted requests: the three refusals and the lab's /healthz.
  const own = {
    'HAProxy backend app': { 200: 2 },
    'HAProxy frontend api': { refused: 4 },
  };
  const ok = ownCounterRows(k6, { ...proxy, own });
  assert.equal(ok.agree, true);
  assert.deepEqual(ok.rows, [
    ['(HAProxy backend app)', '200', '2', '-', '-', '2', 'ok'],
    ['(HAProxy frontend api)', 'refused', "3 + 1 the lab's own", '-', '-', '4', 'ok'],
  ]);
  // How it ended (%ts) says where a backend's refusal is counted: a rule's denial there in the
  // frontend's denials too; a return there, or a server's error, in none of HAProxy's counters.
  const ended = (ts) => haproxy.seen(`over 1005 429 api app 1006 ${ts}`).where;
  assert.deepEqual(
    [ended('PR'), ended('PT'), ended('LR'), ended('SC')],
    ['frontend api', 'frontend api', undefined, undefined],
  );
  assert.equal(haproxy.seen('over 1005 429 api api 1006 LR').where, 'frontend api');
  assert.equal(haproxy.seen('over 1005 200 api app 1006 --').where, 'backend app');
  // Without the lab's own line, the frontend's count is one more than k6's.
  const bare = addLoggedCounts(
    { byCase: {}, own: {}, placeOf: {}, lab: {} },
    log.replace(/\n- - .*/, ''),
    new Set(['fill', 'over']),
    haproxy,
  );
  assert.deepEqual(ownCounterRows(k6, { ...bare, own }).rows[1], [
    '(HAProxy frontend api)',
    'refused',
    '3',
    '-',
    '-',
    '4',
    'LOST',
  ]);
  // A stray request through the backend that no case sent: the counter is one more than k6.
  const stray = ownCounterRows(k6, { ...proxy, own: { ...own, 'HAProxy backend app': { 200: 3 } } });
  assert.equal(stray.agree, false);
  assert.deepEqual(stray.rows[0], ['(HAProxy backend app)', '200', '2', '-', '-', '3', 'LOST']);
  // A status k6 does not count (Traefik's 502 when the back end is gone) is shown, not judged.
  const traefik = proxyNamed('traefik');
  const line = (status) =>
    JSON.stringify({
      DownstreamStatus: status,
      RouterName: 'api@file',
      StartUTC: '2026-11-27T05:56:23.2314Z',
      'request_X-Lab-Case': 'fill',
    });
  const t = addLoggedCounts(
    { byCase: {}, own: {}, placeOf: {}, lab: {} },
    [line(200), line(502)].join('\n'),
    new Set(['fill']),
    traefik,
  );
  const odd = ownCounterRows(k6, { ...t, own: { 'Traefik router api@file': { 200: 1, 502: 1 } } });
  assert.equal(odd.agree, true);
  assert.deepEqual(odd.rows[1], ['(Traefik router api@file)', '502', '-', '-', '-', '1', 'shown']);
});

test("HAProxy's sessions against the connections k6 opened: one per request of a case that opens one each, none for the others, one per request of the lab's own", () => {
  const haproxy = proxyNamed('haproxy');
  const log = [
    'fill 1000 200 api app',
    'fill 1001 429 api api',
    'sessions 2000 200 api app',
    'sessions 2400 429 api api',
    'sessions 2700 429 api api',
    // The warm-up's two VUs and setup's request: each the first of its client, on a connection of its own.
    '- - 200 api api',
    '- - 200 api api',
    '- - 200 api api',
  ].join('\n');
  const proxy = addLoggedCounts(
    { byCase: {}, own: {}, placeOf: {}, lab: {} },
    log,
    new Set(['fill', 'sessions']),
    haproxy,
  );
  const counted = { all: 2, 200: 1, 429: 1 };
  const k6 = { fill: { ...counted, connections: 0 }, sessions: { all: 3, 200: 1, 429: 2, connections: 3 } };
  const own = {
    'HAProxy backend app': { 200: 2 },
    'HAProxy frontend api': { refused: 6, connections: 6 },
  };
  const rows = (n) =>
    ownCounterRows(k6, { ...proxy, own: { ...own, 'HAProxy frontend api': { refused: 6, connections: n } } });
  assert.deepEqual(rows(6).rows[2], [
    '(HAProxy frontend api)',
    'connections',
    "3 + 3 the lab's own",
    '-',
    '-',
    '6',
    'ok',
  ]);
  assert.equal(rows(6).agree, true);
  // A connection opened anew by a case whose VUs kept theirs (one HAProxy closed while idle): LOST.
  assert.equal(rows(7).agree, false);
  // A plan that does not know its connections (cases run together, VUs the warm-up did not open one for): shown.
  const unknown = ownCounterRows({ fill: counted, sessions: { all: 3, 200: 1, 429: 2 } }, { ...proxy, own });
  assert.deepEqual(unknown.rows[2], ['(HAProxy frontend api)', 'connections', '-', '-', '-', '6', 'shown']);
  // The refusals stay placed by their status alone.
  assert.deepEqual(rows(6).rows[1], ['(HAProxy frontend api)', 'refused', "3 + 3 the lab's own", '-', '-', '6', 'ok']);
});
