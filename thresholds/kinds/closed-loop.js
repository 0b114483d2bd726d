/*
 * Plans for closed-loop experiments (caching): a fixed set of users, each with its list of
 * requests, looping as fast as answers come back. What is expected comes from the simulation
 * (closed-loop.js) over jitter trials, widened by the tolerance below.
 */
import { predictLoop, HOP_MS, LOOP_JITTER_MS } from '../models/closed-loop.js';
import { RANGE_TRIALS } from '../models/random.js';
import { countRange } from '../count-range.js';
import { sentMetric, okMetric, limitedMetric } from './limiter.js';
import { withTeeth, shownRanges, KEEP_ONLY, rangeNote, keepNote } from './judged.js';

/**
 * The stated tolerance around the model's range. A closed loop feeds its own timing back (an
 * answer 1 ms later moves every later request of that user), so counts get more room than the
 * open plans' 2 %; latencies cover loopback and k6, which take longer here than the model counts
 * (measured: stacks/caching/README.md).
 */
export const CLOSED_TOLERANCE = {
  countRel: 0.05, // 200s, 503s and requests the application served: +-5 % or +-3
  countAbs: 3,
  spanRel: 0.1, // the run's length (first request to last answer), hence responses/s: +-10 %
  spanAbsMs: 100,
  meanRel: 0.15, // mean latency: +-15 % and +-30 ms
  meanAbsMs: 30,
  maxRel: 0.1, // max latency: +-10 %, 30 ms below and 200 ms above
  maxBelowMs: 30,
  maxAboveMs: 200,
  gapMs: 2000, // between cases, beyond the longest the model says one can last
};

const pick = (o, keys) => Object.fromEntries(keys.map((k) => [k, o[k]]));

/** Where the kind's own constants come from, for its experiments' `provenance`. */
export const provenance = {
  measured: {
    'CLOSED_TOLERANCE.latency': {
      value: pick(CLOSED_TOLERANCE, ['meanRel', 'meanAbsMs', 'maxRel', 'maxBelowMs', 'maxAboveMs']),
      source: 'stacks/caching/README.md',
    },
  },
  assumed: {
    'CLOSED_TOLERANCE.counts': {
      value: pick(CLOSED_TOLERANCE, ['countRel', 'countAbs', 'spanRel', 'spanAbsMs']),
      why: 'room for a loop that feeds its own timing back: no measurement recorded',
    },
    HOP_MS: {
      value: HOP_MS,
      why: "the model's time per loopback hop: no measurement recorded; the latency margins cover what it leaves out",
    },
    LOOP_JITTER_MS: {
      value: LOOP_JITTER_MS,
      why: 'the largest jitter per hop the trials sweep to: no measurement recorded',
    },
  },
};

const T = CLOSED_TOLERANCE;
const widen = ({ min, max }, rel, below, above = below) => ({
  min,
  max,
  lo: Math.max(0, Math.floor(min * (1 - rel) - below)),
  hi: Math.ceil(max * (1 + rel) + above),
});

/**
 * The counts a case could give whatever the policy: every user gets an answer per request of
 * its list; the first request of a case passes both limiters (fresh keys) and reaches the
 * application (fresh caches); a retrying client sends a request at most 1 + attempts times.
 */
export function possibleCounts(c) {
  const answers = c.responses;
  const sends = answers * (1 + (c.retry?.attempts ?? 0));
  const why = 'the first request passes the limiters and reaches the application, whatever the policy';
  return {
    // Its own count, not the policy's: fewer when a user's loop is cut short.
    responses: { lo: 0, hi: answers, why: 'a user gets at most one answer per request of its list' },
    ok: { lo: 1, hi: answers, why },
    limited: { lo: 0, hi: answers - 1, why },
    appServed: { lo: 1, hi: sends, why },
    sentOk: { lo: 1, hi: sends, why },
    sentLimited: { lo: 0, hi: sends - 1, why },
    sent: { lo: 1, hi: sends, why },
  };
}

