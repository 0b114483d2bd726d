/*
 * `just bench json-filter [--quick] [knobs]`: the json-filter stack up once, then each server in
 * turn (the filters, nginx, and the backend directly) under the seed's closed load, first by wrk
 * (as the seed measured), then by k6 with the same number of connections. Prints k r/s and the
 * ratios the goals are stated in; writes results/<run-id>/bench.json. A benchmark, not a test:
 * it fails only when a run itself fails.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { plan as makePlan, stackTargets } from '../thresholds/plan.js';
import { loadTopology } from './topology.mjs';
import { startStack, stopStack } from './stack.mjs';
import { requireTools } from './procs.mjs';
import { formatTable } from './report.mjs';
import { labEnv, openRun } from './run.mjs';

const SERVERS = [
  ['node', 'json-filter-node'],
  ['node-cluster', 'json-filter-node-cluster'],
  ['erlang', 'json-filter-erlang'],
  ['nginx', 'json-filter-nginx'],
  ['direct', 'json-filter-backend'],
];

function wrk(env, url, body, connections, seconds) {
  const r = spawnSync('wrk', ['-t', '2', '-c', String(connections), '-d', `${seconds}s`, '--timeout', '5s', '-s', 'stacks/json-filter/wrk-post.lua', url],
    { env: { ...env, LAB_BODY: body }, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`wrk ${url}: ${r.stderr || r.stdout}`);
  const num = (re) => Number((re.exec(r.stdout) || [])[1] ?? 0);
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(r.stdout);
  return {
    rps: num(/Requests\/sec:\s+([\d.]+)/),
    requests: num(/(\d+) requests in/),
    non2xx: num(/Non-2xx or 3xx responses: (\d+)/),
    socketErrors: sock ? sock.slice(1).reduce((a, b) => a + Number(b), 0) : 0,
    raw: r.stdout,
  };
}

function k6(env, url, connections, seconds, out) {
  const r = spawnSync('k6', ['run', '--quiet', '-e', `URL=${url}`, '-e', `VUS=${connections}`, '-e', `DURATION=${seconds}s`, '-e', `OUT=${out}`, 'k6/json-filter-bench.js'],
    { env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`k6 ${url}: ${r.stderr.slice(-2000)}`);
  const m = JSON.parse(readFileSync(out, 'utf8')).metrics;
  return { rps: Math.round(m.http_reqs.values.count / seconds), failed: m.http_req_failed.values.rate, p99: m.http_req_duration.values['p(99)'] };
}

export async function bench(root, request, { say = console.log } = {}) {
  if (request.name !== 'json-filter') throw new Error(`no benchmark for '${request.name}'; there is one for json-filter`);
  const p = makePlan({ experiment: 'json-filter', suite: 'smoke', overrides: request.overrides['json-filter'] });
  const env = labEnv(root);
  requireTools(['wrk', 'k6'], env);
  const seconds = request.factor > 1 ? Math.max(3, Math.round(20 / request.factor)) : 20;
  const connections = p.knobs.connections;
  const run = await openRun(root, 'bench', { kind: 'bench', say });
  const { dir, tmp, state } = run;
  const body = join(tmp, 'relay.json');
  writeFileSync(body, JSON.stringify({ ...JSON.parse(readFileSync(join(root, 'k6', 'json-filter-sample.json'), 'utf8')), relay: true }));
  let stack;
  const results = [];
  try {
    stack = await startStack({ root, env, topology: loadTopology(join(root, 'docker-compose.yml')), experiment: 'json-filter', policy: p.policy, targets: stackTargets('json-filter', p.knobs, p.policy), tmpDir: tmp, logDir: join(dir, 'logs'), state, log: (m) => say(`  ${m}`) });
    for (const [name, service] of SERVERS) {
      const url = `${stack.baseUrls[service]}/filter`;
      say(`${name}: wrk -c ${connections} for ${seconds} s, then k6 with ${connections} VUs`);
      const w = wrk(env, url, body, connections, seconds);
      await new Promise((r) => setTimeout(r, 2000));
      const k = k6(env, url, connections, seconds, join(tmp, `k6-${name}.json`));
      results.push({ name, wrk: w, k6: k });
      await new Promise((r) => setTimeout(r, 2000));
    }
  } finally {
    if (stack) await stopStack(stack);
    run.close();
  }
  const by = Object.fromEntries(results.map((r) => [r.name, r.wrk.rps]));
  const ratio = (a, b) => (b ? (a / b).toFixed(2) : '-');
  const rows = results.map((r) => [
    r.name,
    (r.wrk.rps / 1000).toFixed(2),
    `${r.wrk.non2xx + r.wrk.socketErrors}`,
    (r.k6.rps / 1000).toFixed(2),
    `${(r.k6.failed * 100).toFixed(2)} %`,
    ['direct', 'nginx'].includes(r.name) ? '-' : ratio(r.wrk.rps, by.nginx),
    r.name === 'direct' ? '-' : ratio(r.wrk.rps, by.direct),
  ]);
  const head = ['server', 'wrk k r/s', 'wrk errors', 'k6 k r/s', 'k6 failed', '/ nginx', '/ direct'];
  const table = formatTable(rows, head);
  const goals = [
    ['Node single >= 0.8 x nginx', by.node >= 0.8 * by.nginx, ratio(by.node, by.nginx)],
    ['Erlang >= Node single', by.erlang >= by.node, ratio(by.erlang, by.node)],
    ...['node', 'node-cluster', 'erlang'].map((n) => [`${n} costs <= 20 % against direct`, by[n] >= 0.8 * by.direct, ratio(by[n], by.direct)]),
  ];
  writeFileSync(join(dir, 'bench.json'), JSON.stringify({ connections, seconds, machine: machine(), results: results.map(({ wrk: { raw, ...w }, ...r }) => ({ ...r, wrk: w })), goals }, null, 1));
  say(`\n${connections} connections, ${seconds} s each, every document relayed; ${machine()}\n\n${table}\n`);
  for (const [g, met, r] of goals) say(`goal ${met ? 'met    ' : 'NOT met'}  ${g} (${r})`);
  say(`\nresults: ${dir}`);
  return 0;
}

function machine() {
  const cpu = (/model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8')) || [])[1] || 'unknown CPU';
  return `${cpu.trim()}, ${spawnSync('nproc', { encoding: 'utf8' }).stdout.trim()} cores`;
}
