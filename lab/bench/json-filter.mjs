/*
 * `bench json-filter [--quick] [knobs]`: the stack up once, then
 * - relayed requests per CPU-second of each server's own process group (from /proc), at a light
 *   and a heavy closed load (wrk -t1), each point repeated, as ratios to nginx relaying
 *   everything: what a filter costs for the same relay, the measure issue 19's goals are in;
 * - each filter and nginx loaded at the same time (two-at-once.mjs), the ratio of their CPU per
 *   request in each round: the same measure, which the host's slow spells move less;
 * - each server in turn (the filters, nginx, and the backend directly) under the seed's closed
 *   load, first by wrk (as the seed measured), then by k6 with the same number of connections.
 * Prints figures and the ratios the goals are stated in; judges nothing; writes
 * results/<run-id>/bench.json.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { plan as makePlan, stackTargets } from '../../thresholds/plan.js';
import { loadTopology } from '../stack/topology.mjs';
import { startStack, stopStack } from '../stack/start-stop.mjs';
import { requireTools } from '../stack/procs.mjs';
import { formatTable } from '../judge/table.mjs';
import { labEnv, openRun, gitState } from '../run/suite.mjs';
import { wrk, k6, withoutRaw, machine } from './tools.mjs';
import { groupTicks, TICKS_PER_S } from '../stack/cpu.mjs';
import { perCpuSummary, median, spread } from './per-cpu.mjs';
import { twoAtOnce, TWO_AT_ONCE, relayDocument } from './two-at-once.mjs';

const SERVERS = [
  ['node', 'json-filter-node'],
  ['node-cluster', 'json-filter-node-cluster'],
  ['erlang', 'json-filter-erlang'],
  ['nginx', 'json-filter-nginx'],
  ['direct', 'json-filter-backend'],
];

// The per-CPU points: wrk -t1 with few connections (about 2 k r/s here) and with many (8 k r/s
// and more), every document relayed, 8 s each: at 10 ms per CPU tick that is a 0.3 % resolution
// at half a core. Each point is repeated, servers taking turns, so a slow spell hits them all.
const LOADS = [64, 400];
const FILTERS = ['node', 'node-cluster', 'erlang'];
const POINT_S = 8;
const REPEATS = 3;

/** One point: wrk against `service`, its process group's CPU read before and after. */
function perCpuPoint(env, stack, service, connections, body) {
  const group = stack.procs.find((p) => p.name === service).pid;
  const before = groupTicks([group])[group];
  const w = wrk(env, `${stack.baseUrls[service]}/filter`, connections, POINT_S, {
    script: 'stacks/json-filter/wrk-post.lua',
    body,
    threads: 1,
  });
  const cpuS = (groupTicks([group])[group] - before) / TICKS_PER_S;
  const relayed = w.requests - w.non2xx;
  return { rps: w.rps, relayed, errors: w.non2xx + w.socketErrors, cpuS, perCpuS: cpuS > 0 ? relayed / cpuS : null };
}

