/*
 * `bench k6`: what k6 itself costs on this machine, for sizing k6-operator's runner pods: CPU per
 * request at fixed arrival rates against nginx answering at once (cdn's balancer's /healthz),
 * and CPU and memory per held VU.
 */
import { writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { plan as makePlan } from '../../thresholds/plan.js';
import { loadTopology } from '../stack/topology.mjs';
import { startStack, stopStack } from '../stack/start-stop.mjs';
import { requireTools } from '../stack/procs.mjs';
import { formatTable } from '../judge/table.mjs';
import { labEnv, openRun } from '../run/suite.mjs';
import { runMeasured, machine } from './tools.mjs';

/** k6 alone (k6/k6-cost.js) at each arrival rate, then holding each number of VUs, measured: {rates, vus}. */
async function measureK6(env, url, { tmp, seconds, say }) {
  const figures = { rates: [], vus: [] };
  const k6 = (extra, tag) => [
    'run',
    '--quiet',
    '-e',
    `URL=${url}`,
    '-e',
    `DURATION=${seconds}s`,
    '-e',
    `OUT=${join(tmp, `${tag}.json`)}`,
    ...extra,
    'k6/k6-cost.js',
  ];
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
  return figures;
}

/** The bench's table: per rate and per held VU count, k6's CPU and peak memory. */
function k6Table(figures, seconds) {
  const f = (x, d = 1) => x.toFixed(d);
  const share = (cpuS) => f((cpuS / seconds) * 100, 0);
  const rows = [
    ...figures.rates.map((r) => [
      `${r.rate} r/s`,
      String(r.requests),
      f(r.cpuS, 2),
      f(r.usPerRequest, 0),
      share(r.cpuS),
      f(r.rssMiB, 0),
    ]),
    ...figures.vus.map((v) => [
      `${v.vus} VUs held`,
      String(v.requests),
      f(v.cpuS, 2),
      '-',
      share(v.cpuS),
      f(v.rssMiB, 0),
    ]),
  ];
  return formatTable(rows, ['load', 'requests', 'k6 CPU s', 'us CPU/req', '% of a core', 'peak RSS MiB']);
}

/** `bench k6`: nginx's /healthz up (cdn's balancer), k6 measured against it, the table and the sizing it gives. */
export default async function benchK6(root, request, { say = console.log } = {}) {
  const p = makePlan({ experiment: 'cdn', suite: 'smoke' });
  const env = labEnv(root);
  requireTools(['k6'], env);
  const seconds = request.factor > 1 ? 4 : 10;
  const run = await openRun(root, 'bench-k6', { kind: 'bench', say });
  const { dir, tmp, state } = run;
  let figures;
  let stack;
  try {
    stack = await startStack({
      root,
      env,
      topology: loadTopology(join(root, 'docker-compose.yml')),
      profile: 'cdn',
      policy: p.policy,
      targets: [],
      tmpDir: tmp,
      logDir: join(dir, 'logs'),
      state,
      log: () => {},
    });
    figures = await measureK6(env, `${stack.baseUrls['cdn-lb']}/healthz`, { tmp, seconds, say });
  } finally {
    if (stack) await stopStack(stack);
    run.close();
  }
  // Memory per VU: the slope between the smallest and the largest held-VU runs.
  const [a, b] = [figures.vus[0], figures.vus.at(-1)];
  const mibPerVu = (b.rssMiB - a.rssMiB) / (b.vus - a.vus);
  const usPerReq = Math.max(...figures.rates.map((r) => r.usPerRequest));
  writeFileSync(
    join(dir, 'bench.json'),
    JSON.stringify({ seconds, machine: machine(), ...figures, mibPerVu, usPerReq }, null, 1),
  );
  say(
    `\nk6 alone (no outputs) against nginx's /healthz, ${seconds} s each; ${machine()}\n\n${k6Table(figures, seconds)}\n`,
  );
  const f = (x) => x.toFixed(0);
  say(
    `sizing: a runner pod with c cores at 70 % serves c x 0.7 / ${f(usPerReq)} us = ${f(0.7 / (usPerReq / 1e6))} r/s per core (the costliest rate above); memory ${f(mibPerVu * 1024)} KiB per VU beyond a base of ${f(a.rssMiB - a.vus * mibPerVu)} MiB`,
  );
  say(`\nresults: ${dir}`);
  return 0;
}
