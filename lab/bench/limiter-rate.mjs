/*
 * `bench limiter-rate`: the highest arrival rate this machine sends and judges exactly for a
 * limiter that rejects at once (nginx limit_req nodelay, Envoy's token bucket, HAProxy's and
 * Traefik's as their modules write a limit): each proxy run as
 * a team's policy, one bucket its cases share, a case per rate one after another (a drain apart),
 * each for a few seconds; judged as any policy run is (the replay of what k6 sent, nothing lost).
 * A rate is judged exactly when its case passed on the replay with k6 sending the whole schedule
 * (no dropped arrival) and the stores and the proxy counting what k6 counted. Prints a table per
 * proxy and the highest such rate under every proxy; the plans use it (thresholds/machine.js,
 * written by `./labw docs` from the recorded runs in docs/runs/).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatTable } from '../judge/table.mjs';
import { runSuite } from '../run/suite.mjs';
import { usePolicy } from '../policy/use.mjs';
import { machine } from './tools.mjs';
import { highestJudgedExactly } from './judged-rate.mjs';
import { proxyNamed } from '../policy/proxies/index.mjs';

// The rates tried, r/s: from the seeds' highest (2 x 400) to the goal of 4000.
export const RATES = [800, 1200, 1600, 2000, 2400, 3200, 4000];

/** The bench's policies, by file: a bucket of 100 refilled 100 a second, nodelay nginx and Envoy. */
const POLICIES = {
  'bench-nginx.conf': [
    'events { worker_connections 8192; }',
    'http {',
    '    limit_req_zone $server_name zone=bench:1m rate=100r/s;',
    '    server {',
    '        listen 8080;',
    '        server_name bench.lab;',
    '        location / { limit_req zone=bench burst=100 nodelay; limit_req_status 429; proxy_pass http://127.0.0.1:9; }',
    '    }',
    '}',
    '',
  ].join('\n'),
  'bench-envoy.yaml': [
    'static_resources:',
    '  listeners:',
    '  - name: bench',
    '    address: { socket_address: { address: 0.0.0.0, port_value: 8080 } }',
    '    filter_chains:',
    '    - filters:',
    '      - name: envoy.filters.network.http_connection_manager',
    '        typed_config:',
    '          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
    '          stat_prefix: bench',
    '          route_config: { virtual_hosts: [{ name: bench, domains: ["*"], routes: [{ match: { prefix: "/" }, route: { cluster: app } }] }] }',
    '          http_filters:',
    '          - name: envoy.filters.http.local_ratelimit',
    '            typed_config:',
    '              "@type": type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit',
    '              stat_prefix: bench',
    '              token_bucket: { max_tokens: 100, tokens_per_fill: 100, fill_interval: 1s }',
    '              filter_enabled: { default_value: { numerator: 100, denominator: HUNDRED } }',
    '              filter_enforced: { default_value: { numerator: 100, denominator: HUNDRED } }',
    '          - name: envoy.filters.http.router',
    '            typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router }',
    '  clusters:',
    '  - name: app',
    '    load_assignment: { cluster_name: app, endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: 127.0.0.1, port_value: 9 } } } }] }] }',
    '',
  ].join('\n'),
};

// HAProxy's and Traefik's: the same limit as each writes it (its module's fromLimit), 100 at once.
for (const [proxy, ext] of [
  ['haproxy', 'cfg'],
  ['traefik', 'yml'],
])
  POLICIES[`bench-${proxy}.${ext}`] = proxyNamed(proxy).fromLimit({ rate: 100, atOnce: 100, status: 429 }).text;

// The proxies benched, by the name their file is read as (bench-<proxy>.<ext> above).
const BENCHED = Object.keys(POLICIES).map((f) => f.replace(/^bench-|\.[a-z]+$/g, ''));

/** The proxies `--proxy=` names (all where it names none), each checked where it enters. */
function benchedOf(named) {
  if (!named) return BENCHED;
  for (const p of named)
    if (!BENCHED.includes(p)) throw new Error(`--proxy=${p}: no such proxy benched (${BENCHED.join(', ')})`);
  return named;
}

