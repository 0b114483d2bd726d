/*
 * Plans for capped experiments (cdn): one case per cap level, each its own stack (a cgroup per
 * service with the level's caps, started fresh as the seed restarted its containers) under a
 * closed load. The first level is uncapped (the seed's, shown); a level capped above the others
 * (the experiment's cost level) measures what one request costs each service in CPU, from the
 * cgroups' accounting, and the model predicts each other capped level from those costs.
 */
import { rangeNote } from './judged.js';

/**
 * The stated tolerance. For every capped level the model predicts:
 * - throughput: the smallest of cap / cost over the services, which names the bottleneck;
 * - the bottleneck busy: it used at least 90 % of its quota (and not more than it);
 * - every other service under its cap, no OOM kill, errors under a bound;
 * - round robin: every edge in use got its equal share of the requests (what routing means);
 *   the seed's own sign, the edges' CPU adding up to the balancer's, is shown beside its
 *   figures: it does not hold here (stacks/cdn/README.md says why);
 * - the origins asked once per edge per cache lifetime (proxy_cache_lock), any level.
 */
export const CAPPED_TOLERANCE = {
  // Measured throughput over cap / cost: from 0.5 to 1.2. Below 1 more than above, because a
  // request costs a throttled nginx more CPU the lower its cap, on the whole: it runs 1-4 ms of
  // every 100 ms period and wakes to cold caches each time; the costs are measured at a cap
  // above every judged one. Above 1 by as much as a request's cost at one cap moves between
  // phases of the same stack, whatever the cap: two levels of a run are two such phases. A cap
  // larger than the model was told by half fails it. Measured spread: stacks/cdn/README.md.
  rpsLo: 0.5,
  rpsHi: 1.2,
  busy: 0.9, // the bottleneck used at least 90 % of its quota, and at most 105 % (CFS overruns a
  busyHi: 1.05, // period by a tick at most: more means its cap is not the one the model was told)
  errorRate: 0.01, // errors (non-2xx, timeouts) under 1 %
  originAbs: 1, // origin fills: the model's range, +-1 per edge in use
  // Round robin: each edge in use gets 1 / edges of the requests, within 1 % (nginx's round
  // robin is strict; a weight, a hash or an edge left out moves a share by far more).
  shareAbs: 0.01,
};

/** Where the kind's own constants come from, for its experiments' `provenance`. */
export const provenance = {
  measured: {
    'CAPPED_TOLERANCE.rps': {
      value: { rpsLo: CAPPED_TOLERANCE.rpsLo, rpsHi: CAPPED_TOLERANCE.rpsHi },
      source: 'stacks/cdn/README.md',
    },
    costs: {
      value: "each service's CPU per request, measured by the run's own uncapped level",
      source: 'stacks/cdn/README.md',
    },
  },
  assumed: {
    CAPPED_TOLERANCE: {
      value: Object.fromEntries(
        ['busy', 'busyHi', 'errorRate', 'originAbs', 'shareAbs'].map((k) => [k, CAPPED_TOLERANCE[k]]),
      ),
      why: "CFS overruns a period by a tick at most, nginx's round robin is strict: stated, not measured",
    },
  },
};

/**
 * predictCapped({costs: {service: CPU seconds per request}, caps: {service: cores}}) ->
 * {rps, bottleneck, limits: {service: r/s its cap allows}}. A service with no cap, or no cost,
 * sets no limit.
 */
export function predictCapped({ costs, caps }) {
  const limits = {};
  for (const [s, cost] of Object.entries(costs)) if (caps[s] && cost > 0) limits[s] = caps[s] / cost;
  let bottleneck = null;
  for (const [s, r] of Object.entries(limits)) if (bottleneck === null || r < limits[bottleneck]) bottleneck = s;
  return { rps: bottleneck === null ? null : limits[bottleneck], bottleneck, limits };
}

