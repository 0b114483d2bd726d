/*
 * `bench tls`: what TLS costs per request, for k6 and for nginx, on this machine: one nginx of a
 * team's shape (a lab-rendered policy whose limit never binds) listening three ways, plain
 * HTTP/1.1, TLS with HTTP/1.1, and TLS with HTTP/2, and k6 alone (k6/k6-cost.js) at a fixed rate
 * against each in turn; k6's CPU from its /proc, nginx's (master and workers) from theirs, per
 * request. The plans size a TLS case's VUs and the machine's judged rate by the ratio.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { usePolicy } from '../policy/use.mjs';
import { resolveKnobs } from '../../thresholds/knobs.js';
import { loadTopology } from '../stack/topology.mjs';
import { startStack, stopStack } from '../stack/start-stop.mjs';
import { requireTools } from '../stack/procs.mjs';
import { statFields, TICKS_PER_S } from '../stack/cpu.mjs';
import { formatTable } from '../judge/table.mjs';
import { labEnv, openRun } from '../run/suite.mjs';
import { runMeasured, machine } from './tools.mjs';

// One server per way of listening; a limit far above any rate here (a team's shape, never binding).
const POLICY = [
  'events { worker_connections 8192; }',
  'http {',
  '    limit_req_zone $server_name zone=open:1m rate=100000r/s;',
  '    server { listen 8080; server_name plain.lab; location / { limit_req zone=open burst=100000 nodelay; proxy_pass http://127.0.0.1:9; } }',
  '    server { listen 8443 ssl; server_name tls.lab; ssl_certificate /etc/ssl/x.pem; ssl_certificate_key /etc/ssl/x.key;',
  '             location / { limit_req zone=open burst=100000 nodelay; proxy_pass http://127.0.0.1:9; } }',
  '    server { listen 9443 ssl http2; server_name h2.lab; ssl_certificate /etc/ssl/x.pem; ssl_certificate_key /etc/ssl/x.key;',
  '             location / { limit_req zone=open burst=100000 nodelay; proxy_pass http://127.0.0.1:9; } }',
  '}',
  '',
].join('\n');

/** CPU seconds of a process and its children (nginx's master and workers), from /proc. */
function treeCpuS(pid) {
  let ticks = 0;
  const kids = (p) => {
    try {
      return readFileSync(`/proc/${p}/task/${p}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    } catch {
      return [];
    }
  };
  const walk = (p) => {
    const s = statFields(p);
    if (s) ticks += s.ticks;
    kids(p).forEach(walk);
  };
  walk(pid);
  return ticks / TICKS_PER_S;
}

/** k6 at `rate` for `seconds` against `url` (k6's hosts mapping the name to 127.0.0.1), with nginx's CPU beside. */
async function measureWay(env, way, { rate, seconds, tmp, nginxPid }) {
  const before = treeCpuS(nginxPid);
  const out = join(tmp, `${way.name.replace(/[^a-z0-9]+/gi, '-')}.json`);
  const m = await runMeasured(env, [
    'run',
    '--quiet',
    '--insecure-skip-tls-verify',
    '-e',
    `URL=${way.url}`,
    '-e',
    `RATE=${rate}`,
    '-e',
    `DURATION=${seconds}s`,
    '-e',
    `OUT=${out}`,
    'k6/k6-cost.js',
  ]);
  const nginxS = treeCpuS(nginxPid) - before;
  const summary = JSON.parse(readFileSync(out, 'utf8'));
  const n = summary.metrics.http_reqs.values.count;
  const protos = summary.metrics.http_req_duration ? way.proto : '-';
  return {
    way: way.name,
    proto: protos,
    requests: n,
    k6S: m.cpuS,
    nginxS,
    k6Us: (m.cpuS * 1e6) / n,
    nginxUs: (nginxS * 1e6) / n,
  };
}

/** The stack up, k6 over each way of listening in turn, the stack down: a row per way. */
async function measureWays(root, experiment, run, { rate, seconds, say }) {
  const env = labEnv(root);
  requireTools(['k6'], env);
  const topology = loadTopology(join(root, 'docker-compose.yml'));
  Object.assign(topology.services, experiment.services);
  const rows = [];
  let stack;
  try {
    stack = await startStack({
      root,
      env,
      topology,
      profile: 'bench-tls',
      policy: resolveKnobs(experiment),
      targets: [],
      tmpDir: run.tmp,
      logDir: join(run.dir, 'logs'),
      state: run.state,
      log: () => {},
    });
    const nginx = stack.procs.find((p) => p.name === 'bench-tls-nginx');
    // Each server's origin as the plan gives it (its place's port, TLS where it listens with ssl).
    const ways = experiment.targets(resolveKnobs(experiment)).map(({ request: { origin } }) => ({
      name: origin.includes('plain') ? 'HTTP/1.1' : origin.includes('h2') ? 'TLS, HTTP/2' : 'TLS, HTTP/1.1',
      proto: origin.includes('h2') ? 'HTTP/2.0' : 'HTTP/1.1',
      url: `${origin.replace(/\/\/[^:]+:/, '//127.0.0.1:')}/`,
    }));
    for (const way of ways) {
      say(`k6 at ${rate} r/s for ${seconds} s over ${way.name}`);
      rows.push(await measureWay(env, way, { rate, seconds, tmp: run.tmp, nginxPid: nginx.pid }));
    }
  } finally {
    if (stack) await stopStack(stack);
  }
  return rows;
}

/** `bench tls [--quick]`: plain, TLS and TLS with HTTP/2, at one rate. */
export default async function benchTls(root, request, { say = console.log } = {}) {
  const rate = 1000;
  const seconds = request.factor > 1 ? 5 : 15;
  const dir0 = mkdtempSync(join(tmpdir(), 'lab-bench-tls-'));
  const file = join(dir0, 'tls-bench.conf');
  writeFileSync(file, POLICY);
  let rows;
  let run;
  try {
    const { experiment } = usePolicy({ policy: file, name: 'bench-tls' }, root);
    run = await openRun(root, 'bench-tls', { kind: 'bench', say });
    rows = await measureWays(root, experiment, run, { rate, seconds, say });
  } finally {
    run?.close();
    rmSync(dir0, { recursive: true, force: true });
  }
  const plain = rows.find((r) => r.way === 'HTTP/1.1');
  const f = (x, d = 0) => x.toFixed(d);
  const table = formatTable(
    rows.map((r) => [
      r.way,
      String(r.requests),
      f(r.k6Us),
      f(r.k6Us / plain.k6Us, 2),
      f(r.nginxUs),
      f(r.nginxUs / plain.nginxUs, 2),
    ]),
    ['listener', 'requests', 'k6 us CPU/req', 'k6 x plain', 'nginx us CPU/req', 'nginx x plain'],
  );
  writeFileSync(
    join(run.dir, 'bench.json'),
    JSON.stringify({ bench: 'tls', rate, seconds, machine: machine(), rows }, null, 1),
  );
  say(
    `\nk6 at ${rate} r/s, ${seconds} s per listener, against one nginx (its master and workers); ${machine()}\n\n${table}\n`,
  );
  say(`results: ${run.dir}`);
  return 0;
}
