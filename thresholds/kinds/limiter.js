/*
 * The limiter kind (burst, envoy-vs-nginx): open-model cases, each at a fixed arrival rate
 * against a limiter of its own (an nginx limit_req key, an Envoy route), replayed by the model
 * over k6's exact schedule with timing noise. What must happen: how many requests pass, how
 * many are limited, and how long the last one waits; k6 judges each as a threshold.
 */
import { countRange } from '../count-range.js';
import {
  simulate,
  simulateCourse,
  replaySends,
  replayCourse,
  requestCount,
  JITTER_MS,
  TRIALS,
  SERVICE_MS,
  SEGMENT_SKEW_MS,
  REPLAY_TRIALS,
  refusedAs,
} from '../models/limiter-replay.js';
import { SEEN_LAG_MS } from '../models/seen-lag.js';
import { acceptRate, FORGET_MS } from '../models/accept-rate.js';
import { limiterSensitivity, limiterExplain } from './limiter-sensitivity.js';
import { withTeeth, shownRanges, KEEP_ONLY, KEEP_TREND, rangeNote, keepNote } from './judged.js';
import { heldRateStages } from '../held-rate.js';

/** The stated tolerance of every threshold. */
export const TOLERANCE = {
  countRel: 0.02, // counts: +-2 % or +-2 requests, whichever is larger, around the model's range
  countAbs: 2,
  // Requests k6 sends: the schedule, or up to 5 % (at least 2) fewer. k6's arrival-rate executor
  // abandons the iterations its loop has not started when a stage ends, more of them the faster
  // it sends beside the stack (measured loss: docs/model.md). An unsent request would have been
  // limited, so the limited count's lower bound gives the same room; the 200 count, which is
  // where a policy change shows, keeps its tolerance.
  sentRel: 0.05,
  latencyRel: 0.05, // max latency: +-5 %, plus 20 ms below and 200 ms above (app, loopback, k6)
  latencyBelowMs: 20,
  latencyAboveMs: 200,
  queuedMs: 250, // a case whose model delay stays under this "queues nothing": p99 must be < 1 s
  p99Ms: 1000,
};

/**
 * Where the kind's own constants come from, for its experiments' `provenance`: none is fitted to
 * a seed's figures.
 */
export const provenance = {
  measured: {
    SEGMENT_SKEW_MS: { value: SEGMENT_SKEW_MS, source: 'docs/beyond-one-machine.md' },
    SEEN_LAG_MS: { value: SEEN_LAG_MS, source: 'docs/model.md#seen-lag' },
    JITTER_MS: { value: JITTER_MS, source: 'docs/model.md#k6-lateness' },
    'TOLERANCE.sentRel': { value: TOLERANCE.sentRel, source: 'docs/model.md' },
  },
  assumed: {
    SERVICE_MS: {
      value: SERVICE_MS,
      why: 'time a request holds a VU besides its wait, for VU sizing and grace only: room over the longest answer k6 measured beside a CPU burner (docs/model.md#vus)',
    },
    TOLERANCE: {
      value: Object.fromEntries(
        ['countRel', 'countAbs', 'latencyRel', 'latencyBelowMs', 'latencyAboveMs', 'queuedMs', 'p99Ms'].map((k) => [
          k,
          TOLERANCE[k],
        ]),
      ),
      why: 'room for the app, loopback and k6, stated with the first model: no measurement recorded',
    },
  },
};

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
 * A case's path, and the headers its requests carry beyond x-lab-case: a target may ask for
 * its route's Host and for the case's own key ('{case}') in a header or an argument.
 */
function caseRequest(target, id, index = 0) {
  // A team's policy gives each case a request of its own (its slot: its client's key), at its origin.
  const slots = target.request?.slots;
  if (slots) {
    const slot = slots[index % slots.length];
    return {
      path: slot.path,
      ...(Object.keys(slot.headers ?? {}).length ? { headers: slot.headers } : {}),
      ...(target.request.origin ? { origin: target.request.origin } : {}),
      // A TLS listener with http2 is spoken to in HTTP/2 (k6 negotiates it): the case checks it did.
      ...(target.request.http2 && target.request.origin?.startsWith('https:') ? { proto: 'HTTP/2.0' } : {}),
    };
  }
  const fill = (v) => v.split('{case}').join(id);
  const query = target.request?.query ? fill(target.request.query) : '';
  const headers = Object.fromEntries(Object.entries(target.request?.headers ?? {}).map(([k, v]) => [k, fill(v)]));
  return {
    path: `${target.path}${query ? `${target.path.includes('?') ? '&' : '?'}${query}` : ''}`,
    ...(Object.keys(headers).length ? { headers } : {}),
  };
}

