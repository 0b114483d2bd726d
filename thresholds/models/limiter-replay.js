/*
 * Runs a limiter over the exact arrival schedule k6 will produce, many times with timing noise,
 * and reports per case the range of outcomes the noise allows.
 */
import { limitReq } from './limit-req.js';
import { tokenBucket } from './token-bucket.js';
import { limitReqChain } from './limit-req-chain.js';
import { localRateLimit } from './local-rate-limit.js';
import { stickTableChain, stickTableRate } from './stick-table-rate.js';
import { traefikChain } from './traefik-chain.js';
import { rateReservation } from './rate-reservation.js';
import { acceptRate } from './accept-rate.js';
import { keyAt } from '../key-runs.js';
import { seededRandom, RANGE_TRIALS } from './random.js';
import { SEEN_LAG_MS, LEAST_LAG_MS, drawLag } from './seen-lag.js';

// How much later than its schedule k6 may start a request than another of the same case (ms):
// the largest measured per case in the recorded spike runs on this machine kind (docs/model.md),
// with room, and judged in every run (thresholds/kinds/limiter.js lateSpreadMs).
export const JITTER_MS = 100;
// Several k6 processes (execution segments) each start their scenarios on their own clock. The
// lab starts them paused and resumes them together (lab/run/starter.mjs), measures how far apart
// their schedules began, and fails a run whose skew exceeds this allowance: the largest skew
// measured on this machine kind (docs/beyond-one-machine.md) with a margin.
export const SEGMENT_SKEW_MS = 100;
export const TRIALS = 48;
// Time a request holds a VU beyond its queue delay (proxy, app, loopback, a cold first
// connection, and k6 itself reading the answer on a busy machine), for VU sizing and grace
// only: with too few VUs an open model drops arrivals (docs/model.md#vus).
export const SERVICE_MS = 150;
// How much longer than the hold it asks for (x-lab-hold-ms) a request keeps a limit_conn slot:
// proxying to the backend and back, the backend's timer, nginx's log before the slot is freed.
// Drawn per request in [0, HOLD_OVERHEAD_MS]; the runs' own request times are what it must cover.
export const HOLD_OVERHEAD_MS = 25;

/**
 * The status a refusal is answered with where the policy's limits answer with different ones
 * (`statuses`: {req, conn}, nginx's limit_req_status and limit_conn_status); null where it says
 * none (every refusal is the case's limited status).
 */
const refusalStatus = (policy, r) => policy.statuses?.[r.by === 'conn' ? 'conn' : 'req'] ?? null;

/**
 * The refusals of `status` in an outcome `o` (simulate's, replaySends'): all of them where the
 * policy answers with one status.
 */
export const refusedAs = (o, status) => o[`refused ${status}`] ?? o.limited;

/** A count per status the policy refuses with, from none: `refused <status>`. */
const statusCounts = (policy) =>
  Object.fromEntries([...new Set(Object.values(policy.statuses ?? {}))].map((s) => [`refused ${s}`, 0]));

/** Counts a refusal `r` into `o` by the status it is answered with, where the policy says. */
function countRefusal(policy, r, o) {
  const status = refusalStatus(policy, r);
  if (status !== null) o[`refused ${status}`] += 1;
}

/**
 * What a request holds of a limit_conn slot, one draw: the policy's hold and a drawn overhead.
 * Where the limiter counts every request in progress (`everyHeld`, a share of the overhead in
 * [0, 1]), an unheld request holds its slot for its own time through the proxy: at most that
 * share of the overhead, as trials go from none to all of it (a request's time is the machine's,
 * which the model does not know).
 */
const holdOf = (policy, rand, everyHeld = null) => {
  if (policy.holdMs) return { holdMs: policy.holdMs + rand() * HOLD_OVERHEAD_MS };
  return everyHeld === null ? undefined : { holdMs: rand() * everyHeld * HOLD_OVERHEAD_MS };
};

