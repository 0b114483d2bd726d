/*
 * The plan of a run: for one experiment and suite, the cases k6 will run (when, how fast, where)
 * and, for each, what the model says must happen, widened by the stated tolerance. The runner
 * prints it (`just expect`), k6 turns it into scenarios and thresholds, and the results table
 * compares against it. Nothing expected comes from anywhere else.
 */
import { experiments } from './experiments/index.js';
import { capacityPlan } from './kinds/capacity.js';
import { closedPlan } from './kinds/closed-loop.js';
import { cappedPlan } from './kinds/capped.js';
import { countRange } from './count-range.js';
import { resolveKnobs, scaleKnobs, isDefault } from './knobs.js';
import { simulate, requestCount, JITTER_MS, TRIALS, SERVICE_MS, SEGMENT_SKEW_MS } from './models/limiter-replay.js';

export { experiments };
export const QUICK_FACTOR = 5;

/**
 * What this kind of machine (2 cores, k6 beside the stack) can be asked to do, checked on every
 * plan before anything starts:
 * - an arrival rate: k6 sends about 10 k r/s here at best; twice that cannot be faithful;
 * - VUs in flight: the open-files limit is 20000 and cannot be raised, and every VU holds a
 *   connection (an fd in k6, two in a proxy); k6 itself falls behind its schedule well before;
 * - --quick: a 60 s step must stay at least 0.6 s, or scenario start-up is what gets measured.
 */
export const LIMITS = { maxRate: 20_000, maxVus: 5000, maxQuick: 100 };

function checkLimits(p) {
  for (const c of p.cases) {
    const rate = c.rate ?? Math.max(...(c.steps || [0]));
    if (rate > LIMITS.maxRate) throw new Error(`${p.experiment} ${c.id} would ask ${rate} r/s: this kind of machine sends at most ${LIMITS.maxRate} (k6 beside the stack on 2 cores)`);
    if ((c.vus || 0) > LIMITS.maxVus) throw new Error(`${p.experiment} ${c.id} would hold ${c.vus} VUs at once: at most ${LIMITS.maxVus} here (the open-files limit is 20000)`);
  }
  return p;
}
const LEAD_IN_MS = 2000;

/** The stated tolerance of every threshold. */
export const TOLERANCE = {
  countRel: 0.02, // counts: +-2 % or +-2 requests, whichever is larger, around the model's range
  countAbs: 2,
  // Requests k6 sends: the schedule, or up to 5 % (at least 2) fewer. k6's arrival-rate executor
  // abandons the iterations its loop has not started when a stage ends; with the stack on the
  // same 2 cores it lost up to 0.5 % at 400 r/s and 3.5 % at 2000 r/s (--quick). An unsent
  // request would have been limited, so the limited count's lower bound gives the same room;
  // the 200 count, which is where a policy change shows, keeps its tolerance.
  sentRel: 0.05,
  latencyRel: 0.05, // max latency: +-5 %, plus 20 ms below and 200 ms above (app, loopback, k6)
  latencyBelowMs: 20,
  latencyAboveMs: 200,
  queuedMs: 250, // a case whose model delay stays under this "queues nothing": p99 must be < 1 s
  p99Ms: 1000,
};

/** Suites are k6 test types; each holds the experiments that define it, in this order. */
export const suites = Object.fromEntries(
  ['smoke', 'spike', 'soak', 'stress', 'load', 'breakpoint'].map((s) => [
    s,
    Object.values(experiments).filter((e) => e.suites[s]).map((e) => e.name),
  ]),
);

export function experimentNamed(name) {
  const e = experiments[name];
  if (!e) throw new Error(`unknown experiment '${name}'; valid: ${Object.keys(experiments).join(', ')}`);
  return e;
}

export function suiteExperiments(suite) {
  const list = suites[suite];
  if (!list) throw new Error(`unknown suite '${suite}'; valid: ${Object.keys(suites).filter((s) => suites[s].length).join(', ')}`);
  if (list.length === 0) throw new Error(`suite '${suite}' has no experiments yet; runnable: ${Object.keys(suites).filter((s) => suites[s].length).join(', ')}`);
  return list;
}


function latencyExpectation({ min, max }) {
  if (max < TOLERANCE.queuedMs) return { p99Ms: { hi: TOLERANCE.p99Ms } };
  return {
    maxMs: {
      min,
      max,
      lo: Math.max(0, Math.floor(min * (1 - TOLERANCE.latencyRel) - TOLERANCE.latencyBelowMs)),
      hi: Math.ceil(max * (1 + TOLERANCE.latencyRel) + TOLERANCE.latencyAboveMs),
    },
  };
}

/**
 * The targets as a stack serves them: each with the id of every case, of any suite, that
 * reaches it (an Envoy route per case, for instance), so one stack serves every suite.
 */
export function stackTargets(name, knobs, policy) {
  const exp = experimentNamed(name);
  const ids = {};
  for (const suite of Object.keys(exp.suites)) {
    // A capped plan's cases all go to its one entry; no stack config is per case.
    if (exp.kind === 'capped') continue;
    const pairs = exp.kind === 'capacity' || exp.kind === 'closed-loop'
      ? exp.cases[suite](knobs, 1).map((c) => [c.target ?? exp.modes[c.mode].target, c.id])
      : exp.suites[suite](knobs).flatMap((step) => step.targets.map((t) => [t, `${t}-${step.name}`]));
    for (const [t, id] of pairs) (ids[t] ||= new Set()).add(id);
  }
  return exp.targets(policy).map((t) => ({ ...t, cases: [...(ids[t.id] || [])].map((id) => ({ id })) }));
}