/**
 * The counts a case of `requests` could give whatever the limiter's policy: a fresh key (every
 * case has its own) passes its first request, nginx's limit_req and Envoy's token bucket alike,
 * and k6 sends no more than the schedule. A range holding all of them judges nothing.
 */
export function possibleCounts(c) {
  const why = 'a fresh limiter passes its first request, whatever its policy';
  return {
    ok: { lo: 1, hi: c.requests, why },
    limited: { lo: 0, hi: c.requests - 1, why },
    sent: { lo: 0, hi: c.requests, why: 'k6 sends at most the schedule' },
  };
}

/**
 * A predict (as `predict` is called) that replays what k6 really sent to the case (its send times
 * and the proxy's sightings) instead of the plan's schedule: the diagnosis of a replayed case.
 */
const replayPredict =
  ({ times, clockOffsetMs, sightings, lead = null }) =>
  (targets, cases, seed) =>
    new Map(
      cases.map((c) => [
        c,
        replaySends(casePolicy(targets[0].policy, c), times, { clockOffsetMs, sightings, lead, seed }),
      ]),
    );

/**
 * A case's policy as its requests meet it: with the hold they ask of the backend (a limit_conn
 * case's), whether each opens a connection of its own (a sessions case's), and the keys they
 * send in turn (an evict case's), where so.
 */
const casePolicy = (policy, c) => ({
  ...policy,
  ...(c.holdMs ? { holdMs: c.holdMs } : {}),
  ...(c.connects ? { connects: true } : {}),
  ...(c.keyRuns ? { keyRuns: c.keyRuns } : {}),
});

/**
 * What the model predicts for each case (keyed by case) when each target runs its policy. Every
 * case meets a limiter of its own, fresh (its own key of the zone, its own Envoy route), as the
 * seeds' separate runs did: what one case leaves in a queue never reaches the next.
 */
export function predict(targets, cases, seed, segments = 1) {
  const out = new Map();
  for (const target of targets) {
    for (const c of cases.filter((x) => x.target === target.id)) {
      // A case that follows another on one bucket meets it as that case left it (see scheduledCases).
      const lead = leadOf(cases, c);
      out.set(c, simulate(casePolicy(target.policy, c), [...lead, c], { seed, segments }).at(-1));
    }
  }
  return out;
}

/** The case `c` follows with no pause on its bucket, as a list ([] where none), from `cases`. */
function leadOf(cases, c) {
  if (!c.follows) return [];
  const lead = cases.find((x) => x.id === c.follows);
  if (!lead) throw new Error(`${c.id} follows ${c.follows} on its bucket, which the cases given lack`);
  return [lead];
}

/**
 * The experiment's load steps for a suite as cases (a target and a step each), on one timeline.
 * Every case meets a fresh limiter (see predict), so no step waits for a queue to drain: the
 * steps of an experiment start together, or, where their load would share the CPU with each
 * other (400 r/s bursts), one right after another.
 */
function scheduledCases(exp, suite, knobs, factor, leadInMs) {
  const cases = [];
  // Real time (not scaled by --quick) for k6's warm-up before the first case; the limiters idle
  // meanwhile, which changes nothing (a token bucket is full, a leaky bucket empty).
  let t = leadInMs;
  const steps = exp.suites[suite](knobs, { factor });
  // An experiment may run its steps together only while their load together stays in bounds.
  const together = typeof exp.stepsTogether === 'function' ? exp.stepsTogether(steps, factor) : exp.stepsTogether;
  // Where each case ends (ms): a case that follows another starts there, together or not.
  const ends = new Map();
  steps.forEach((step) => {
    const durationMs = (step.seconds * 1000) / factor;
    for (const id of step.targets) {
      const caseId = `${id}-${step.name}`;
      const lead = step.follows ? `${id}-${step.follows}` : null;
      if (lead && !ends.has(lead)) throw new Error(`${caseId} follows ${lead}, which no step before it is`);
      const startMs = lead ? ends.get(lead) : t;
      ends.set(caseId, startMs + durationMs);
      cases.push({
        id: caseId,
        target: id,
        startMs,
        rate: step.rate * factor,
        durationMs,
        step: step.name,
        // A step may ask its answers held (a limit_conn's cases), and count another limited status.
        ...(step.holdS ? { holdMs: Math.round((step.holdS * 1000) / factor) } : {}),
        // A step may follow another on the same bucket with no pause between (afterS 0): its
        // cases meet the bucket as that step's cases left it, and only their own answers count.
        ...(lead ? { follows: lead } : {}),
        ...(step.status ? { limitedStatus: step.status } : {}),
        // A step may open a connection per request (a frontend's accept limit's cases).
        ...(step.connects ? { connects: true } : {}),
        // A step may send several keys in turn (a small table's evict case: key-runs.js).
        ...(step.keyRuns ? { keyRuns: step.keyRuns } : {}),
      });
    }
    // A step may ask for a pause after it (afterS, s at the run's factor): a bucket its cases
    // share empties or refills.
    if (!together) t += durationMs + (step.afterS ?? 0) * 1000;
  });
  return cases;
}

