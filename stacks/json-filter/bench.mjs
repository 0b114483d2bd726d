/*
 * `bench json-filter [--quick] [knobs]`: the stack up once, then each server in turn (the
 * filters, nginx, and the backend directly) under the seed's closed load, first by wrk (as the
 * seed measured), then by k6 with the same number of connections. Prints k r/s and the ratios
 * the goals are stated in; writes results/<run-id>/bench.json.
 */
import { writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { plan as makePlan, stackTargets } from '../../thresholds/plan.js';
import { loadTopology } from '../../lab/stack/topology.mjs';
import { startStack, stopStack } from '../../lab/stack/start-stop.mjs';
import { requireTools } from '../../lab/stack/procs.mjs';
import { formatTable } from '../../lab/judge/table.mjs';
import { labEnv, openRun } from '../../lab/run/suite.mjs';
import { wrk, k6, withoutRaw, machine } from '../../lab/bench/tools.mjs';

const SERVERS = [
  ['node', 'json-filter-node'],
  ['node-cluster', 'json-filter-node-cluster'],
  ['erlang', 'json-filter-erlang'],
  ['nginx', 'json-filter-nginx'],
  ['direct', 'json-filter-backend'],
];

export default async function benchJsonFilter(root, request, { say = console.log } = {}) {
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
    stack = await startStack({ root, env, topology: loadTopology(join(root, 'docker-compose.yml')), profile: 'json-filter', policy: p.policy, targets: stackTargets('json-filter', p.knobs, p.policy), tmpDir: tmp, logDir: join(dir, 'logs'), state, log: (m) => say(`  ${m}`) });
    for (const [name, service] of SERVERS) {
      const url = `${stack.baseUrls[service]}/filter`;
      say(`${name}: wrk -c ${connections} for ${seconds} s, then k6 with ${connections} VUs`);
      const w = wrk(env, url, connections, seconds, { script: 'stacks/json-filter/wrk-post.lua', body });
      await new Promise((r) => setTimeout(r, 2000));
      const k = k6(env, 'k6/json-filter-bench.js', url, connections, seconds, join(tmp, `k6-${name}.json`));
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
  writeFileSync(join(dir, 'bench.json'), JSON.stringify({ connections, seconds, machine: machine(), results: withoutRaw(results), goals }, null, 1));
  say(`\n${connections} connections, ${seconds} s each, every document relayed; ${machine()}\n\n${table}\n`);
  for (const [g, met, r] of goals) say(`goal ${met ? 'met    ' : 'NOT met'}  ${g} (${r})`);
  say(`\nresults: ${dir}`);
  return 0;
}