/**
 * What the model predicts for each case (keyed by case) when each target runs its policy. Every
 * case meets a limiter of its own, fresh (its own key of the zone, its own Envoy route), as the
 * seeds' separate runs did: what one case leaves in a queue never reaches the next.
 */
export function predict(targets, cases, seed, segments = 1) {
  const out = new Map();
  for (const target of targets) {
    for (const c of cases.filter((x) => x.target === target.id)) out.set(c, simulate(target.policy, [c], { seed, segments })[0]);
  }
  return out;
}

/**
 * plan({experiment, suite, factor, overrides}) -> {experiment, suite, factor, knobs, policy, cases}
 * `factor` > 1 is --quick: arrival rates and policy rates times factor, durations and
 * refill intervals divided by it, so the expected counts stay those of the seed timing.
 */
export function plan({ experiment: name, suite, factor: requested = 1, overrides = {}, segments = 1 }) {
  const exp = experimentNamed(name);
  const steps = exp.suites[suite];
  if (!steps) throw new Error(`experiment '${name}' has no '${suite}' cases; it has: ${Object.keys(exp.suites).join(', ')}`);
  if (!Number.isInteger(requested) || requested < 1 || requested > LIMITS.maxQuick) throw new Error(`--quick takes a whole factor 1..${LIMITS.maxQuick}, got ${requested}: a 60 s step must stay at least 0.6 s`);
  // An experiment may cap the factor at what its load generator can still send faithfully.
  const factor = Math.min(requested, exp.maxQuick ?? Infinity);
  const knobs = resolveKnobs(exp, overrides);
  const policy = { ...scaleKnobs(exp, knobs, factor), ...exp.derived?.(knobs) };
  if (exp.checkScaled) exp.checkScaled(policy, factor);
  if (exp.kind === 'capacity') return checkLimits(capacityPlan({ exp, suite, factor, requested, knobs, policy, leadInMs: LEAD_IN_MS }));
  const seedComparable = isDefault(exp, knobs);
  if (exp.kind === 'closed-loop') return checkLimits(closedPlan({ exp, suite, factor, requested, knobs, policy, leadInMs: LEAD_IN_MS, seedComparable }));
  if (exp.kind === 'capped') return checkLimits(cappedPlan({ exp, suite, factor, requested, knobs, policy, leadInMs: LEAD_IN_MS, seedComparable }));
  const targets = exp.targets(policy);

  const cases = [];
  // Real time (not scaled by --quick) for k6's warm-up before the first case; the limiters idle
  // meanwhile, which changes nothing (a token bucket is full, a leaky bucket empty).
  let t = LEAD_IN_MS;
  const stepList = steps(knobs);
  // Every case meets a fresh limiter (see predict), so no step waits for a queue to drain: the
  // steps of an experiment start together, or, where their load would share the CPU with each
  // other (400 r/s bursts), one right after another.
  stepList.forEach((step) => {
    const durationMs = (step.seconds * 1000) / factor;
    for (const id of step.targets) {
      cases.push({ id: `${id}-${step.name}`, target: id, startMs: t, rate: step.rate * factor, durationMs, step: step.name });
    }
    if (!exp.stepsTogether) t += durationMs;
  });

  // Split over k6 processes (--segments), a schedule is as exact as their clocks agree.
  const predictions = predict(targets, cases, name, segments);
  for (const target of targets) {
    cases.filter((c) => c.target === target.id).forEach((c) => {
      const s = predictions.get(c);
      const seed = seedComparable ? exp.seedFigures[c.id] : undefined;
      const latency = latencyExpectation(s.maxDelayMs);
      const unsent = Math.max(TOLERANCE.countAbs, Math.floor(TOLERANCE.sentRel * requestCount(c)));
      const limited = countRange(s.limited, TOLERANCE);
      Object.assign(c, {
        name: `${name}/${c.id}`,
        service: target.service,
        path: target.path,
        limitedStatus: target.limitedStatus,
        requests: requestCount(c),
        // A queue wait shrinks with --quick; the seed's millisecond response times do not.
        seed: seed ? { ...seed, maxS: latency.maxMs ? seed.maxS / factor : seed.maxS } : null,
        expected: {
          sent: { lo: requestCount(c) - unsent, hi: requestCount(c) },
          ok: countRange(s.ok, TOLERANCE),
          limited: { ...limited, lo: Math.max(0, limited.lo - unsent) },
          ...latency,
          timingSensitive: s.ok.min !== s.ok.max,
        },
        // The model's own range of the longest queue wait (ms), before any tolerance.
        model: { maxDelayMs: s.maxDelayMs },
        // Split over k6 processes, each gets its share of these (k6 divides them by segment),
        // while the requests a queue holds are not split evenly at every moment: each process
        // gets the whole count (dropped iterations in a spike split in two with the share).
        vus: (Math.ceil(s.inFlight.max * 1.25) + 10) * segments,
        timeoutS: Math.ceil((s.maxDelayMs.max * 1.5) / 1000 + 10),
        // How long k6 lets the last queued requests finish: the model's longest wait and a
        // tenth more, so that a scenario's VUs go back to k6 as soon as they can.
        graceS: Math.ceil(((s.maxDelayMs.max + SERVICE_MS) * 1.1) / 100) / 10 + 0.5,
      });
    });
  }
  return checkLimits({
    experiment: name,
    suite,
    factor,
    requestedFactor: requested,
    knobs,
    policy,
    segments,
    model: { trials: TRIALS, jitterMs: JITTER_MS, tolerance: TOLERANCE, ...(segments > 1 ? { segmentSkewMs: SEGMENT_SKEW_MS } : {}) },
    leadInMs: LEAD_IN_MS,
    durationS: Math.max(...cases.map((c) => (c.startMs + c.durationMs) / 1000 + (c.expected.maxMs?.max ?? 0) / 1000)),
    cases,
  });
}