// Each policy kind's model, made per trial (`rand`: the trial's draws, for a model that draws;
// `wall`: the times offered are wall-clock ms, as a run's replay offers),
// and the proxy whose recorded lags (SEEN_LAG_MS, by its seed's model) its requests draw.
const limiters = {
  limit_req: (p) => ({ limiter: limitReq(p), msClock: true }),
  token_bucket: (p) => ({ limiter: tokenBucket(p), msClock: false }),
  // (`tiesHeld`: a request ending in the millisecond another is judged still holds its limit_conn slot.)
  limit_req_chain: (p, rand, { tiesHeld } = {}) => ({
    limiter: limitReqChain(p.limits, { dryRun: p.dryRun, conns: p.conns ?? [], connDryRun: p.connDryRun, tiesHeld }),
    msClock: true,
  }),
  local_rate_limit: (p, rand) => ({ limiter: localRateLimit(p, rand), msClock: false }),
  // HAProxy's rules run on its millisecond tick (global_now_ms); a test on conn_cur counts every
  // request while in progress, held or not (`tiesHeld`: a stream ending in a request's millisecond
  // still counts for it).
  stick_table_rate: (p, rand, { tiesHeld } = {}) => ({
    limiter: stickTableRate(p, { tiesHeld }),
    msClock: true,
    everyHeld: p.counter === 'conn_cur',
  }),
  // Several trackers on one request, on the same tick.
  stick_table_chain: (p, rand, { tiesHeld } = {}) => ({
    limiter: stickTableChain(p, { tiesHeld }),
    msClock: true,
    everyHeld: p.rules.some((r) => r.counter === 'conn_cur'),
  }),
  // Traefik reads Go's nanosecond clock; its ttl counts whole Unix seconds, at a phase a plan
  // cannot know (drawn per trial; a run's replay is on the wall clock already).
  rate_reservation: (p, rand, { wall = false } = {}) => ({
    limiter: rateReservation({ ...p, epochPhaseMs: wall ? 0 : rand() * 1000 }),
    msClock: false,
  }),
  // A rateLimit and an inFlightReq in the router's order, on the same clock; its inFlightReq
  // counts every request while in progress, held or not.
  traefik_chain: (p, rand, { wall = false } = {}) => ({
    limiter: traefikChain({ ...p, epochPhaseMs: wall ? 0 : rand() * 1000 }),
    msClock: false,
    everyHeld: true,
  }),
};
const LAGS_OF = {
  limit_req: 'limit_req',
  limit_req_chain: 'limit_req',
  token_bucket: 'token_bucket',
  local_rate_limit: 'token_bucket',
  // No HAProxy lags are recorded yet: nginx's, another event loop on a millisecond clock, stand in
  // for a plan's ranges before the run; a run's replay takes HAProxy's own sightings instead.
  stick_table_rate: 'limit_req',
  stick_table_chain: 'limit_req',
  // Nor Traefik's: Envoy's, another proxy logging at 1 µs, stand in for a plan's ranges.
  rate_reservation: 'token_bucket',
  traefik_chain: 'token_bucket',
};

/** Per policy kind, its numbers: whether each is whole, and for a list, its elements' numbers. */
const POLICY_NUMBERS = {
  limit_req: limitReq.numbers,
  limit_req_chain: limitReqChain.numbers,
  token_bucket: tokenBucket.numbers,
  stick_table_rate: stickTableRate.numbers,
  stick_table_chain: stickTableChain.numbers,
  rate_reservation: rateReservation.numbers,
  traefik_chain: traefikChain.numbers,
};

/**
 * A policy's numbers as the replay's sensitivity moves them, [{path, value, whole}]: each number
 * its kind names that the policy holds, a list's per element (path: its keys and indices).
 */
export function policyNumbers(policy) {
  const out = [];
  const walk = (shape, holder, path) => {
    for (const [key, sort] of Object.entries(shape)) {
      if (typeof sort !== 'string') (holder[key] ?? []).forEach((e, i) => walk(sort, e, [...path, key, i]));
      else if (typeof holder[key] === 'number')
        out.push({ path: [...path, key], value: holder[key], whole: sort === 'whole' });
    }
  };
  walk(POLICY_NUMBERS[policy.kind] ?? {}, policy, []);
  return out;
}

/** `policy` with the number at `path` (policyNumbers) set to `value`. */
export function withNumber(policy, path, value) {
  const copy = structuredClone(policy);
  path.slice(0, -1).reduce((o, k) => o[k], copy)[path.at(-1)] = value;
  return copy;
}