/**
 * Origin fills over `seconds` of continuous load: each edge in use once per lifetime. Nginx
 * keeps a page fresh through the whole second its lifetime ends in (it compares whole seconds:
 * valid_sec < now), so a lifetime of L s lasts more than L and at most L + 1.
 */
export function originFills({ edges, seconds, cacheS }) {
  const perEdge = { min: Math.floor(seconds / (cacheS + 1)), max: Math.floor(seconds / cacheS) + 1 };
  const slack = CAPPED_TOLERANCE.originAbs * edges;
  return {
    min: perEdge.min * edges,
    max: perEdge.max * edges,
    lo: Math.max(edges, perEdge.min * edges - slack),
    hi: perEdge.max * edges + slack,
  };
}

function plan({ exp, suite, factor, requested, knobs, policy, leadInMs, seedComparable }) {
  const roles = exp.services(knobs);
  const cases = exp.cases[suite](policy).map((spec) => {
    const id = `${spec.level.id}-${suite}`;
    const seed = seedComparable ? exp.seedFigures[id] : undefined;
    return {
      id,
      name: `${exp.name}/${id}`,
      kind: 'capped',
      level: spec.level,
      service: 'cdn-lb',
      path: '/',
      vus: spec.vus,
      durationMs: spec.seconds * 1000,
      startMs: leadInMs,
      seed: seed || null,
      expected: {
        errorRate: { hi: CAPPED_TOLERANCE.errorRate },
        originFills: originFills({ edges: roles.edge.length, seconds: spec.seconds, cacheS: policy.cache_s }),
        oomKills: { hi: 0 },
        edgeShare: {
          share: 1 / roles.edge.length,
          lo: 1 / roles.edge.length - CAPPED_TOLERANCE.shareAbs,
          hi: 1 / roles.edge.length + CAPPED_TOLERANCE.shareAbs,
        },
      },
    };
  });
  return {
    experiment: exp.name,
    kind: 'capped',
    suite,
    factor,
    requestedFactor: requested,
    knobs,
    policy,
    roles,
    model: { tolerance: CAPPED_TOLERANCE, costs: null },
    leadInMs,
    // Each case is its own stack and k6 run, one after another.
    durationS: cases.reduce((s, c) => s + (leadInMs + c.durationMs) / 1000, 0),
    cases,
  };
}

/**
 * The plan once the cost level has measured `costs` ({service: CPU s per request}): each other
 * capped case gets the model's throughput, its bottleneck and the bounds around them. Until then
 * (k6 alone, or `just expect`) a capped case has no throughput expectation: the runner calls
 * this after the cost level.
 * `uncapped` ({seed, measured} r/s) is shown beside each level as a ratio.
 */
export function withCosts(plan, costs, source, uncapped = null) {
  const T = CAPPED_TOLERANCE;
  const cases = plan.cases.map((c) => {
    if (!c.level.cpu || c.level.measuresCosts) return c;
    const caps = Object.fromEntries(Object.keys(costs).map((s) => [s, c.level.cpu / 100]));
    const p = predictCapped({ costs, caps });
    if (!p.rps) return c;
    const requests = (p.rps * c.durationMs) / 1000;
    return {
      ...c,
      expected: {
        ...c.expected,
        rps: { model: p.rps, lo: p.rps * T.rpsLo, hi: p.rps * T.rpsHi },
        requests: { lo: Math.floor(requests * T.rpsLo), hi: Math.ceil(requests * T.rpsHi) },
        bottleneck: { service: p.bottleneck, busyLo: T.busy, busyHi: T.busyHi, limits: p.limits },
      },
    };
  });
  // The uncapped level's throughput, seed and measured, for the ratios the table shows.
  return { ...plan, model: { ...plan.model, costs, costSource: source }, uncapped, cases };
}

/**
 * The values a level's bounded measures could take whatever the stack does: each edge's share
 * of the requests lies in 0..1, and is 1 where one edge is in use (a share of one judges
 * nothing). Counts of requests and refills have no top under a closed load.
 */