/** Per load, per server: relayed requests per CPU-second over the repeats, and over nginx's in the same repeat. */
async function perCpu(env, stack, body, say) {
  const points = [];
  for (const connections of LOADS) {
    for (let rep = 0; rep < REPEATS; rep += 1) {
      for (const [name, service] of SERVERS) {
        say(`per CPU: ${name}, wrk -t1 -c ${connections} for ${POINT_S} s (${rep + 1} of ${REPEATS})`);
        points.push({ connections, rep, name, ...perCpuPoint(env, stack, service, connections, body) });
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }
  const summary = perCpuSummary(points, 'nginx');
  const rows = summary.map((r) => [
    String(r.connections),
    r.name,
    median(r.rps.map((x) => x / 1000)).toFixed(2),
    String(r.errors),
    spread(r.perCpuS.map((x) => x / 1000)),
    r.ratios ? spread(r.ratios) : '-',
  ]);
  // Issue 19's goals, on the medians of the ratios to nginx at each load.
  const ratioAt = (name, connections) =>
    median(summary.find((r) => r.connections === connections && r.name === name).ratios);
  const goals = LOADS.flatMap((c) => {
    const r = Object.fromEntries(FILTERS.map((n) => [n, ratioAt(n, c)]));
    return [
      [`c${c}: Node single >= 0.6 x nginx per CPU-second`, r.node >= 0.6, r.node.toFixed(2)],
      [
        `c${c}: Erlang >= 0.6 x nginx and >= Node single`,
        r.erlang >= 0.6 && r.erlang >= r.node,
        `${r.erlang.toFixed(2)}, ${(r.erlang / r.node).toFixed(2)} x node`,
      ],
      [
        `c${c}: the cluster within 10 % of the single process`,
        r['node-cluster'] >= 0.9 * r.node,
        `${(r['node-cluster'] / r.node).toFixed(2)} x node`,
      ],
    ];
  });
  return {
    points,
    goals,
    table: formatTable(rows, [
      'connections',
      'server',
      'k r/s (median)',
      'errors',
      'k relayed / CPU-s: median (min-max)',
      '/ nginx: median (min-max)',
    ]),
  };
}

/** Each filter beside nginx, the two loaded at once: per round, nginx's CPU per request over the filter's. */
async function besideNginx(env, stack, body, factor, say) {
  const at = (name) => {
    const [, service] = SERVERS.find(([n]) => n === name);
    return { name, url: `${stack.baseUrls[service]}/filter`, group: stack.procs.find((p) => p.name === service).pid };
  };
  const opts = { ...TWO_AT_ONCE, rounds: factor > 1 ? 2 : TWO_AT_ONCE.rounds, body, say };
  const rounds = {};
  for (const name of FILTERS) rounds[name] = await twoAtOnce(env, [at(name), at('nginx')], opts);
  const us = (xs) => `${median(xs).toFixed(1)} (${Math.min(...xs).toFixed(1)}-${Math.max(...xs).toFixed(1)})`;
  const rows = FILTERS.map((name) => {
    const r = rounds[name].filter((x) => x.ratio !== null);
    return [
      name,
      String(r.length),
      us(r.map((x) => x.costUs[0])),
      us(r.map((x) => x.costUs[1])),
      String(rounds[name].reduce((a, x) => a + x.errors, 0)),
      r.length ? spread(r.map((x) => 1 / x.ratio)) : '-',
    ];
  });
  return {
    rounds,
    opts,
    table: formatTable(rows, [
      'filter',
      'rounds',
      'its us CPU/req',
      "nginx's us CPU/req",
      'errors',
      "nginx's over its: median (min-max)",
    ]),
  };
}

/** Each server under wrk, then under k6, at `connections` for `seconds`: [{name, wrk, k6}]. */
async function throughputs(env, stack, { body, connections, seconds, tmp, say }) {
  const results = [];
  for (const [name, service] of SERVERS) {
    const url = `${stack.baseUrls[service]}/filter`;
    say(`${name}: wrk -c ${connections} for ${seconds} s, then k6 with ${connections} VUs`);
    const w = wrk(env, url, connections, seconds, { script: 'stacks/json-filter/wrk-post.lua', body });
    await new Promise((r) => setTimeout(r, 2000));
    const k = k6(env, 'k6/json-filter-bench.js', url, connections, seconds, join(tmp, `k6-${name}.json`));
    results.push({ name, wrk: w, k6: k });
    await new Promise((r) => setTimeout(r, 2000));
  }
  return results;
}

/** The throughput table: wrk's and k6's rates and errors per server, against nginx and against direct. */
function throughputTable(results) {
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
  return formatTable(rows, ['server', 'wrk k r/s', 'wrk errors', 'k6 k r/s', 'k6 failed', '/ nginx', '/ direct']);
}

/** The three tables and the goals, said. */
function sayBench({ efficiency, together, table, connections, seconds }, say) {
  say(
    `\nRelayed requests per CPU-second of each server's own process group (/proc), wrk -t1, ${POINT_S} s per point, ${REPEATS} repeats; every document relayed; ${machine()}\n\n${efficiency.table}\n`,
  );
  say(
    `Each filter and nginx loaded at the same time, wrk -t1 -c ${together.opts.connections} on each, ${together.opts.seconds} s after ${together.opts.warmS} s, the order swapped every round\n\n${together.table}\n`,
  );
  say(`\n${connections} connections, ${seconds} s each, every document relayed\n\n${table}\n`);
  for (const [g, met, r] of efficiency.goals) say(`goal ${met ? 'met    ' : 'NOT met'}  ${g} (${r})`);
}

/**
 * `bench json-filter`: the stack up, relayed requests per CPU-second, each filter beside nginx, the
 * throughputs; the tables and goals.
 */
export default async function benchJsonFilter(root, request, { say = console.log } = {}) {
  const p = makePlan({ experiment: 'json-filter', suite: 'smoke', overrides: request.overrides['json-filter'] });
  const env = labEnv(root);
  requireTools(['wrk', 'k6'], env);
  const seconds = request.factor > 1 ? Math.max(3, Math.round(20 / request.factor)) : 20;
  const connections = p.knobs.connections;
  const run = await openRun(root, 'bench', { kind: 'bench', say });
  const { dir, tmp, state } = run;
  const body = relayDocument(root, tmp);
  let stack;
  let results;
  let efficiency;
  let together;
  try {
    stack = await startStack({
      root,
      env,
      topology: loadTopology(join(root, 'docker-compose.yml')),
      profile: 'json-filter',
      policy: p.policy,
      targets: stackTargets('json-filter', p.knobs, p.policy),
      tmpDir: tmp,
      logDir: join(dir, 'logs'),
      state,
      log: (m) => say(`  ${m}`),
    });
    efficiency = await perCpu(env, stack, body, say);
    together = await besideNginx(env, stack, body, request.factor, say);
    results = await throughputs(env, stack, { body, connections, seconds, tmp, say });
  } finally {
    if (stack) await stopStack(stack);
    run.close();
  }
  const twoAtOnce = {
    connections: together.opts.connections,
    seconds: together.opts.seconds,
    warmS: together.opts.warmS,
    rounds: together.rounds,
  };
  const figures = {
    experiment: 'json-filter',
    source: gitState(root),
    connections,
    seconds,
    machine: machine(),
    perCpu: efficiency.points,
    twoAtOnce,
    results: withoutRaw(results),
    goals: efficiency.goals,
  };
  writeFileSync(join(dir, 'bench.json'), JSON.stringify(figures, null, 1));
  sayBench({ efficiency, together, table: throughputTable(results), connections, seconds }, say);
  say(`\nresults: ${dir}`);
  return 0;
}
