/*
 * `just bench <experiment> [--quick] [knobs]`, for json-filter and cdn. A benchmark, not a test:
 * it fails only when a run itself fails.
 *
 * json-filter: the stack up once, then each server in
 * turn (the filters, nginx, and the backend directly) under the seed's closed load, first by wrk
 * (as the seed measured), then by k6 with the same number of connections. Prints k r/s and the
 * ratios the goals are stated in; writes results/<run-id>/bench.json.
 *
 * k6: what k6 itself costs on this machine, for sizing k6-operator's runner pods: CPU per request
 * at fixed arrival rates against nginx answering at once (cdn's balancer's /healthz), and CPU
 * and memory per held VU.
 *
 * cdn: per cap level, the stack up with its caps and wrk with the seed's flags (-t4 -c10 -d60s)
 * against the load balancer; the uncapped level's CPU per request (from the cgroups) gives the
 * model's throughput for the others, printed beside the seed's and wrk's.
 */
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { plan as makePlan, stackTargets } from '../../thresholds/plan.js';
import { loadTopology } from '../stack/topology.mjs';
import { startStack, stopStack } from '../stack/start-stop.mjs';
import { requireTools } from '../stack/procs.mjs';
import { formatTable } from '../kinds/limiter.mjs';
import { labEnv, openRun } from '../run/suite.mjs';
import { predictCapped } from '../../thresholds/kinds/capped.js';

const SERVERS = [
  ['node', 'json-filter-node'],
  ['node-cluster', 'json-filter-node-cluster'],
  ['erlang', 'json-filter-erlang'],
  ['nginx', 'json-filter-nginx'],
  ['direct', 'json-filter-backend'],
];