/**
 * The statuses a case's other limits refuse with beside its limited status (`refused <status>` in
 * the model's prediction: a limit_conn's 503 in a limit_req's case), in order.
 */
const alsoStatusesOf = (s, limitedStatus) =>
  Object.keys(s)
    .filter((k) => k.startsWith('refused '))
    .map((k) => Number(k.slice('refused '.length)))
    .filter((st) => st !== limitedStatus);

/** `also`: a range per other status the case may be refused with, from the prediction `s`, where there are any. */
function alsoExpected(c, s, range) {
  const statuses = c.alsoStatuses ?? [];
  return statuses.length ? { also: Object.fromEntries(statuses.map((st) => [st, range(refusedAs(s, st))])) } : {};
}

/**
 * A case's thresholds from the model's prediction `s`: sent, 200s and limited with their tolerances,
 * the wait, k6's timing.
 */
function expectedOf(c, s) {
  const latency = latencyExpectation(s.maxDelayMs);
  const unsent = Math.max(TOLERANCE.countAbs, Math.floor(TOLERANCE.sentRel * requestCount(c)));
  const possible = possibleCounts({ requests: requestCount(c) });
  const limited = withTeeth(countRange(refusedAs(s, c.limitedStatus), TOLERANCE), possible.limited);
  return {
    ...alsoExpected(c, s, (x) => countRange(x, TOLERANCE)),
    sent: { lo: requestCount(c) - unsent, hi: requestCount(c) },
    ok: withTeeth(countRange(s.ok, TOLERANCE), possible.ok),
    limited: { ...limited, lo: Math.max(0, limited.lo - unsent) },
    ...latency,
    timingSensitive: s.ok.min !== s.ok.max,
    // The model's timing noise is an assumption about k6: each run measures it (how much
    // later than the schedule k6 started its latest arrival than its earliest), and a run
    // where k6 kept time worse than the model allows fails on that, not on a count.
    lateSpreadMs: { hi: JITTER_MS },
  };
}

// What a proxy's connection limit leaves the lab's own clients (its metrics scrapes, readiness).
const OWN_CONNECTIONS = 8;

// VUs per request in flight where an experiment says none (the seeds' quarter more).
const SEED_HEADROOM = 1.25;

/** The VUs a case cannot do without: its most requests in flight, a quarter more, one per k6 process. */
const leastVus = (inFlight, segments) => Math.ceil(inFlight * SEED_HEADROOM) + segments;

/**
 * k6 keeps a connection open per VU, and a VU goes from case to case: where the proxy takes at
 * most `connections` ({limit, at, what}: HAProxy's maxconn) at once, the cases' VUs together stay
 * within it (less what the lab's own clients use), each shrunk in proportion down to what its
 * requests in flight need; else connections would wait for another to close, which the model
 * does not read: such a plan is refused, naming the limit.
 */