/**
 * A case's thresholds from the model's prediction `p`: every count with its tolerance, the run's span
 * and latencies.
 */
function expectedOf(p, responses, config) {
  const possible = possibleCounts({ responses, retry: config.retry });
  const counts = (key) => withTeeth(countRange(p[key], T), possible[key]);
  return {
    responses: { lo: responses, hi: responses },
    ok: counts('ok'),
    limited: counts('limited'),
    appServed: counts('appServed'),
    sentOk: counts('sentOk'),
    sentLimited: counts('sentLimited'),
    sent: counts('sent'),
    spanMs: widen(p.durationMs, T.spanRel, T.spanAbsMs),
    meanMs: widen(p.meanMs, T.meanRel, T.meanAbsMs),
    maxMs: widen(p.maxMs, T.maxRel, T.maxBelowMs, T.maxAboveMs),
  };
}

/** One case of the suite, starting at `startMs`: its users, its target, the model's run of it and its thresholds. */
function loopCase(exp, spec, { knobs, policy, targets, startMs, seedComparable }) {
  const mode = exp.modes[spec.mode];
  const config = {
    ...exp.loopConfig(knobs, spec.mode),
    ...(spec.rampS !== undefined ? { rampMs: spec.rampS * 1000 } : {}),
    resources: policy.resources,
  };
  const p = predictLoop({ ...config, users: spec.users }, { seed: `${exp.name}:${spec.id}` });
  const target = targets[mode.target];
  const responses = spec.users.reduce((n, u) => n + u.length, 0);
  return {
    id: spec.id,
    name: `${exp.name}/${spec.id}`,
    kind: 'closed-loop',
    mode: spec.mode,
    target: target.id,
    service: target.service,
    path: target.path,
    limitedStatus: 503,
    clientCache: config.clientCache,
    retry: config.retry,
    rampMs: config.rampMs,
    users: spec.users,
    startMs,
    vus: spec.users.length,
    responses,
    seed: seedComparable ? (exp.seedFigures?.[spec.id] ?? null) : null,
    model: p,
    expected: expectedOf(p, responses, config),
    // Long enough for a run the model says is 50 % slower, so that a failing case still ends.
    maxDurationS: Math.ceil((p.durationMs.max * 1.5) / 1000 + 10),
    timeoutS: Math.ceil((p.maxMs.max * 1.5) / 1000 + 10),
  };
}

function plan({ exp, suite, factor, requested, knobs, policy, leadInMs, seedComparable }) {
  const targets = Object.fromEntries(exp.targets(policy).map((t) => [t.id, t]));
  let t = leadInMs;
  const cases = exp.cases[suite](knobs).map((spec) => {
    const c = loopCase(exp, spec, { knobs, policy, targets, startMs: t, seedComparable });
    // Cases run one after another, as they share the application's workers; each meets fresh
    // limiter keys and a fresh server cache (both keyed by the case), and its users fresh client
    // caches.
    t += c.model.durationMs.max * (1 + T.spanRel) + T.gapMs;
    return c;
  });
  return {
    experiment: exp.name,
    suite,
    kind: 'closed-loop',
    factor,
    requestedFactor: requested,
    knobs,
    policy,
    model: { tolerance: T, trials: RANGE_TRIALS },
    leadInMs,
    accounting: exp.accounting,
    durationS: t / 1000,
    cases,
  };
}

/**
 * A closed-loop case's thresholds (caching): counts of answers, the run's length, latencies. A
 * count range that admits every value the case could give is shown, not judged: KEEP_ONLY.
 */
export function closedThresholds(c) {
  const e = c.expected;
  const range = (stat, r) => [`${stat}>=${r.lo}`, `${stat}<=${r.hi}`];
  const counts = countMetrics(c);
  const shown = shownRanges(e, possibleCounts(c));
  const t = Object.fromEntries(
    Object.entries(counts).map(([metric, key]) => [metric, shown[key] ? [KEEP_ONLY] : range('count', e[key])]),
  );
  return {
    ...t,
    [`lab_response_time{case:${c.id}}`]: [...range('avg', e.meanMs), ...range('max', e.maxMs)],
    [`lab_case_end{case:${c.id}}`]: range('max', e.spanMs),
    [`unexpected_status{case:${c.id}}`]: ['count<1'],
  };
}