/**
 * The open-model schedule k6 runs for a case: n = rate x duration requests, the i-th at
 * startTime + (i+1)/rate. (k6's ramping-arrival-rate held flat at `rate` for (n + 1/2)/rate
 * seconds fires exactly these; constant-arrival-rate fires n + 1 and refuses runs under 1 s,
 * which --quick needs.)
 */
export function arrivalTimes({ startMs, rate, durationMs }) {
  const n = requestCount({ rate, durationMs });
  return Array.from({ length: n }, (_, i) => startMs + ((i + 1) * 1000) / rate);
}

export const requestCount = ({ rate, durationMs }) => Math.round((rate * durationMs) / 1000);

/**
 * The listener's accept limit a case's requests meet, one per trial, where each of them opens a
 * connection (`connects`: a case sending \`Connection: close\`) on a frontend that limits the
 * sessions it accepts per second (`sessions`: HAProxy's rate-limit sessions): accept(tickMs) is
 * how long the request waits to be accepted, ms. Null where its requests keep their connections.
 */
const acceptOf = (policy) => {
  if (!policy.connects || !policy.sessions) return null;
  const queue = acceptRate(policy.sessions);
  return { wait: (tickMs) => queue.accept(tickMs) - tickMs };
};

/**
 * The key a case's i-th request sends, where the case sends several in turn (`keyRuns`: {runs}
 * as key-runs.js reads them): 'own' for the case's own, null where it sends none, else the fresh
 * key; undefined where the case sends one.
 */
function requestKey(policy, i) {
  if (!policy.keyRuns) return undefined;
  const key = keyAt(policy.keyRuns.runs, i);
  return key === null ? 'own' : key || null;
}

/**
 * One trial: every case of one limiter key, interleaved in time as they will really run. With
 * `offsets` (one per k6 process, ms), the i-th request of a case is sent by process i mod N, as
 * equal execution segments stripe a schedule, on that process's clock.
 */
function trial(policy, cases, rand, { jitterMs, share }, offsets = [0], answers = null) {
  const make = limiters[policy.kind];
  if (!make) throw new Error(`no model for policy kind '${policy.kind}'`);
  const { limiter, msClock, everyHeld } = make(policy, rand);
  const accept = acceptOf(policy);
  const phase = rand();
  const events = [];
  cases.forEach((c, ci) => {
    arrivalTimes(c).forEach((t, i) => events.push({ t: t + offsets[i % offsets.length] + rand() * jitterMs, ci, i }));
  });
  events.sort((a, b) => a.t - b.t);
  const out = cases.map(() => ({ ok: 0, limited: 0, ...statusCounts(policy), maxDelayMs: 0, spans: [] }));
  for (const { t, ci, i } of events) {
    const hold = holdOf(policy, rand, everyHeld ? share : null);
    // A connection over the accept limit waits before any rule sees its request.
    const waitMs = accept ? accept.wait(Math.floor(t + phase)) : 0;
    const key = ci === cases.length - 1 ? requestKey(policy, i) : undefined;
    const seen = limiter.offer(msClock ? Math.floor(t + phase) + waitMs : t + waitMs, key, hold);
    const r = { ...seen, delayMs: seen.delayMs + waitMs };
    const o = out[ci];
    // A held answer (limit_conn's cases) takes its hold after its wait.
    const heldMs = r.ok ? (policy.holdMs ?? 0) : 0;
    if (r.ok) o.ok += 1;
    else {
      o.limited += 1;
      countRefusal(policy, r, o);
    }
    // The longest answer, limited ones too: a refusal may come after a wait (a tarpit's hold).
    if (r.delayMs + heldMs > o.maxDelayMs) o.maxDelayMs = r.delayMs + heldMs;
    o.spans.push([t, t + r.delayMs + heldMs + SERVICE_MS]);
    // When each answer reaches k6: after its wait (none for most refusals).
    answers?.[ci].push([t + r.delayMs, r.ok]);
  }
  return out.map(({ spans, ...o }) => ({ ...o, inFlight: maxOverlap(spans) }));
}

function maxOverlap(spans) {
  const ends = spans.map((s) => s[1]).sort((a, b) => a - b);
  let j = 0;
  let best = 0;
  spans.forEach(([start], i) => {
    while (ends[j] <= start) j += 1;
    best = Math.max(best, i + 1 - j);
  });
  return best;
}

