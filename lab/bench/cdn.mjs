/*
 * `bench cdn [--quick] [knobs]`: per cap level, the stack up with its caps and wrk with the seed's
 * flags (-t4 -c10 -d60s) against the load balancer; the uncapped level's CPU per request (from the
 * cgroups) gives the model's throughput for the others, printed beside the seed's and wrk's.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { plan as makePlan, stackTargets } from '../../thresholds/plan.js';
import { predictCapped } from '../../thresholds/kinds/capped.js';
import { loadTopology } from '../stack/topology.mjs';
import { startStack, stopStack } from '../stack/start-stop.mjs';
import { requireTools } from '../stack/procs.mjs';
import { formatTable } from '../judge/table.mjs';
import { labEnv, openRun } from '../run/suite.mjs';
import { wrk, withoutRaw, machine } from './tools.mjs';

export default async function benchCdn(root, request, { say = console.log } = {}) {
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
      say(
        `${c.level.id}: stack up${c.level.caps ? ` with ${c.level.caps}` : ''}, then wrk -t4 -c${c.vus} -d${seconds}s (the seed's flags)`,
      );
      const stack = await startStack({
        root,
        env,
        topology,
        profile: 'cdn',
        policy,
        targets: stackTargets('cdn', p.knobs, policy),
        tmpDir: join(tmp, c.level.id),
        logDir: join(dir, 'logs', c.level.id),
        state,
        log: () => {},
      });
      try {
        const cpu = () =>
          Object.fromEntries(stack.procs.filter((x) => x.cgroup).map((x) => [x.name, x.cgroup.stats().cpuS]));
        const before = cpu();
        // wrk's default 2 s timeout, as the seed ran it (its timeouts are in the seed's tables).
        const w = wrk(env, `${stack.baseUrls['cdn-lb']}/`, c.vus, seconds, { threads: 4, timeoutS: null });
        const after = cpu();
        const model =
          costs && c.level.cpu
            ? predictCapped({ costs, caps: Object.fromEntries(services.map((s) => [s, c.level.cpu / 100])) })
            : null;
        if (!c.level.cpu && !c.level.mem)
          costs = Object.fromEntries(services.map((s) => [s, (after[s] - before[s]) / w.requests]));
        results.push({
          level: c.level.id,
          seed: c.seed?.rps ?? null,
          model: model?.rps ?? null,
          bottleneck: model?.bottleneck ?? null,
          wrk: w,
        });
      } finally {
        await stopStack(stack);
      }
    }
  } finally {
    run.close();
  }
  const first = results[0];
  const f = (x, d = 1) => (x === null || x === undefined ? '-' : x.toFixed(d));
  const rows = results.map((r) => [
    r.level,
    f(r.seed),
    f(r.model),
    r.bottleneck ?? '-',
    f(r.wrk.rps),
    `${r.wrk.non2xx + r.wrk.socketErrors}`,
    f(r.seed && first.seed ? r.seed / first.seed : null, 3),
    f(r.wrk.rps / first.wrk.rps, 3),
    f(r.model ? r.wrk.rps / r.model : null, 2),
  ]);
  const head = [
    'level',
    'seed r/s',
    'model r/s',
    'bottleneck',
    'wrk r/s',
    'wrk errors',
    'seed / uncapped',
    'wrk / uncapped',
    'wrk / model',
  ];
  writeFileSync(
    join(dir, 'bench.json'),
    JSON.stringify({ seconds, machine: machine(), costs, results: withoutRaw(results) }, null, 1),
  );
  say(
    `\nwrk -t4 -c10 -d${seconds}s against the load balancer per cap level; ${machine()}\n\n${formatTable(rows, head)}\n`,
  );
  say(
    `CPU per request (uncapped, wrk): ${Object.entries(costs || {})
      .map(([s, x]) => `${s} ${f(x * 1e6, 0)} us`)
      .join(', ')}`,
  );
  say(`\nresults: ${dir}`);
  return 0;
}