/** One proxy's run: its cases' outcomes read back from the run folder, per rate. */
async function runProxy(root, proxy, rates, seconds, { say, parseRunArgs }) {
  const tmp = mkdtempSync(join(tmpdir(), 'lab-bench-rate-'));
  try {
    const [own, text] = Object.entries(POLICIES).find(([f]) => f.startsWith(`bench-${proxy}.`));
    const file = join(tmp, own);
    writeFileSync(file, text);
    const name = `bench-${proxy}`;
    usePolicy({ policy: file, name }, root);
    const request = parseRunArgs(['spike', `load_rates=${rates.join(',')}`, `load_seconds=${seconds}`], { only: name });
    const lines = [];
    const code = await runSuite(root, request, { say: (m) => lines.push(m) });
    const dir = /results: (\S+);/.exec(lines.join('\n'))?.[1];
    const outcomes = JSON.parse(readFileSync(join(dir, 'outcomes.json'), 'utf8'));
    const counts = JSON.parse(readFileSync(join(dir, 'counts.json'), 'utf8'));
    say(`${proxy}: ${dir} (exit ${code})`);
    return rates.map((rate) => caseRow(proxy, rate, outcomes, counts, dir));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** A rate's figures: sent of the schedule, dropped, 200s and limited against the replay, and whether exact. */
function caseRow(proxy, rate, outcomes, counts, dir) {
  const o = outcomes.find((x) => x.case.endsWith(`-${rate}rps`));
  const lost = counts.filter((r) => r.case === o?.case && r.agree !== 'ok').length;
  const m = o?.measured ?? {};
  const requests = o ? Math.round(o.params.rate * o.params.seconds) : null;
  const exact = Boolean(o?.pass && o.judgedOn === 'replay' && m.dropped === 0 && m.sent === requests && !lost);
  return {
    proxy,
    rate,
    requests,
    sent: m.sent ?? null,
    dropped: m.dropped ?? null,
    ok: m.ok ?? null,
    okReplay: o?.expected?.ok ?? null,
    limited: m.limited ?? null,
    limitedReplay: o?.expected?.limited ?? null,
    judgedOn: o?.judgedOn ?? null,
    pass: o?.pass ?? false,
    lost,
    exact,
    run: dir.split('/').pop(),
  };
}

/** A replayed range as the table shows it. */
const range = (r) => (!r ? '-' : r.lo === r.hi ? String(r.lo) : `${r.lo}..${r.hi}`);

/**
 * `bench limiter-rate [--quick] [--proxy=NAME,..] [--rates=R,..]`: every rate per proxy (--quick:
 * three rates, 2 s each).
 */
export default async function benchLimiterRate(root, request, { say = console.log, parseRunArgs } = {}) {
  const quick = request.factor > 1;
  const rates = request.rates ?? (quick ? [800, 2400, 4000] : RATES);
  // Long enough for what a large bucket's fill asks (seconds, not a burst's moment).
  const seconds = quick ? 2 : 10;
  const benched = benchedOf(request.proxies);
  const rows = [];
  for (const proxy of benched) rows.push(...(await runProxy(root, proxy, rates, seconds, { say, parseRunArgs })));
  const highest = (proxy) => highestJudgedExactly(rows, proxy);
  const head = [
    'proxy',
    'r/s',
    'schedule',
    'sent',
    'dropped',
    '200',
    '200 (replay)',
    'limited',
    'limited (replay)',
    'lost',
    'judged exactly',
  ];
  say(
    `\nlimiters that reject at once, ${seconds} s per rate, one after another; ${machine()}\n\n${formatTable(
      rows.map((r) => [
        r.proxy,
        String(r.rate),
        String(r.requests),
        String(r.sent),
        String(r.dropped),
        String(r.ok),
        range(r.okReplay),
        String(r.limited),
        range(r.limitedReplay),
        String(r.lost),
        r.exact ? 'yes' : 'no',
      ]),
      head,
    )}\n`,
  );
  const result = {
    bench: 'limiter-rate',
    seconds,
    machine: machine(),
    rates,
    rows,
    highest: Object.fromEntries(benched.map((p) => [p, highest(p)])),
  };
  say(`highest rate judged exactly: ${benched.map((p) => `${p} ${result.highest[p]} r/s`).join(', ')}`);
  // Kept with the last proxy's run (a bench holds no run of its own beside the runs it makes):
  // record that folder in docs/runs/ and `./labw docs` writes thresholds/machine-rate.js from it.
  const out = join(root, 'results', rows.at(-1).run, 'bench.json');
  writeFileSync(out, JSON.stringify(result, null, 1));
  say(`figures: ${out}`);
  return 0;
}
