/*
 * Plans for capacity experiments (json-filter): no limiter to replay, so what is expected is
 * what a correct, unsaturated server must do. Stated bounds:
 * - below its breakpoint a server answers all but 1 % and its p99 stays under 1 s; the first
 *   step of the ramp must be below every server's breakpoint;
 * - a step is sustained when k6 also got 95 % of its arrival rate through;
 * - a relayed answer cannot arrive sooner than the backend's delay, less 1 ms: the backend's
 *   sleep starts on nginx's cached millisecond clock, which can be up to 1 ms behind;
 * - a closed run carries at least the ramp's first step (a server that is not broken does);
 * - the backend receives exactly the relayed documents (give or take the failed requests).
 */
export const CAPACITY = { p99Ms: 1000, errorRate: 0.01, sustain: 0.95, pauseMs: 2000 };

// The lowest arrival rate of a ramp, which every server must sustain (see the suite's steps).
export const FIRST_STEP = 500;

const metricName = (id) => id.replace(/[^a-zA-Z0-9]/g, '_');

export function capacityPlan({ exp, suite, factor, requested, knobs, policy, leadInMs }) {
  const targets = exp.targets(policy);
  let t = leadInMs;
  const cases = exp.cases[suite](knobs, factor).map((c) => {
    const target = targets.find((x) => x.id === c.target);
    const durationMs = c.kind === 'ramp' ? c.steps.length * (c.rampS + c.holdS) * 1000 : c.seconds * 1000;
    const seed = exp.seedFigures[c.id];
    const out = {
      ...c,
      name: `${exp.name}/${c.id}`,
      service: target.service,
      path: target.path,
      startMs: t,
      durationMs,
      relaysAll: c.target === 'nginx', // the reference decides nothing: every document goes through
      metric: metricName(c.id),
      seed: seed || null,
      expected: {
        errorRate: { hi: CAPACITY.errorRate },
        relayMinMs: { lo: Math.max(0, policy.backend_delay_ms - 1) },
        ...(c.kind === 'ramp' ? { sustained: { lo: c.steps[0] }, p99Ms: { hi: CAPACITY.p99Ms } } : {}),
        ...(c.kind === 'open' ? { requests: { lo: Math.round(c.rate * c.seconds), hi: Math.round(c.rate * c.seconds) } } : {}),
        ...(c.kind === 'closed' ? { requests: { lo: Math.round(FIRST_STEP * c.seconds) } } : {}),
      },
      graceS: c.kind === 'open' ? 1 : Math.ceil(policy.backend_timeout_ms / 1000) + 2,
    };
    // A short open run leaves nothing queued; after a saturating run the backend gets a pause.
    t += durationMs + (c.kind === 'open' ? 0 : out.graceS * 1000 + CAPACITY.pauseMs);
    return out;
  });
  return {
    experiment: exp.name,
    kind: 'capacity',
    suite,
    factor,
    requestedFactor: requested,
    knobs,
    policy,
    model: { capacity: CAPACITY },
    leadInMs,
    relayPercent: knobs.relay_percent,
    // The backend's /stats counts what reached it; the runner reads it before and after k6.
    accounting: { service: 'json-filter-backend', path: '/stats' },
    durationS: t / 1000,
    cases,
  };
}

/** Per-step figures of a ramp from k6's summary: achieved rate, p99, error share, sustained? */
export function rampSteps(c, metrics) {
  return c.steps.map((rate) => {
    const m = (k) => metrics[`${c.metric}_${rate}_${k}`]?.values;
    const reqs = m('reqs')?.count ?? 0;
    const failed = m('failed')?.count ?? 0;
    const p99 = m('ms')?.['p(99)'] ?? null;
    const achieved = reqs / c.holdS;
    const errorRate = reqs ? failed / reqs : 1;
    const sustained = reqs > 0 && achieved >= CAPACITY.sustain * rate && errorRate < CAPACITY.errorRate && p99 !== null && p99 < CAPACITY.p99Ms;
    return { rate, reqs, achieved: Math.round(achieved), p99, errorRate, sustained };
  });
}

/** The breakpoint: the highest step sustained with every step below it sustained too. */
export function breakpoint(steps) {
  let best = 0;
  for (const s of steps) {
    if (!s.sustained) break;
    best = s.rate;
  }
  return best;
}