/** Per threshold of closedThresholds, the model figure and the tolerance it came from. */
export function closedNotes(c) {
  const e = c.expected;
  const shown = shownRanges(e, possibleCounts(c));
  const counts = `+-${T.countRel * 100} % or +-${T.countAbs} (CLOSED_TOLERANCE.countRel, countAbs)`;
  const notes = Object.fromEntries(
    Object.entries(countMetrics(c)).map(([metric, key]) => [
      metric,
      shown[key] ? keepNote(COUNT_NAMES[key], shown[key]) : rangeNote(COUNT_NAMES[key], e[key], counts),
    ]),
  );
  return {
    ...notes,
    [`lab_response_time{case:${c.id}}`]: `${rangeNote('mean latency (ms)', e.meanMs, `+-${T.meanRel * 100} % and +-${T.meanAbsMs} ms (CLOSED_TOLERANCE.mean*)`)}; ${rangeNote('max latency (ms)', e.maxMs, `-${T.maxRel * 100} % - ${T.maxBelowMs} ms, +${T.maxRel * 100} % + ${T.maxAboveMs} ms (CLOSED_TOLERANCE.max*)`)}`,
    [`lab_case_end{case:${c.id}}`]: rangeNote(
      "the run's length, first request to last answer (ms)",
      e.spanMs,
      `+-${T.spanRel * 100} % and +-${T.spanAbsMs} ms (CLOSED_TOLERANCE.span*)`,
    ),
    [`unexpected_status{case:${c.id}}`]: `answers the policy does not give: none but 200 and ${c.limitedStatus}`,
  };
}

const COUNT_NAMES = {
  responses: 'answers the users got, one per request of their lists',
  ok: '200s the users got',
  limited: '503s the users got',
  appServed: 'requests the application served',
  sentOk: '200s sent over the wire',
  sentLimited: '503s sent over the wire',
  sent: 'requests sent over the wire',
};

/**
 * The counts a closed-loop case judges, by metric: answers as users got them, what the app served,
 * requests as the proxy counts them.
 */
function countMetrics(c) {
  return {
    [`lab_responses{case:${c.id}}`]: 'responses',
    [`lab_responses{case:${c.id},status:200}`]: 'ok',
    [`lab_responses{case:${c.id},status:${c.limitedStatus}}`]: 'limited',
    [`lab_app_served{case:${c.id}}`]: 'appServed',
    [okMetric(c)]: 'sentOk',
    [limitedMetric(c)]: 'sentLimited',
    [sentMetric(c)]: 'sent',
  };
}

/** Per case, one VU per user, each running through its list once (k6/lib/kinds/closed-loop.js). */
function scenarios(plan) {
  return Object.fromEntries(
    plan.cases.map((c) => [
      c.id,
      {
        executor: 'per-vu-iterations',
        vus: c.vus,
        iterations: 1,
        startTime: `${Math.round(c.startMs)}ms`,
        maxDuration: `${c.maxDurationS}s`,
        gracefulStop: '0s',
        exec: 'hit',
        tags: { case: c.id },
      },
    ]),
  );
}

export default {
  name: 'closed-loop',
  plan,
  scenarios,
  thresholds: closedThresholds,
  notes: closedNotes,
  possible: possibleCounts,
  caseTargets: (exp, suite, knobs) => exp.cases[suite](knobs, 1).map((c) => [exp.modes[c.mode].target, c.id]),
  // No per-case replay to bisect cheaply (each step is a full simulation of every user): its
  // perturbations are shown in its stack README instead.
  sensitivityWhy: 'a closed loop',
  // What the application served is counted too: by k6 (its /counts), Prometheus and the proxy.
  appServed: true,
};