/**
 * Simulates one limiter over its cases; returns per case {ok, limited, maxDelayMs} (and
 * `refused <status>`, where the policy answers its limits with different statuses) as {min, max}
 * over the trials, and the most requests ever in flight (for VU sizing).
 *
 * Why trials: where a request's fate hangs on a millisecond (seed 003 at 3 r/s: the next
 * request comes 333.33 ms later and nginx needs 334 ms of drain), one exact replay would predict
 * a single number that a real run cannot hit. The noise assumed is what k6 and loopback add on
 * this kind of machine: each request lands up to `spread` ms later than scheduled, and the sub-ms
 * phase of nginx's clock is unknown. How late varies from run to run, so the trials sweep the
 * spread from 0 (vegeta-like precision: seed 003's 3 r/s run got exactly the zero-jitter 119-120
 * OK) up to JITTER_MS. Cases that do not hang on timing come out as one value.
 */
export function simulate(
  policy,
  cases,
  { trials = TRIALS, jitterMs = JITTER_MS, seed = 'lab', segments = 1, skewMs = SEGMENT_SKEW_MS, onTrial = null } = {},
) {
  const rand = seededRandom(`${seed}:${JSON.stringify(policy)}`);
  const acc = cases.map(() => ({}));
  for (let k = 0; k < trials; k += 1) {
    // Process 0's clock is the reference; the others start up to skewMs before or after it: the
    // first two trials at the extremes, the third all together (a schedule whose segments line
    // up is one process's, which random offsets almost never hit: at 15 r/s with burst 0 it
    // passes ~30 more than most offsets do), the rest anywhere between.
    const offsets = Array.from({ length: segments }, (_, i) => {
      if (i === 0 || k === 2) return 0;
      if (k < 2) return k === 0 ? -skewMs : skewMs;
      return (rand() * 2 - 1) * skewMs;
    });
    const answers = onTrial ? cases.map(() => []) : null;
    // Trials go from none of the jitter (and of a request's own time) to all of it.
    const share = k / Math.max(1, trials - 1);
    const outcome = trial(policy, cases, rand, { jitterMs: jitterMs * share, share }, offsets, answers);
    onTrial?.(answers);
    outcome.forEach((o, ci) => {
      for (const [key, v] of Object.entries(o)) {
        const a = (acc[ci][key] ||= { min: Infinity, max: -Infinity });
        a.min = Math.min(a.min, v);
        a.max = Math.max(a.max, v);
      }
    });
  }
  return acc;
}

/**
 * The same trials as `simulate`, seen over time: for one case, how many answers k6 has counted
 * as passed and as limited by each step from the case's start, as {min, max} over the trials.
 * {tMs: [...], ok: {min: [...], max: [...]}, limited: {min, max}}; its last step is the plan's range.
 * `lead`: the case it follows on its bucket, as a list (predict's), whose answers are not counted.
 */
export function simulateCourse(policy, c, { stepMs = 1000, lead = [], ...options } = {}) {
  const perTrial = [];
  simulate(policy, [...lead, c], { ...options, onTrial: (answers) => perTrial.push(answers.at(-1)) });
  return courseOf(perTrial, c.startMs, stepMs);
}

/**
 * Trials' answers ([[tMs, ok]] each) as counts of passed and limited by each step from startMs, {min,
 * max} over the trials.
 */
function courseOf(perTrial, startMs, stepMs) {
  const lastMs = Math.max(...perTrial.flat().map(([t]) => t)) - startMs;
  const tMs = Array.from({ length: Math.floor(lastMs / stepMs) + 2 }, (_, i) => i * stepMs);
  const band = () => ({ min: tMs.map(() => Infinity), max: tMs.map(() => -Infinity) });
  const out = { tMs, ok: band(), limited: band() };
  for (const answers of perTrial) {
    const sorted = answers.map(([t, ok]) => [t - startMs, ok]).sort((a, b) => a[0] - b[0]);
    let i = 0;
    const n = { ok: 0, limited: 0 };
    tMs.forEach((t, j) => {
      for (; i < sorted.length && sorted[i][0] <= t; i += 1) n[sorted[i][1] ? 'ok' : 'limited'] += 1;
      for (const key of ['ok', 'limited']) {
        out[key].min[j] = Math.min(out[key].min[j], n[key]);
        out[key].max[j] = Math.max(out[key].max[j], n[key]);
      }
    });
  }
  return out;
}