function wrk(env, url, body, connections, seconds, { threads = 2, timeout = ['--timeout', '5s'] } = {}) {
  const script = body ? ['-s', 'stacks/json-filter/wrk-post.lua'] : [];
  const r = spawnSync('wrk', ['-t', String(threads), '-c', String(connections), '-d', `${seconds}s`, ...timeout, ...script, url],
    { env: { ...env, LAB_BODY: body || '' }, encoding: 'utf8' });
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

export async function bench(root, request, opts = {}) {
  const benches = { 'json-filter': benchJsonFilter, cdn: benchCdn, k6: benchK6 };
  if (!benches[request.name]) throw new Error(`no benchmark for '${request.name}'; there are: ${Object.keys(benches).join(', ')}`);
  return benches[request.name](root, request, opts);
}

async function benchCdn(root, request, { say = console.log } = {}) {
  const p = makePlan({ experiment: 'cdn', suite: 'load', factor: request.factor, overrides: request.overrides.cdn });
  const env = labEnv(root);
  requireTools(['wrk'], env);
  const seconds = Math.max(5, Math.round(p.cases[0].durationMs / 1000));
  const run = await openRun(root, 'bench-cdn', { kind: 'bench', say });
  const { dir, tmp, state } = run;
  const topology = loadTopology(join(root, 'docker-compose.yml'));
  const services = Object.values(p.roles).flat();
  const results = [];
  let costs = null;
  try {
    for (const c of p.cases) {
      const policy = { ...p.policy, caps: c.level.caps };
      say(`${c.level.id}: stack up${c.level.caps ? ` with ${c.level.caps}` : ''}, then wrk -t4 -c${c.vus} -d${seconds}s (the seed's flags)`);
      const stack = await startStack({ root, env, topology, experiment: 'cdn', policy, targets: stackTargets('cdn', p.knobs, policy), tmpDir: join(tmp, c.level.id), logDir: join(dir, 'logs', c.level.id), state, log: () => {} });
      try {
        const cpu = () => Object.fromEntries(stack.procs.filter((x) => x.cgroup).map((x) => [x.name, x.cgroup.stats().cpuS]));
        const before = cpu();
        // wrk's default 2 s timeout, as the seed ran it (its timeouts are in the seed's tables).
        const w = wrk(env, `${stack.baseUrls['cdn-lb']}/`, null, c.vus, seconds, { threads: 4, timeout: [] });
        const after = cpu();
        const model = costs && c.level.cpu ? predictCapped({ costs, caps: Object.fromEntries(services.map((s) => [s, c.level.cpu / 100])) }) : null;
        if (!c.level.cpu && !c.level.mem) costs = Object.fromEntries(services.map((s) => [s, (after[s] - before[s]) / w.requests]));
        results.push({ level: c.level.id, seed: c.seed?.rps ?? null, model: model?.rps ?? null, bottleneck: model?.bottleneck ?? null, wrk: w });
      } finally {
        await stopStack(stack);
      }
    }
  } finally {
    run.close();
  }
  const first = results[0];
  const f = (x, d = 1) => (x === null || x === undefined ? '-' : x.toFixed(d));
  const rows = results.map((r) => [r.level, f(r.seed), f(r.model), r.bottleneck ?? '-', f(r.wrk.rps), `${r.wrk.non2xx + r.wrk.socketErrors}`,
    f(r.seed && first.seed ? r.seed / first.seed : null, 3), f(r.wrk.rps / first.wrk.rps, 3), f(r.model ? r.wrk.rps / r.model : null, 2)]);
  const head = ['level', 'seed r/s', 'model r/s', 'bottleneck', 'wrk r/s', 'wrk errors', 'seed / uncapped', 'wrk / uncapped', 'wrk / model'];
  writeFileSync(join(dir, 'bench.json'), JSON.stringify({ seconds, machine: machine(), costs, results: results.map(({ wrk: { raw, ...w }, ...r }) => ({ ...r, wrk: w })) }, null, 1));
  say(`\nwrk -t4 -c10 -d${seconds}s against the load balancer per cap level; ${machine()}\n\n${formatTable(rows, head)}\n`);
  say(`CPU per request (uncapped, wrk): ${Object.entries(costs || {}).map(([s, x]) => `${s} ${f(x * 1e6, 0)} us`).join(', ')}`);
  say(`\nresults: ${dir}`);
  return 0;
}

/** k6's CPU seconds (utime + stime) and peak RSS, polled from /proc until it exits. */
function runMeasured(env, args) {
  return new Promise((resolve, reject) => {
    const k6 = spawn('k6', args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    k6.stderr.on('data', (d) => { err = (err + d).slice(-2000); });
    let cpuS = 0;
    let rssKiB = 0;
    const poll = () => {
      try {
        const stat = readFileSync(`/proc/${k6.pid}/stat`, 'utf8');
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        cpuS = (Number(f[11]) + Number(f[12])) / 100;
        rssKiB = Math.max(rssKiB, Number((/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${k6.pid}/status`, 'utf8')) || [])[1] || 0));
      } catch { /* exited */ }
    };
    const timer = setInterval(poll, 100);
    k6.on('exit', (code) => {
      clearInterval(timer);
      if (code !== 0) reject(new Error(`k6 ${args.join(' ')}: code ${code}: ${err}`));
      else resolve({ cpuS, rssMiB: rssKiB / 1024 });
    });
  });
}

async function benchK6(root, request, { say = console.log } = {}) {
  const p = makePlan({ experiment: 'cdn', suite: 'smoke' });
  const env = labEnv(root);
  requireTools(['k6'], env);
  const seconds = request.factor > 1 ? 4 : 10;
  const run = await openRun(root, 'bench-k6', { kind: 'bench', say });
  const { dir, tmp, state } = run;
  const rows = [];
  const figures = { rates: [], vus: [] };
  let stack;
  try {
    stack = await startStack({ root, env, topology: loadTopology(join(root, 'docker-compose.yml')), experiment: 'cdn', policy: p.policy, targets: [], tmpDir: tmp, logDir: join(dir, 'logs'), state, log: () => {} });
    const url = `${stack.baseUrls['cdn-lb']}/healthz`;
    const k6 = (extra, tag) => ['run', '--quiet', '-e', `URL=${url}`, '-e', `DURATION=${seconds}s`, '-e', `OUT=${join(tmp, `${tag}.json`)}`, ...extra, 'k6/k6-cost.js'];
    const count = (tag) => JSON.parse(readFileSync(join(tmp, `${tag}.json`), 'utf8')).metrics.http_reqs.values.count;
    for (const rate of [500, 1000, 2000, 4000]) {
      say(`k6 at ${rate} r/s for ${seconds} s`);
      const m = await runMeasured(env, k6(['-e', `RATE=${rate}`], `rate${rate}`));
      const n = count(`rate${rate}`);
      figures.rates.push({ rate, requests: n, ...m, usPerRequest: (m.cpuS * 1e6) / n });
    }
    for (const vus of [100, 1000, 3000]) {
      say(`k6 holding ${vus} VUs (a request every 10 s each) for ${seconds} s`);
      const m = await runMeasured(env, k6(['-e', `VUS=${vus}`, '-e', 'PAUSE=10'], `vus${vus}`));
      figures.vus.push({ vus, requests: count(`vus${vus}`), ...m });
    }
  } finally {
    if (stack) await stopStack(stack);
    run.close();
  }
  const f = (x, d = 1) => x.toFixed(d);
  for (const r of figures.rates) rows.push([`${r.rate} r/s`, String(r.requests), f(r.cpuS, 2), f(r.usPerRequest, 0), f((r.cpuS / seconds) * 100, 0), f(r.rssMiB, 0)]);
  for (const v of figures.vus) rows.push([`${v.vus} VUs held`, String(v.requests), f(v.cpuS, 2), '-', f((v.cpuS / seconds) * 100, 0), f(v.rssMiB, 0)]);
  // Memory per VU: the slope between the smallest and the largest held-VU runs.
  const [a, b] = [figures.vus[0], figures.vus.at(-1)];
  const mibPerVu = (b.rssMiB - a.rssMiB) / (b.vus - a.vus);
  const usPerReq = Math.max(...figures.rates.map((r) => r.usPerRequest));
  writeFileSync(join(dir, 'bench.json'), JSON.stringify({ seconds, machine: machine(), ...figures, mibPerVu, usPerReq }, null, 1));
  say(`\nk6 alone (no outputs) against nginx's /healthz, ${seconds} s each; ${machine()}\n\n${formatTable(rows, ['load', 'requests', 'k6 CPU s', 'us CPU/req', '% of a core', 'peak RSS MiB'])}\n`);
  say(`sizing: a runner pod with c cores at 70 % serves c x 0.7 / ${f(usPerReq, 0)} us = ${f(0.7 / (usPerReq / 1e6), 0)} r/s per core (the costliest rate above); memory ${f(mibPerVu * 1024, 0)} KiB per VU beyond a base of ${f(a.rssMiB - a.vus * mibPerVu, 0)} MiB`);
  say(`\nresults: ${dir}`);
  return 0;
}

async function benchJsonFilter(root, request, { say = console.log } = {}) {
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
