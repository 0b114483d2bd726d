/*
 * Judging one level of a capped plan (cdn) from k6's summary and the cgroups sampled over the
 * loaded window: throughput against cap / cost, the bottleneck's use of its quota, errors,
 * OOM kills and the origins' refills; the cost level yields the costs the other capped ones are
 * judged by (costsFrom). Every figure, and the seed's beside it, goes in the table.
 */
import { resourcesOver } from '../stack/resources.mjs';
import { withCosts, cappedThresholds, possibleValues } from '../../thresholds/kinds/capped.js';
import { shownRanges } from '../../thresholds/kinds/judged.js';
import { within, fixed, pct, caseRows } from '../judge/table.mjs';
import { outcome, figure, summaryValue, judgedFigures } from '../judge/outcome.mjs';
const shares = (counts) => {
  const total = counts.reduce((a, b) => a + b, 0);
  return total ? counts.map((n) => n / total) : [];
};

/** The loaded window of the level: from when k6's scenario started, for its duration. */
const windowOf = (c, summary) => {
  const t0 = summary?.setup_data?.t0;
  return t0 === undefined ? null : { fromMs: t0, toMs: t0 + c.durationMs };
};

/** What one request cost each service of the plan's roles (CPU s per request to the balancer). */
export function costsFrom(plan, outcome) {
  const requests = outcome.measured.requests;
  if (!requests) return null;
  const costs = {};
  for (const r of outcome.measured.resources)
    if (r.cpuS !== null && Object.values(plan.roles).flat().includes(r.service)) costs[r.service] = r.cpuS / requests;
  return costs;
}

/**
 * The resources of the level's services over its loaded window; without one (k6 never ran: a
 * service died as the level started), over all the phase sampled, so an OOM kill then is still
 * counted, and shown.
 */
function levelResources(c, { summary, caps, cgroupSamples }) {
  const sampled = Object.values(cgroupSamples || {}).filter((s) => s.length);
  const span =
    windowOf(c, summary) ??
    (sampled.length
      ? { fromMs: Math.min(...sampled.map((s) => s[0][0])), toMs: Math.max(...sampled.map((s) => s.at(-1)[0])) }
      : null);
  return span ? resourcesOver(cgroupSamples, caps, span.fromMs, span.toMs) : [];
}

/** What the level measured: requests and their rate, errors, refills, OOM kills, the edges' CPU and shares. */
function measuredLevel(plan, c, summary, resources, byService) {
  const v = (name, stat, dflt = null) => summaryValue(summary, name, stat, dflt);
  const requests = v(`http_reqs{case:${c.id}}`, 'count', 0);
  const sumCpu = (list) => list.reduce((a, s) => a + (byService[s]?.cpuS ?? 0), 0);
  const lbCpu = byService[plan.roles.lb[0]]?.cpuS;
  return {
    requests,
    rps: requests / (c.durationMs / 1000),
    errorRate: v(`http_req_failed{case:${c.id}}`, 'rate'),
    originFills: v(`lab_origin_fills{case:${c.id}}`, 'count'),
    // Counted by each cgroup since the phase made it, whatever the window; none read, none known.
    oomKills: resources.length ? resources.reduce((a, r) => a + r.oomKills, 0) : null,
    edgesOverLb: lbCpu ? sumCpu(plan.roles.edge) / lbCpu : null,
    edgeShares: shares(plan.roles.edge.map((edge) => v(`lab_edge_requests{case:${c.id},edge:${edge}}`, 'count', 0))),
    resources,
  };
}

/** The checks every level has: errors, refills, OOM kills, resources read, round robin. */
function levelChecks(plan, c, measured) {
  const e = c.expected;
  return {
    errors: measured.errorRate !== null && measured.errorRate < e.errorRate.hi,
    originFills: within(measured.originFills, e.originFills),
    oom: measured.oomKills !== null && measured.oomKills <= e.oomKills.hi,
    resources: measured.resources.length > 0,
    // One edge in use takes every request: its share of 1 is shown, not judged.
    roundRobin: shownRanges(e, possibleValues(c, plan)).edgeShare
      ? null
      : measured.edgeShares.length > 0 && measured.edgeShares.every((x) => within(x, e.edgeShare)),
  };
}