// Trials of a replay: each draws every request's lag from SEEN_LAG_MS.
export const REPLAY_TRIALS = RANGE_TRIALS;

/**
 * When the limiter saw each send, one draw: from the proxy's own sightings where the run has
 * them (`sightings`: {ms, resolutionMs, clock, limiterClock}, the i-th sighting for the i-th send:
 * the limiter's own clock itself where `limiterClock` (nginx's ngx_current_msec, HAProxy's date in
 * the tick its rules ran in); Envoy's µs stream start and a wait drawn after it; another
 * wall-clock millisecond reading is a draw within its millisecond, no earlier than the send plus
 * the least lag measured), else a lag drawn from `lags` per send.
 */
function seenDraw(sends, sightings, lags, rand) {
  if (!sightings) return () => sends.map((t) => t + drawLag(lags, rand));
  return () =>
    sends.map((t, i) => {
      const at = sightings.ms[i];
      if (sightings.limiterClock) return at;
      // Envoy logs when its stream began; its bucket reads its own clock when the filter runs,
      // after whatever kept the worker from it: a wait drawn as the event loop's (the lag less
      // the least of it).
      if (sightings.resolutionMs < 1) return at + Math.max(0, drawLag(lags, rand) - LEAST_LAG_MS);
      const lo = Math.max(at, Math.min(t + LEAST_LAG_MS, at + 1));
      return lo + rand() * (at + 1 - lo);
    });
}

/**
 * A request's hold where the proxy logged how long it lasted from its sighting (`ms`, the rest of
 * it from when the limiter saw it) and whether it was let through: that is its hold for the answer
 * it got, any wait of the limiter's in it (`sinceSeen`); for the other, what the model would draw
 * (`drawn()`: the backend's hold for one it let through) or nothing (one it answers at once).
 */
const loggedHold = (ms, passed, drawn) =>
  passed ? { holdMs: ms, sinceSeen: true } : { holdMs: drawn()?.holdMs ?? 0, deniedMs: ms };

/**
 * A case's sends after those of the case it follows on its bucket (`lead`: {times, sightings}),
 * and the sightings of both where the run has them for both: {sends, sightings, own(i)}, `own`
 * true for the case's own i-th send of the joined list.
 */
function afterLead(sends, sightings, lead) {
  const mine = [...sends].sort((a, b) => a - b);
  if (!lead) return { sends: mine, sightings, own: () => true };
  const first = [...lead.times].sort((a, b) => a - b);
  const both = sightings && lead.sightings;
  return {
    sends: [...first, ...mine],
    sightings: both && {
      ...sightings,
      ms: [...lead.sightings.ms, ...sightings.ms],
      limiterClock: Boolean(sightings.limiterClock && lead.sightings.limiterClock),
      ...(sightings.heldMs && lead.sightings.heldMs
        ? {
            heldMs: [...lead.sightings.heldMs, ...sightings.heldMs],
            passed: [...lead.sightings.passed, ...sightings.passed],
          }
        : { heldMs: null }),
    },
    own: (i) => i >= first.length,
  };
}

/**
 * The trials of one limiter over the sends k6 really made to it: `sends` are wall-clock ms
 * (k6's sample times). Each trial draws when the limiter saw each (seenDraw); nginx's clock is
 * its monotonic millisecond clock, floor(wall + clockOffsetMs), where clockOffsetMs is the run's
 * measured CLOCK_MONOTONIC - CLOCK_REALTIME (only its fraction of a ms matters), or an unknown
 * phase drawn per trial when the run did not measure it. `lead` ({times, sightings}): the sends
 * of the case this one follows on its bucket, offered first and not answered for. Calls
 * onTrial(answers) with {sent, ok, delayMs} per request of the case's own.
 */
