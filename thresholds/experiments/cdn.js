/*
 * Seed 001: an nginx load balancer (round robin) in front of 4 nginx edge caches in front of 2
 * nginx origins serving a small site, loaded by wrk with 10 connections for 60 s, once
 * uncapped, once with every nginx capped at 2 % of one CPU and 25 MiB, once at 1 % and 15 MiB.
 * The seed read `docker stats`, found the load balancer at its cap, and saw 106, 39 and 21 r/s.
 */
import { provenance as kind } from '../kinds/capped.js';

// The seed's figures per level: wrk's r/s; from docker stats, the balancer's CPU % and the
// edges' together, and memory in use (MiB) by role, the largest of the role's containers.
const SEED = {
  uncapped: {
    rps: 106.26,
    lbCpuPct: 5.37,
    edgesCpuPct: 0.76 + 0.85 + 0.74 + 2.24,
    memMiB: { lb: 29.32, edge: 29.73, origin: 40.64 },
  },
  'cpu2-mem25': {
    rps: 38.92,
    lbCpuPct: 1.95,
    edgesCpuPct: 0.54 + 0.48 + 0.83 + 0.06,
    memMiB: { lb: 14.24, edge: 22.57, origin: 22.77 },
  },
  'cpu1-mem15': {
    rps: 21.27,
    lbCpuPct: 1.01,
    edgesCpuPct: 0.18 + 0.29 + 0.26 + 0.3,
    memMiB: { lb: 8.711, edge: 11.29, origin: 12.47 },
  },
};

/** A cap level's name: uncapped, cpu2-mem25, cpu1, mem15. */
export const levelName = (cpu, mem) =>
  [cpu ? `cpu${cpu}` : '', mem ? `mem${mem}` : ''].filter(Boolean).join('-') || 'uncapped';

/** The caps text of a level, as lab/stack/cgroups.mjs parses it ('' is accounting only). */
export const capsText = (cpu, mem) => [cpu ? `cpu=${cpu}%` : '', mem ? `mem=${mem}M` : ''].filter(Boolean).join(' ');

/**
 * The cap levels the knobs ask for, the uncapped one first. Where a level is capped in CPU, a
 * level of the lab's own follows the uncapped one and measures what a request costs each service
 * (`measuresCosts`), capped at cost_cpu % (0: the uncapped level measures them).
 */
export function capLevels(k) {
  const levels = askedLevels(k);
  const capped = levels.filter((l) => l.cpu);
  if (!k.cost_cpu || !capped.length) return levels.map((l, i) => (i === 0 ? { ...l, measuresCosts: true } : l));
  const highest = Math.max(...capped.map((l) => l.cpu));
  if (k.cost_cpu <= highest)
    throw new Error(
      `knob cdn.cost_cpu ${k.cost_cpu}: the level that measures the costs must be capped above every capped level (${highest} % here), as a request costs a throttled nginx more the lower its cap; or 0, to measure them uncapped`,
    );
  const costLevel = { cpu: k.cost_cpu, mem: 0, id: `costs-cpu${k.cost_cpu}`, caps: capsText(k.cost_cpu, 0) };
  return [levels[0], { ...costLevel, measuresCosts: true }, ...levels.slice(1)];
}

/** The levels cpu_levels and mem_levels list, checked. */
function askedLevels(k) {
  if (k.cpu_levels.length !== k.mem_levels.length)
    throw new Error(
      `knobs cdn.cpu_levels and cdn.mem_levels must list as many levels (${k.cpu_levels.length} and ${k.mem_levels.length})`,
    );
  if (k.cpu_levels[0] !== 0 || k.mem_levels[0] !== 0)
    throw new Error(
      'knobs cdn.cpu_levels and cdn.mem_levels: the first level must be 0,0 (uncapped): the seed measured its throughput',
    );
  const levels = k.cpu_levels.map((cpu, i) => ({
    cpu,
    mem: k.mem_levels[i],
    id: levelName(cpu, k.mem_levels[i]),
    caps: capsText(cpu, k.mem_levels[i]),
  }));
  const ids = levels.map((l) => l.id);
  if (new Set(ids).size !== ids.length)
    throw new Error(`knobs cdn.cpu_levels and cdn.mem_levels repeat a level (${ids.join(', ')})`);
  return levels;
}

const EDGES = [1, 2, 3, 4];