function fitConnections(cases, connections, { predictions, segments }) {
  if (!connections) return;
  const room = connections.limit - OWN_CONNECTIONS;
  const leastOf = new Map(cases.map((c) => [c, leastVus(predictions.get(c).inFlight.max, segments)]));
  const least = cases.reduce((a, c) => a + leastOf.get(c), 0);
  if (least > room)
    throw new Error(
      `${connections.at}: ${connections.what}: the cases hold up to ${least} requests in flight (with a quarter more), and the proxy takes ${connections.limit} connections at once (${OWN_CONNECTIONS} kept for the lab's own): the rest would wait, which the model does not read`,
    );
  const total = cases.reduce((a, c) => a + c.vus, 0);
  if (total > room) for (const c of cases) c.vus = Math.max(leastOf.get(c), Math.floor((c.vus * room) / total));
  // Where a case's least lifted it above its share, the others give a VU each in turn.
  let over = cases.reduce((a, c) => a + c.vus, 0) - room;
  for (let i = 0; over > 0; i = (i + 1) % cases.length) {
    if (cases[i].vus > leastOf.get(cases[i])) {
      cases[i].vus -= 1;
      over -= 1;
    }
  }
}

// How much later than its last connection is accepted the lab counts a warm-up request answered.
const WARM_ANSWER_MS = 500;

/**
 * When the warm-up's connections (one per VU, all at once) are accepted by every frontend that
 * accepts at most N a second (a target's `sessions`: {limit, at, idle}), and the limit's
 * one-second counter has forgotten them twice over, ms from the start: no case may start before.
 */
function warmAccepted(cases, targets, warmVus) {
  let readyMs = 0;
  for (const { sessions } of targets.filter((t) => t.sessions)) {
    const queue = acceptRate(sessions.limit);
    let lastMs = 0;
    for (let i = 0; i < warmVus; i += 1) lastMs = queue.accept(0);
    readyMs = Math.max(readyMs, lastMs + WARM_ANSWER_MS + FORGET_MS);
  }
  return readyMs;
}

/**
 * Where a frontend accepts at most N connections a second, its cases that keep their connections
 * open none anew: every VU opened one in the warm-up, and HAProxy closes none of them while idle
 * before the plan ends (`sessions.idle`). Where it may, a case there stays under N, so that a
 * connection opened anew does not wait to be accepted, which its model does not time; else the
 * plan is refused, naming the limit and the timeout. Returns whether every such frontend keeps
 * them: then the plan knows every connection its cases open.
 */
function fitSessions(cases, targets) {
  const endMs = Math.max(...cases.map((c) => c.startMs + c.durationMs));
  let kept = true;
  for (const t of targets.filter((x) => x.sessions)) {
    const { limit, at, idle } = t.sessions;
    if (idle.ms >= endMs) continue;
    kept = false;
    for (const c of cases.filter((x) => x.target === t.id && !x.connects)) {
      const least = Math.ceil(c.rate * 1.1) + 1;
      if (limit < least)
        throw new Error(
          `${at}: rate-limit sessions ${limit}: the case ${c.id} sends ${c.rate} r/s to this frontend, whose connections HAProxy closes after ${idle.what} idle (${idle.at}), sooner than the plan's ${Math.ceil(endMs / 1000)} s: one opened anew would wait to be accepted, which the model does not time; give it ${least} or more, or the case a slower load (load_rates)`,
        );
    }
  }
  return kept;
}

/** `cases` started `shiftMs` later (where it is more than 0), and the lead-in with them. */
function startLater(cases, leadInMs, shiftMs) {
  if (shiftMs <= 0) return leadInMs;
  for (const c of cases) c.startMs += shiftMs;
  return leadInMs + shiftMs;
}

/** What a case is given beside its schedule: its request, its seed figures, its thresholds, its VUs and timeouts. */
function caseDetails(c, { target, s, seed, name, factor, segments, index, headroom }) {
  const limitedStatus = c.limitedStatus ?? target.limitedStatus;
  const alsoStatuses = alsoStatusesOf(s, limitedStatus);
  const expected = expectedOf({ ...c, limitedStatus, alsoStatuses }, s);
  return {
    name: `${name}/${c.id}`,
    service: target.service,
    ...caseRequest(target, c.id, index),
    // Each request on a connection of its own, at an origin no VU has a connection open to.
    ...(c.connects ? { origin: target.request.connectOrigin, connects: true } : {}),
    limitedStatus,
    ...(alsoStatuses.length ? { alsoStatuses } : {}),
    requests: requestCount(c),
    // A queue wait shrinks with --quick; the seed's millisecond response times do not.
    seed: seed ? { ...seed, maxS: expected.maxMs ? seed.maxS / factor : seed.maxS } : null,
    expected,
    // The model's own range of the longest queue wait (ms), before any tolerance.
    model: { maxDelayMs: s.maxDelayMs },
    // Split over k6 processes, each gets its share of these (k6 divides them by segment),
    // while the requests a queue holds are not split evenly at every moment: each process
    // gets the whole count (dropped iterations in a spike split in two with the share).
    vus: (Math.ceil(s.inFlight.max * headroom) + 10) * segments,
    timeoutS: Math.ceil((s.maxDelayMs.max * 1.5) / 1000 + 10),
    // How long k6 lets the last queued requests finish: the model's longest wait and a
    // tenth more, so that a scenario's VUs go back to k6 as soon as they can.
    graceS: Math.ceil(((s.maxDelayMs.max + SERVICE_MS) * 1.1) / 100) / 10 + 0.5,
  };
}