/**
 * The throughput rows: a capped level's against cap / cost and its bottleneck's use of its quota
 * (judged, into `measured` and `checks`), or the uncapped or the cost level's (shown).
 */
function throughputRows(plan, c, { measured, checks, byService }) {
  const e = c.expected;
  const { seed } = c;
  const seedRps = seed ? `${seed.rps} r/s${seed.modelRps ? ` (cap/cost: ${fixed(seed.modelRps)})` : ''}` : '-';
  if (!e.rps) {
    const lb = byService[plan.roles.lb[0]];
    const planned = c.level.measuresCosts
      ? '(measured: gives the costs)'
      : c.level.cpu
        ? '(no costs measured)'
        : '(measured)';
    return [
      [
        'throughput',
        seedRps,
        planned,
        `${fixed(measured.rps)} r/s, ${plan.roles.lb[0]} at ${fixed(lb?.cpuPct, 2)} %`,
        null,
      ],
    ];
  }
  const b = byService[e.bottleneck.service];
  measured.busy = b && b.capPct ? b.cpuPct / b.capPct : null;
  checks.rps = within(measured.rps, e.rps);
  checks.busy = measured.busy !== null && measured.busy >= e.bottleneck.busyLo && measured.busy <= e.bottleneck.busyHi;
  return [
    [
      'throughput',
      seedRps,
      `${fixed(e.rps.model)} r/s x ${fixed(e.rps.lo / e.rps.model, 2)}..${fixed(e.rps.hi / e.rps.model, 2)} = ${fixed(e.rps.lo)}..${fixed(e.rps.hi)}`,
      `${fixed(measured.rps)} r/s (x${fixed(measured.rps / e.rps.model, 2)})`,
      checks.rps,
    ],
    [
      `bottleneck: ${e.bottleneck.service}`,
      seed ? `load balancer, ${seed.lbCpuPct} %` : '-',
      `${pct(e.bottleneck.busyLo)}..${pct(e.bottleneck.busyHi)} of its quota`,
      `${pct(measured.busy)} (${fixed(b?.cpuPct, 2)} % of a core)`,
      checks.busy,
    ],
  ];
}

/**
 * The rows after the throughput: against the uncapped, errors, refills, OOM kills, edge shares, CPU
 * and memory by role.
 */
function otherRows(plan, c, { measured, checks, byService }) {
  const e = c.expected;
  const { seed } = c;
  const { uncapped } = plan;
  const rows = [];
  if (uncapped)
    rows.push([
      '  / the uncapped',
      seed && uncapped.seed ? fixed(seed.rps / uncapped.seed, 3) : '-',
      '-',
      uncapped.measured ? fixed(measured.rps / uncapped.measured, 3) : '-',
      null,
    ]);
  const errorRate = measured.errorRate === null ? '-' : pct(measured.errorRate);
  rows.push(['errors', '-', `< ${pct(e.errorRate.hi)}`, errorRate, checks.errors]);
  rows.push([
    'origin fills',
    '-',
    `${e.originFills.lo}..${e.originFills.hi}`,
    String(measured.originFills ?? '-'),
    checks.originFills,
  ]);
  rows.push(['OOM kills', '-', '0', String(measured.oomKills), checks.oom]);
  const edgeShares = measured.edgeShares.map((x) => fixed(x, 3)).join(' ');
  rows.push([
    'share of each edge',
    '-',
    `${fixed(e.edgeShare.lo, 3)}..${fixed(e.edgeShare.hi, 3)}`,
    edgeShares,
    checks.roundRobin,
  ]);
  const seedRatio = seed ? fixed(seed.edgesCpuPct / seed.lbCpuPct, 2) : '-';
  rows.push(["edges' CPU / balancer's", seedRatio, '(shown)', fixed(measured.edgesOverLb, 2), null]);
  // Memory in use by role (the largest of the role), beside the seed's docker stats.
  const byRole = (role) => Math.max(...plan.roles[role].map((sv) => byService[sv]?.memBytes ?? 0)) / 1024 ** 2;
  const roles = ['lb', 'edge', 'origin'];
  rows.push([
    'memory, lb/edge/origin',
    seed ? `${roles.map((r) => fixed(seed.memMiB[r])).join('/')} MiB` : '-',
    c.level.mem ? `< ${c.level.mem} MiB` : '-',
    `${roles.map((r) => fixed(byRole(r))).join('/')} MiB`,
    null,
  ]);
  return rows;
}