export default {
  name: 'cdn',
  seed: '001',
  // Throughput under caps is the smallest cap / cost, the costs measured at cost_cpu: the model is
  // in thresholds/kinds/capped.js, and stacks/cdn/README.md says it in full.
  kind: 'capped',
  // Nginx counts a cache lifetime in whole seconds: --quick must keep cache_s whole.
  maxQuick: 10,
  knobs: {
    cpu_levels: {
      default: [0, 2, 1],
      kind: 'counts',
      doc: 'per cap level, the CPU cap of every nginx in % of one core (0: none); the first level is uncapped',
      max: 200,
      why: 'this kind of machine has 2 cores',
    },
    mem_levels: {
      default: [0, 25, 15],
      kind: 'counts',
      doc: 'per cap level, the memory cap of every nginx in MiB (0: none)',
      max: 4096,
      why: 'more than this machine has',
    },
    // Uncapped, k6 and the stack keep both cores busy, and what a request costs moved with how
    // the host shared them (stacks/cdn/README.md): the costs are measured capped instead.
    cost_cpu: {
      default: 4,
      kind: 'count',
      doc: "the CPU cap (% of one core) of the lab's own level, after the uncapped one, that measures what a request costs each service; above every capped level; 0: measured uncapped",
      max: 200,
      why: 'this kind of machine has 2 cores',
    },
    vus: {
      default: 10,
      kind: 'whole',
      doc: "connections (k6 VUs), as the seed's wrk -c 10",
      max: 1000,
      why: 'a closed load on nginx capped at 1 % of a core',
    },
    seconds: {
      default: 60,
      kind: 'seconds',
      doc: 'how long each cap level is loaded (s)',
      max: 600,
      why: 'a suite must end in minutes',
    },
    // What the seed does not state is a knob, the lab's assumption its default. The edges' cache
    // lifetime: 10 s, so refills are seen within a minute.
    cache_s: {
      default: 10,
      kind: 'seconds',
      doc: "the edges' cache lifetime (proxy_cache_valid, s)",
      max: 3600,
      why: 'longer than any run',
    },
    // The page: fitted to the seed's bytes read (provenance.fitted.page_bytes).
    page_bytes: {
      default: 173,
      kind: 'whole',
      doc: "the size of the origins' page (B)",
      max: 1_000_000,
      why: 'a capped nginx serves kilobytes, not megabytes, per request',
    },
    edges: {
      default: 4,
      kind: 'whole',
      doc: 'edges the load balancer routes to (of the 4)',
      max: 4,
      why: 'the topology has 4 edges',
    },
    up_level: {
      default: 0,
      kind: 'count',
      doc: 'the cap level (0: the first) whose caps `just up cdn` starts the stack with; a run restarts it per level',
      max: 9,
      why: 'at most 10 levels',
    },
    origins: {
      default: 2,
      kind: 'whole',
      doc: 'origins the edges ask (of the 2)',
      max: 2,
      why: 'the topology has 2 origins',
    },
  },
  checkScaled(policy, factor) {
    if (!Number.isInteger(policy.cache_s))
      throw new Error(
        `--quick ${factor} makes cdn.cache_s ${policy.cache_s} s: nginx counts cache lifetimes in whole seconds (try a factor that divides it)`,
      );
    for (const l of capLevels(policy))
      if (l.mem && l.mem < 4)
        throw new Error(`knob cdn.mem_levels: ${l.mem} MiB: at least 4 (an nginx worker alone needs a few MiB)`);
  },
  derived: (k) => {
    const levels = capLevels(k);
    return {
      // For the templates: which edges and origins are in use, and the page.
      ...Object.fromEntries(EDGES.map((i) => [`edge${i}`, i <= k.edges])),
      origin2: k.origins >= 2,
      page: `${'<p>cdn</p>'.repeat(Math.ceil(k.page_bytes / 10)).slice(0, Math.max(0, k.page_bytes - 1))}`,
      levels,
      // up_level counts the levels the knobs list, not the lab's own cost level.
      caps: askedLevels(k)[Math.min(k.up_level, k.cpu_levels.length - 1)].caps,
    };
  },
  targets: () => [{ id: 'lb', service: 'cdn-lb', path: '/' }],
  /** The services whose CPU the model weighs, by role; an unused edge or origin costs nothing. */
  services: (k) => ({
    lb: ['cdn-lb'],
    edge: EDGES.filter((i) => i <= k.edges).map((i) => `cdn-edge${i}`),
    origin: [1, 2].filter((i) => i <= k.origins).map((i) => `cdn-origin${i}`),
  }),
  cases: {
    smoke: (k) => [{ level: capLevels(k)[0], seconds: 2, vus: 2 }],
    load: (k) => capLevels(k).map((level) => ({ level, seconds: k.seconds, vus: k.vus })),
  },
  suites: { smoke: true, load: true },
  seedFigures: Object.fromEntries(
    Object.entries(SEED).map(([level, figures]) => [
      `${level}-load`,
      {
        ...figures,
        // The model on the seed's own figures: its uncapped balancer spent 5.37 % of a core on
        // 106.26 r/s, so a cap of c % allows c / 5.37 x 106.26 r/s (39.6 at 2 %, 19.8 at 1 %).
        modelRps:
          level === 'uncapped'
            ? null
            : (Number(level.match(/^cpu([0-9]+)/)[1]) / SEED.uncapped.lbCpuPct) * SEED.uncapped.rps,
      },
    ]),
  ),
  /** Where each constant comes from: docs/model.md#where-the-constants-come-from. */
  provenance: {
    derived: {
      cpu_levels: {
        value: [0, 2, 1],
        seed: 'No Reource-Capping; 2% Single CPU & 25M Memory Cap; 1% Single CPU & 15m Memory Cap',
      },
      mem_levels: {
        value: [0, 25, 15],
        seed: 'No Reource-Capping; 2% Single CPU & 25M Memory Cap; 1% Single CPU & 15m Memory Cap',
      },
      vus: { value: 10, seed: '4 threads and 10 connections' },
      seconds: { value: 60, seed: 'Running 1m test' },
      edges: { value: 4, seed: 'docker stats: edge1, edge2, edge3, edge4' },
      origins: { value: 2, seed: 'docker stats: backend1, backend2' },
    },
    fitted: {
      page_bytes: {
        value: 173,
        fittedTo: [{ case: 'uncapped-load', figure: 'read', seed: '6385 requests in 1.00m, 2.73MB read' }],
        how: "the seed's bytes per response, less the headers the lab's nginx add (stacks/cdn/README.md)",
      },
    },
    measured: {
      ...kind.measured,
      cost_cpu: { value: 4, source: 'stacks/cdn/README.md' },
    },
    assumed: {
      cache_s: {
        value: 10,
        why: "the seed does not state the edges' cache lifetime; 10 s shows refills within a minute",
      },
      up_level: { value: 0, why: "not the seed's: which level `just up cdn` starts with" },
      ...kind.assumed,
    },
  },
};
