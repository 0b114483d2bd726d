/*
 * Judging one level of a capped plan (cdn) from k6's summary and the cgroups sampled over the
 * loaded window: throughput against cap / cost, the bottleneck's use of its quota, errors,
 * OOM kills and the origins' refills; the uncapped level yields the costs the capped ones are
 * judged by (costsFrom). Every figure, and the seed's beside it, goes in the table.
 */
import { within } from './limiter.mjs';
import { resourcesOver } from '../stack/resources.mjs';

const mark = (b) => (b ? 'ok' : 'FAIL');
const fixed = (x, d = 1) => (x === null || x === undefined || Number.isNaN(x) ? '-' : x.toFixed(d));
const pct = (x) => `${fixed(x * 100, 2)} %`;
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
  for (const r of outcome.measured.resources) if (r.cpuS !== null && Object.values(plan.roles).flat().includes(r.service)) costs[r.service] = r.cpuS / requests;
  return costs;
}

export function cappedOutcomes(plan, summary, caps, cgroupSamples) {
  const c = plan.cases[0];
  const e = c.expected;
  const metrics = summary?.metrics || {};
  const v = (name, stat, dflt = null) => metrics[name]?.values?.[stat] ?? dflt;
  const w = windowOf(c, summary);
  const resources = w ? resourcesOver(cgroupSamples, caps, w.fromMs, w.toMs) : [];
  const byService = Object.fromEntries(resources.map((r) => [r.service, r]));
  const requests = v(`http_reqs{case:${c.id}}`, 'count', 0);
  const sumCpu = (list) => list.reduce((a, s) => a + (byService[s]?.cpuS ?? 0), 0);
  const measured = {
    requests,
    rps: requests / (c.durationMs / 1000),
    errorRate: v(`http_req_failed{case:${c.id}}`, 'rate'),
    originFills: v(`lab_origin_fills{case:${c.id}}`, 'count'),
    oomKills: resources.reduce((a, r) => a + r.oomKills, 0),
    edgesOverLb: byService[plan.roles.lb[0]]?.cpuS ? sumCpu(plan.roles.edge) / byService[plan.roles.lb[0]].cpuS : null,
    edgeShares: shares(plan.roles.edge.map((edge) => v(`lab_edge_requests{case:${c.id},edge:${edge}}`, 'count', 0))),
    resources,
  };
  const checks = {
    errors: measured.errorRate !== null && measured.errorRate < e.errorRate.hi,
    originFills: within(measured.originFills, e.originFills),
    oom: measured.oomKills <= e.oomKills.hi,
    resources: resources.length > 0,
    roundRobin: measured.edgeShares.length > 0 && measured.edgeShares.every((x) => within(x, e.edgeShare)),
  };
  const rows = [];
  const row = (measure, seed, expected, got, pass) => rows.push([rows.length ? '' : c.name, measure, seed, expected, got, pass === null ? '-' : mark(pass)]);
  const seed = c.seed;
  const lb = byService[plan.roles.lb[0]];
  const seedRps = seed ? `${seed.rps} r/s${seed.modelRps ? ` (cap/cost: ${fixed(seed.modelRps)})` : ''}` : '-';
  if (e.rps) {
    const b = byService[e.bottleneck.service];
    measured.busy = b && b.capPct ? b.cpuPct / b.capPct : null;
    checks.rps = within(measured.rps, e.rps);
    checks.busy = measured.busy !== null && measured.busy >= e.bottleneck.busyLo && measured.busy <= e.bottleneck.busyHi;
    row('throughput', seedRps, `${fixed(e.rps.model)} r/s x ${fixed(e.rps.lo / e.rps.model, 2)}..${fixed(e.rps.hi / e.rps.model, 2)} = ${fixed(e.rps.lo)}..${fixed(e.rps.hi)}`, `${fixed(measured.rps)} r/s (x${fixed(measured.rps / e.rps.model, 2)})`, checks.rps);
    row(`bottleneck: ${e.bottleneck.service}`, seed ? `load balancer, ${seed.lbCpuPct} %` : '-', `${pct(e.bottleneck.busyLo)}..${pct(e.bottleneck.busyHi)} of its quota`, `${pct(measured.busy ?? NaN)} (${fixed(b?.cpuPct, 2)} % of a core)`, checks.busy);
  } else {
    row('throughput', seedRps, c.level.cpu ? '(no costs measured)' : '(measured: gives the costs)', `${fixed(measured.rps)} r/s, ${plan.roles.lb[0]} at ${fixed(lb?.cpuPct, 2)} %`, null);
  }
  const { uncapped } = plan;
  if (uncapped) row('  / the uncapped', seed && uncapped.seed ? fixed(seed.rps / uncapped.seed, 3) : '-', '-', uncapped.measured ? fixed(measured.rps / uncapped.measured, 3) : '-', null);
  row('errors', '-', `< ${pct(e.errorRate.hi)}`, measured.errorRate === null ? '-' : pct(measured.errorRate), checks.errors);
  row('origin fills', '-', `${e.originFills.lo}..${e.originFills.hi}`, String(measured.originFills ?? '-'), checks.originFills);
  row('OOM kills', '-', '0', String(measured.oomKills), checks.oom);
  row('share of each edge', '-', `${fixed(e.edgeShare.lo, 3)}..${fixed(e.edgeShare.hi, 3)}`, measured.edgeShares.map((x) => fixed(x, 3)).join(' '), checks.roundRobin);
  row("edges' CPU / balancer's", seed ? fixed(seed.edgesCpuPct / seed.lbCpuPct, 2) : '-', '(shown)', fixed(measured.edgesOverLb, 2), null);
  // Memory in use by role (the largest of the role), beside the seed's docker stats.
  const byRole = (role) => Math.max(...plan.roles[role].map((sv) => byService[sv]?.memBytes ?? 0)) / 1024 ** 2;
  const roles = ['lb', 'edge', 'origin'];
  row('memory, lb/edge/origin', seed ? `${roles.map((r) => fixed(seed.memMiB[r])).join('/')} MiB` : '-', c.level.mem ? `< ${c.level.mem} MiB` : '-', `${roles.map((r) => fixed(byRole(r))).join('/')} MiB`, null);
  const k6ok = Object.entries(metrics).every(([name, m]) => !name.includes(`case:${c.id}`) || Object.values(m.thresholds || {}).every((t) => t.ok));
  const outcome = { suite: plan.suite, case: c.name, params: { level: c.level, factor: plan.factor, policy: plan.policy }, seed, expected: e, measured, checks, pass: summary != null && k6ok && Object.values(checks).every(Boolean) };
  return { outcomes: [outcome], rows };
}