/**
 * The warm-up before the cases: {leadIn, warm}. Where a frontend limits the connections it
 * accepts, it opens one for every VU k6 makes (their sum, `warmVus`: no case meets a VU without
 * one), the cases start once they are accepted (later, if need be), and where none is closed
 * while idle, the plan counts them (`countsConnections`): its proxy's count is judged against it.
 */
function warmUp(cases, targets, leadInMs) {
  if (!targets.some((t) => t.sessions)) return { leadIn: leadInMs, warm: {} };
  const warmVus = cases.reduce((a, c) => a + c.vus, 0);
  const leadIn = startLater(cases, leadInMs, warmAccepted(cases, targets, warmVus) - leadInMs);
  return { leadIn, warm: { warmVus, ...(fitSessions(cases, targets) ? { countsConnections: true } : {}) } };
}

/**
 * The plan: the experiment's load steps, per suite, become cases (a target and a step each).
 * `factor` > 1 is --quick: arrival rates and policy rates times factor, durations and
 * refill intervals divided by it, so the expected counts stay those of the seed timing.
 */
function plan({ exp, suite, factor, requested, knobs, policy, leadInMs, seedComparable, segments }) {
  const name = exp.name;
  const targets = exp.targets(policy);
  const cases = scheduledCases(exp, suite, knobs, factor, leadInMs);
  // Split over k6 processes (--segments), a schedule is as exact as their clocks agree.
  const predictions = predict(targets, cases, name, segments);
  for (const target of targets) {
    const own = cases.filter((x) => x.target === target.id);
    own.forEach((c, at) => {
      // A case that follows another on its bucket sends as that case did (its slot: the same
      // client, the same key in every limiter), so it meets every bucket the lead left, as the
      // model runs the two.
      const index = c.follows ? own.findIndex((x) => x.id === c.follows) : at;
      const seed = seedComparable ? exp.seedFigures[c.id] : undefined;
      Object.assign(
        c,
        caseDetails(c, {
          target,
          s: predictions.get(c),
          seed,
          name,
          factor,
          segments,
          index,
          headroom: exp.vuHeadroom ?? SEED_HEADROOM,
        }),
      );
    });
  }
  fitConnections(cases, exp.connections, { predictions, segments });
  const { leadIn, warm } = warmUp(cases, targets, leadInMs);
  return {
    experiment: name,
    suite,
    factor,
    requestedFactor: requested,
    knobs,
    policy,
    segments,
    model: {
      trials: TRIALS,
      jitterMs: JITTER_MS,
      tolerance: TOLERANCE,
      replay: { trials: REPLAY_TRIALS },
      ...(segments > 1 ? { segmentSkewMs: SEGMENT_SKEW_MS } : {}),
    },
    leadInMs: leadIn,
    ...warm,
    durationS: Math.max(...cases.map((c) => (c.startMs + c.durationMs) / 1000 + (c.expected.maxMs?.max ?? 0) / 1000)),
    // A team's policy is known only to the process that read its file: its plan says what each
    // target does, so that the run's pages and verdicts can judge it again without the file.
    ...(exp.policyFile ? { targetPolicies: Object.fromEntries(targets.map((t) => [t.id, t.policy])) } : {}),
    // The names its cases' origins use, each at 127.0.0.1 (k6's hosts option).
    ...(exp.hosts && Object.keys(exp.hosts).length ? { hosts: exp.hosts } : {}),
    cases,
  };
}

/**
 * One open-model scenario per case, tagged with the case, and a warm-up. The executor is
 * ramping-arrival-rate held flat (startRate = target = rate): k6's constant arrival rate
 * without constant-arrival-rate's 1 s minimum and its extra iteration at the end, so the
 * requests are exactly those the model replays (see arrivalTimes).
 */