export function possibleValues(c, plan) {
  const one = plan.roles.edge.length === 1;
  return {
    edgeShare: one ? { lo: 1, hi: 1, why: 'one edge in use takes every request' } : { lo: 0, hi: 1, why: 'a share' },
  };
}

/** A level's k6 thresholds: errors, the origins' refills, every edge in use, and throughput. */
export function cappedThresholds(c, plan) {
  const e = c.expected;
  const t = {
    [`http_req_failed{case:${c.id}}`]: [`rate<${e.errorRate.hi}`],
    // Every connection was answered at least once; once the uncapped level has measured what a
    // request costs (the runner's plan), a capped level's count is the model's throughput.
    [`http_reqs{case:${c.id}}`]: e.requests
      ? [`count>=${e.requests.lo}`, `count<=${e.requests.hi}`]
      : [`count>=${c.vus}`],
    [`lab_origin_fills{case:${c.id}}`]: [`count>=${e.originFills.lo}`, `count<=${e.originFills.hi}`],
  };
  // Round robin reaches every edge in use; whether evenly, the lab judges from these counts.
  for (const edge of plan.roles.edge) t[`lab_edge_requests{case:${c.id},edge:${edge}}`] = ['count>=1'];
  return t;
}

/** Per threshold of cappedThresholds, the model figure and the tolerance it came from. */
export function cappedNotes(c, plan) {
  const e = c.expected;
  const T = CAPPED_TOLERANCE;
  const notes = {
    [`http_req_failed{case:${c.id}}`]: `errors (non-2xx, timeouts): under CAPPED_TOLERANCE.errorRate ${T.errorRate}`,
    [`http_reqs{case:${c.id}}`]: e.requests
      ? `requests: the model's throughput ${+e.rps.model.toFixed(1)} r/s over the run (bottleneck ${e.bottleneck.service}), x${T.rpsLo}..x${T.rpsHi} (CAPPED_TOLERANCE.rps*): ${e.requests.lo}..${e.requests.hi}`
      : `requests: every connection answered at least once (no cost measured yet to model a throughput): ${c.vus} or more`,
    [`lab_origin_fills{case:${c.id}}`]: rangeNote(
      'origin fills (each edge once per cache lifetime)',
      e.originFills,
      `+-${T.originAbs} per edge in use (CAPPED_TOLERANCE.originAbs)`,
    ),
  };
  for (const edge of plan.roles.edge)
    notes[`lab_edge_requests{case:${c.id},edge:${edge}}`] =
      `requests ${edge} answered: round robin reaches every edge in use, at least 1`;
  return notes;
}

/**
 * A closed load on one cap level: `vus` connections, each asking again as soon as the answer is
 * in (k6's constant-vus, wrk's model).
 */
function scenarios(plan) {
  return Object.fromEntries(
    plan.cases.map((c) => [
      c.id,
      {
        executor: 'constant-vus',
        vus: c.vus,
        duration: `${Math.round(c.durationMs)}ms`,
        gracefulStop: '10s',
        exec: 'hit',
        tags: { case: c.id },
      },
    ]),
  );
}

/**
 * One level per k6 run, as the seed ran wrk once per level against containers restarted with
 * new limits: the runner's phase, or CASE with k6 alone (the first, uncapped, by default).
 */
function k6Plan(whole, env) {
  const wanted = env.CASE || env.PHASE || whole.phase || whole.cases[0].id;
  const c = whole.cases.find((x) => x.id === wanted);
  if (!c) throw new Error(`CASE=${wanted}: no such case; this plan has ${whole.cases.map((x) => x.id).join(', ')}`);
  return { ...whole, phase: c.id, cases: [c] };
}

export default {
  name: 'capped',
  plan,
  scenarios,
  k6Plan,
  phaseIds: (whole) => whole.cases.map((c) => c.id),
  thresholds: cappedThresholds,
  notes: cappedNotes,
  possible: possibleValues,
  // A capped plan's cases all go to its one entry; no stack config is per case.
  caseTargets: () => [],
};
