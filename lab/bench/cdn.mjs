/*
 * `bench cdn [--quick] [knobs]`: per cap level, the stack up with its caps and wrk with the seed's
 * flags (-t4 -c10 -d60s) against the load balancer; the cost level's CPU per request (from the
 * cgroups) gives the model's throughput for the later levels, printed beside the seed's and wrk's.
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

/**
 * One cap level: its stack up with the level's caps, wrk with the seed's flags against the
 * balancer, the CPU each capped service used (from its cgroup). Returns {result, costs}: costs
 * measured at the cost level, else the ones given.
 */
async function benchLevel(c, { root, env, topology, p, run, seconds, services, costs, say }) {
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
    tmpDir: join(run.tmp, c.level.id),
    logDir: join(run.dir, 'logs', c.level.id),
    state: run.state,
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
      costs && c.level.cpu && !c.level.measuresCosts
        ? predictCapped({ costs, caps: Object.fromEntries(services.map((s) => [s, c.level.cpu / 100])) })
        : null;
    const measured = c.level.measuresCosts
      ? Object.fromEntries(services.map((s) => [s, (after[s] - before[s]) / w.requests]))
      : costs;
    const result = {
      level: c.level.id,
      seed: c.seed?.rps ?? null,
      model: model?.rps ?? null,
      bottleneck: model?.bottleneck ?? null,
      wrk: w,
    };
    return { result, costs: measured };
  } finally {
    await stopStack(stack);
  }
}

const fixedOrDash = (x, d = 1) => (x === null || x === undefined ? '-' : x.toFixed(d));

/** The levels' table: the seed's, the model's and wrk's throughput, and each against the uncapped. */
function levelsTable(results) {
  const first = results[0];
  const f = fixedOrDash;
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
  return formatTable(rows, head);
}

/** `bench cdn`: every cap level in turn, then the table and the cost level's CPU per request. */
export default async function benchCdn(root, request, { say = console.log } = {}) {
  const p = makePlan({ experiment: 'cdn', suite: 'load', factor: request.factor, overrides: request.overrides.cdn });
  const env = labEnv(root);
  requireTools(['wrk'], env);
  const seconds = Math.max(5, Math.round(p.cases[0].durationMs / 1000));
  const run = await openRun(root, 'bench-cdn', { kind: 'bench', say });
  const topology = loadTopology(join(root, 'docker-compose.yml'));
  const services = Object.values(p.roles).flat();
  const results = [];
  let costs = null;
  try {
    for (const c of p.cases) {
      const level = await benchLevel(c, { root, env, topology, p, run, seconds, services, costs, say });
      results.push(level.result);
      costs = level.costs;
    }
  } finally {
    run.close();
  }
  writeFileSync(
    join(run.dir, 'bench.json'),
    JSON.stringify({ seconds, machine: machine(), costs, results: withoutRaw(results) }, null, 1),
  );
  say(
    `\nwrk -t4 -c10 -d${seconds}s against the load balancer per cap level; ${machine()}\n\n${levelsTable(results)}\n`,
  );
  const perRequest = Object.entries(costs || {}).map(([s, x]) => `${s} ${fixedOrDash(x * 1e6, 0)} us`);
  say(`CPU per request (the cost level, wrk): ${perRequest.join(', ')}`);
  say(`\nresults: ${run.dir}`);
  return 0;
}