function scenarios(plan) {
  const out = {};
  for (const c of plan.cases) {
    out[c.id] = {
      executor: 'ramping-arrival-rate',
      startRate: c.rate,
      timeUnit: '1s',
      stages: heldRateStages(c.rate, c.requests),
      startTime: `${Math.round(c.startMs)}ms`,
      preAllocatedVUs: c.vus,
      maxVUs: c.vus,
      gracefulStop: `${Math.round(c.graceS * 1000)}ms`,
      exec: 'hit',
      tags: { case: c.id },
    };
  }
  // Every VU makes one request to each proxy's unlimited /healthz before the first case, so no
  // case meets a VU that still has to compile its code and open its connection: cold VUs at a
  // fast start are slow enough for k6 to drop or abandon iterations.
  out.warmup = {
    executor: 'per-vu-iterations',
    vus: plan.warmVus ?? Math.max(...plan.cases.map((c) => c.vus)),
    iterations: 1,
    maxDuration: `${Math.max(500, plan.leadInMs - 500)}ms`,
    gracefulStop: '0s',
    exec: 'warm',
    tags: { case: 'warmup' },
  };
  return out;
}

export const sentMetric = (c) => `http_reqs{case:${c.id}}`;
export const okMetric = (c) => `http_reqs{case:${c.id},status:200}`;
export const limitedMetric = (c) => `http_reqs{case:${c.id},status:${c.limitedStatus}}`;
/** A status another of the case's limits refuses with (a limit_conn's 503 beside a limit_req's 429). */
export const alsoMetric = (c, status) => `http_reqs{case:${c.id},status:${status}}`;
export const latencyMetric = (c) => `http_req_duration{case:${c.id}}`;
export const lateMetric = (c) => `lab_arrival_late_ms{case:${c.id}}`;

/**
 * The thresholds of one case, keyed by sub-metric; the summary reports them under these names.
 * A count range that admits every value the case could give is shown, not judged: KEEP_ONLY.
 */
export function caseThresholds(c) {
  const e = c.expected;
  const shown = shownRanges(e, possibleCounts(c));
  const range = (key) => (shown[key] ? [KEEP_ONLY] : [`count>=${e[key].lo}`, `count<=${e[key].hi}`]);
  const t = {
    [okMetric(c)]: range('ok'),
    [limitedMetric(c)]: range('limited'),
    // k6 itself must send the schedule (within TOLERANCE.sentRel: see there why not exactly).
    [sentMetric(c)]: range('sent'),
    [`unexpected_status{case:${c.id}}`]: ['count<1'],
    [`dropped_iterations{scenario:${c.id}}`]: ['count<1'],
  };
  for (const [st, r] of Object.entries(e.also ?? {})) t[alsoMetric(c, st)] = [`count>=${r.lo}`, `count<=${r.hi}`];
  // Judged by the lab as max less min (lab/kinds/limiter.mjs), which no k6 threshold can say.
  if (e.lateSpreadMs) t[lateMetric(c)] = [KEEP_TREND];
  t[latencyMetric(c)] = e.maxMs ? [`max>=${e.maxMs.lo}`, `max<=${e.maxMs.hi}`] : [`p(99)<${e.p99Ms.hi}`];
  return t;
}

/** The statuses a case may be answered with, in words: `200 and 429`, `200, 429 and 503`. */
export const statusWords = (c) => {
  const all = [200, c.limitedStatus, ...(c.alsoStatuses ?? [])];
  return `${all.slice(0, -1).join(', ')} and ${all.at(-1)}`;
};