/** One level judged: its outcome and its table rows. */
export function judge(plan, { summary, caps, cgroupSamples }) {
  const c = plan.cases[0];
  const resources = levelResources(c, { summary, caps, cgroupSamples });
  const byService = Object.fromEntries(resources.map((r) => [r.service, r]));
  const measured = measuredLevel(plan, c, summary, resources, byService);
  const checks = levelChecks(plan, c, measured);
  const judged = { measured, checks, byService };
  const rows = [...throughputRows(plan, c, judged), ...otherRows(plan, c, judged)];
  const params = { level: c.level, factor: plan.factor, policy: plan.policy };
  return {
    outcomes: [outcome({ plan, c, params, measured, checks, summary, thresholds: cappedThresholds(c, plan) })],
    rows: caseRows(c.name, rows),
  };
}

/**
 * The phases of a capped plan: one stack and one k6 run per cap level, one after another, each
 * stack with its level's caps. The uncapped level comes first; the cost level measures what a
 * request costs each service, and the later levels are planned with those costs
 * (thresholds/kinds/capped.js). Yields each phase's plan and receives what it judged.
 */
export function* phases(plan, { say }) {
  let planned = plan;
  let uncapped = null;
  for (const c of plan.cases) {
    const mine = planned.cases.find((x) => x.id === c.id);
    // A perturbed stack (`--stack-knob cpu_levels=...`) runs its own caps at the same level.
    const stackLevel = plan.stackPolicy?.levels[plan.policy.levels.findIndex((l) => l.id === c.level.id)];
    const judged = yield {
      ...planned,
      phase: c.id,
      cases: [mine],
      durationS: (plan.leadInMs + mine.durationMs) / 1000,
      policy: { ...plan.policy, caps: c.level.caps },
      ...(plan.stackPolicy ? { stackPolicy: { ...plan.stackPolicy, caps: stackLevel?.caps ?? c.level.caps } } : {}),
    };
    const measured = judged.outcomes[0];
    if (!c.level.cpu && !c.level.mem)
      uncapped = { seed: c.seed?.rps ?? null, measured: measured?.measured.rps ?? null };
    // Costs only from a cost level that ran whole.
    const costs = c.level.measuresCosts && measured?.pass ? costsFrom(plan, measured) : null;
    if (costs) {
      planned = withCosts(plan, costs, `measured in this run (${c.id})`, uncapped);
      say(
        `${plan.experiment}: CPU per request, from ${c.id}: ${Object.entries(costs)
          .map(([s, x]) => `${s} ${(x * 1e6).toFixed(0)} us`)
          .join(', ')}`,
      );
    }
  }
}

/**
 * Its judged figures: throughput and the bottleneck's use of its quota (capped levels), errors,
 * refills, OOM kills, each edge's share.
 */
function figures(o) {
  const { expected: e, measured: m, checks } = o;
  return judgedFigures([
    ...(e.rps
      ? [
          figure('throughput r/s', e.rps, m.rps, checks.rps),
          figure('bottleneck busy', { lo: e.bottleneck.busyLo, hi: e.bottleneck.busyHi }, m.busy, checks.busy),
        ]
      : []),
    figure('error rate', { hi: e.errorRate.hi }, m.errorRate, checks.errors),
    figure('origin fills', e.originFills, m.originFills, checks.originFills),
    figure('OOM kills', { hi: e.oomKills.hi }, m.oomKills, checks.oom),
    ...m.edgeShares.map((x, i) =>
      figure(`edge ${i + 1} share`, e.edgeShare, x, checks.roundRobin === null ? null : within(x, e.edgeShare)),
    ),
  ]);
}

export default {
  name: 'capped',
  judge,
  figures,
  phases,
  // Its uncapped level runs thousands of r/s for a minute: Prometheus only (see lab/stores/stores.mjs).
  streams: ['prometheus'],
};