function replayTrials(
  policy,
  caseSends,
  {
    lead = null,
    sightings: caseSightings = null,
    lags = SEEN_LAG_MS[LAGS_OF[policy.kind]],
    clockOffsetMs = null,
    trials = REPLAY_TRIALS,
    seed = 'replay',
  },
  onTrial,
) {
  const make = limiters[policy.kind];
  if (!make) throw new Error(`no model for policy kind '${policy.kind}'`);
  const { sends: sorted, sightings, own } = afterLead(caseSends, caseSightings, lead);
  // The case's own sends come after its lead's: its i-th is the (i - firstOwn)-th of its own.
  const firstOwn = sorted.length - caseSends.length;
  const rand = seededRandom(`${seed}:${JSON.stringify(policy)}:${caseSends.length}`);
  const phase = clockOffsetMs === null ? null : clockOffsetMs - Math.floor(clockOffsetMs);
  const draw = seenDraw(sorted, sightings, lags, rand);
  // How long each request held the limiter, where the proxy logged it: nothing of it to draw.
  const logged = sightings?.heldMs ?? null;
  // (Asked of a limiter made with no draws of its own: the trials' draws stay as they were.)
  const { everyHeld } = make(policy, () => 0, { wall: true });
  // The limiter's own clock leaves nothing to draw (but a held answer's overhead, unless logged):
  // one trial is all; where the lengths are logged, two, as a request that ended in the
  // millisecond another's rules ran is let go before them and after (their order within a
  // millisecond is the event loop's). Held longer, fewer get through: the two bound it (and are
  // one where no limit counts the requests in progress).
  const exact = sightings?.limiterClock && (logged || (!policy.holdMs && !everyHeld));
  const runs = exact ? (logged ? 2 : 1) : trials;
  // How long each send waits to be accepted, where it opens a connection to a frontend that
  // accepts few a second: from the sends k6 made, in their order, on the wall clock's ms.
  const accept = acceptOf(policy);
  const waits = accept && sorted.map((t) => accept.wait(Math.floor(t)));
  for (let k = 0; k < runs; k += 1) {
    const { limiter, msClock } = make(policy, rand, { wall: true, tiesHeld: exact && k === 1 });
    // The limiter's own clock readings are its time as they are.
    const at = sightings?.limiterClock ? 0 : (phase ?? rand());
    const seen = draw()
      .map((t, i) => [t, sorted[i], own(i), i])
      .sort((a, b) => a[0] - b[0]);
    const answers = seen.map(([t, sent, mine, i]) => {
      const hold = logged
        ? loggedHold(Math.max(0, sightings.ms[i] + logged[i] - t), sightings.passed[i], () =>
            holdOf(policy, rand, everyHeld ? 0.5 : null),
          )
        : holdOf(policy, rand, everyHeld ? k / Math.max(1, trials - 1) : null);
      const waitMs = waits?.[i] ?? 0;
      // The limiter's own sightings come after the wait; a drawn one meets it here.
      const after = sightings?.limiterClock ? 0 : waitMs;
      const key = mine ? requestKey(policy, i - firstOwn) : undefined;
      const r = limiter.offer(msClock ? Math.floor(t + at) + after : t + after, key, hold);
      return { sent, mine, ok: r.ok, by: r.by, delayMs: waitMs + r.delayMs + (r.ok ? (policy.holdMs ?? 0) : 0) };
    });
    onTrial(answers.filter((a) => a.mine));
  }
}

/**
 * What a limiter does with the sends k6 really made to it (one case, one fresh limiter):
 * {ok, limited, maxDelayMs} (and `refused <status>`, as simulate gives) each as {min, max} over
 * the replay's trials.
 */
export function replaySends(policy, sends, options = {}) {
  const acc = {};
  replayTrials(policy, sends, options, (answers) => {
    const o = { ok: 0, limited: 0, ...statusCounts(policy), maxDelayMs: 0 };
    for (const a of answers) {
      if (a.ok) o.ok += 1;
      else {
        o.limited += 1;
        countRefusal(policy, a, o);
      }
      if (a.delayMs > o.maxDelayMs) o.maxDelayMs = a.delayMs;
    }
    for (const [key, v] of Object.entries(o)) {
      const r = (acc[key] ||= { min: Infinity, max: -Infinity });
      r.min = Math.min(r.min, v);
      r.max = Math.max(r.max, v);
    }
  });
  return acc;
}

/**
 * The same replay over time, as simulateCourse gives the plan's: answers counted by each step
 * from `startMs`, as {min, max} over the trials.
 */
export function replayCourse(policy, sends, startMs, { stepMs = 1000, ...options } = {}) {
  const perTrial = [];
  replayTrials(policy, sends, options, (answers) => perTrial.push(answers.map((a) => [a.sent + a.delayMs, a.ok])));
  return courseOf(perTrial, startMs, stepMs);
}