/** Per threshold of caseThresholds, the model figure and the tolerance it came from. */
export function caseNotes(c) {
  const T = TOLERANCE;
  const e = c.expected;
  const shown = shownRanges(e, possibleCounts(c));
  const counts = `+-${T.countRel * 100} % or +-${T.countAbs} (TOLERANCE.countRel, countAbs)`;
  const count = (key, figure, tolerance) =>
    shown[key] ? keepNote(figure, shown[key]) : rangeNote(figure, e[key], tolerance);
  return {
    [okMetric(c)]: count('ok', '200s', counts),
    [limitedMetric(c)]: count('limited', `${c.limitedStatus}s`, `${counts}, less what k6 may leave unsent`),
    [sentMetric(c)]: shown.sent
      ? keepNote('requests sent', shown.sent)
      : `requests sent: the schedule's ${c.requests}, up to ${T.sentRel * 100} % or ${T.countAbs} fewer (TOLERANCE.sentRel: k6 late beside the stack): ${e.sent.lo}..${e.sent.hi}`,
    ...Object.fromEntries(
      Object.entries(e.also ?? {}).map(([st, r]) => [
        alsoMetric(c, st),
        rangeNote(`${st}s (another of its limits)`, r, counts),
      ]),
    ),
    [`unexpected_status{case:${c.id}}`]: `answers the policy does not give: none but ${statusWords(c)}`,
    [`dropped_iterations{scenario:${c.id}}`]:
      'arrivals k6 dropped for want of a free VU: none (the VUs are sized from the model)',
    [lateMetric(c)]: keepNote(
      'how late k6 started each arrival',
      'the lab judges its spread, max less min, which no threshold says',
    ),
    [latencyMetric(c)]: e.maxMs
      ? rangeNote(
          'longest wait (ms)',
          e.maxMs,
          `-${T.latencyRel * 100} % - ${T.latencyBelowMs} ms, +${T.latencyRel * 100} % + ${T.latencyAboveMs} ms (TOLERANCE.latency*)`,
        )
      : `p99 (ms): the model queues nothing (longest wait under TOLERANCE.queuedMs ${T.queuedMs} ms), so under TOLERANCE.p99Ms ${T.p99Ms}`,
  };
}

/**
 * A case's model policy: its target's, under the plan's (model's) knobs, unless the plan names
 * the target's policy itself (`targetPolicies`: a policy no knob can say, as the replay's
 * sensitivity tries).
 */
const policyOf = (exp, plan, c) =>
  casePolicy(plan.targetPolicies?.[c.target] ?? exp.targets(plan.policy).find((t) => t.id === c.target).policy, c);

/**
 * What the model predicts for one case from the sends k6 really made (replaySends), in the
 * plan's terms: the counts as the replay's trials give them, with no tolerance (the only noise
 * left is the band the replay gives the proxy's view of each send), and the longest wait with
 * the plan's latency tolerance (the app and loopback add to it).
 */
export function replayExpected(exp, plan, c, sends, { clockOffsetMs = null, sightings = null, lead = null } = {}) {
  const r = replaySends(policyOf(exp, plan, c), sends, { clockOffsetMs, sightings, lead, seed: exp.name });
  const count = ({ min, max }) => ({ min, max, lo: min, hi: max });
  return {
    ok: count(r.ok),
    limited: count(refusedAs(r, c.limitedStatus)),
    ...alsoExpected(c, r, count),
    ...latencyExpectation(r.maxDelayMs),
    model: { maxDelayMs: r.maxDelayMs },
  };
}

/** The replay over time for one case (replayCourse) from startMs (wall clock), as `course` gives the plan's. */
function replayedCourse(exp, plan, c, sends, startMs, { clockOffsetMs = null, sightings = null, lead = null } = {}) {
  return replayCourse(policyOf(exp, plan, c), sends, startMs, { clockOffsetMs, sightings, lead, seed: exp.name });
}

/** The model over time for one case of a plan: passed and limited so far, per second (simulateCourse). */
function course(exp, plan, c) {
  return simulateCourse(policyOf(exp, plan, c), c, {
    seed: exp.name,
    segments: plan.segments ?? 1,
    lead: leadOf(plan.cases, c),
  });
}

export default {
  name: 'limiter',
  course,
  replayExpected,
  replayedCourse,
  plan,
  scenarios,
  thresholds: caseThresholds,
  notes: caseNotes,
  possible: possibleCounts,
  trendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)'],
  /** [target, case id] of every case of a suite, without planning it (the stack's routes). */
  caseTargets: (exp, suite, knobs) =>
    exp.suites[suite](knobs).flatMap((step) => step.targets.map((t) => [t, `${t}-${step.name}`])),
  sensitivity: (exp, base) => limiterSensitivity(exp, base, predict),
  // Which single knob's value explains a case's measured counts (the results pages' insights).
  explain: (exp, plan, c, measured, replayInput) =>
    limiterExplain(exp, plan, c, measured, replayInput ? replayPredict(replayInput) : predict, Boolean(replayInput)),
  // Split over k6 processes (execution segments), its cases are judged from merged summaries.
  segments: true,
};
