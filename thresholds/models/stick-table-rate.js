/*
 * HAProxy's rate limit on a stick table, one key: `stick-table ... expire E store
 * http_req_rate(P)`, `http-request track-sc0 <key>` and `http-request deny if {
 * sc_http_req_rate(0) gt N }` (or ge, lt, le), as HAProxy 2.6 runs them (src/http_act.c
 * http_action_track_sc, src/stick_table.c). Each comment says a detail the counts hang on.
 */
import { freqCtr } from './freq-ctr.js';
import { inProgress } from './in-flight.js';
import { entryStore } from './stick-table-store.js';

const COMPARE = {
  gt: (a, b) => a > b,
  ge: (a, b) => a >= b,
  lt: (a, b) => a < b,
  le: (a, b) => a <= b,
};

// The counters an sc_* fetch reads, by the name the reader gives them.
const GPC = { gpc0: 0, gpc1: 1, gpc0_rate: 0, gpc1_rate: 1 };

/**
 * One entry of a stick table, as one tracker keeps it: `periodMs` its http_req_rate's period,
 * `expireMs` the table's expire (an entry untouched that long is gone, and the next request makes
 * a new one with its counters at zero), `gpc0RateMs`, `gpc1RateMs` and `connRateMs` the periods of
 * gpc0_rate, gpc1_rate and conn_rate where the table stores them, `connCur` whether it stores
 * conn_cur. Tracking a request touches the entry whatever the table stores, and counts it as a
 * stream: conn_cnt, conn_rate and conn_cur (include/haproxy/stream.h stream_start_counters); so
 * does every sc-inc-gpc (src/stick_table.c action_inc_gpc0): a flag in a table of its own lives
 * while the client keeps sending. A stream leaves conn_cur when it ends, touching the entry again
 * where the table stores conn_cur (stream_store_counters); no entry goes while a stream holds it
 * (src/stick_table.c process_table_expire skips a referenced one).
 */
function trackedEntry(
  { periodMs, expireMs = Infinity, gpc0RateMs, gpc1RateMs, connRateMs, connCur = false },
  tiesHeld = false,
) {
  // Made when its table first tracks a key (stick-table-store.js), freed when it expires or is
  // trashed: a key tracked again after that gets a new one, its counters at zero.
  const rate = freqCtr(periodMs ?? 1);
  let count = 0;
  const gpc = [0, 0];
  const gpcRate = [gpc0RateMs, gpc1RateMs].map((p) => (p ? freqCtr(p) : null));
  const connRate = freqCtr(connRateMs ?? 1);
  let touchedMs = null;
  const streams = inProgress(tiesHeld);
  const lastTouchMs = () => (connCur ? Math.max(touchedMs, streams.lastEndedMs()) : touchedMs);
  return {
    // Its `expire` (its last touch and the table's expire), and whether a stream holds it (its
    // ref_cnt: no walk of its table frees it then): stick-table-store.js.
    expiresAt: () => lastTouchMs() + (Number.isFinite(expireMs) ? expireMs : 0),
    held: (nowMs) => streams.count(nowMs) > 0,
    /** When its last stream ended, where none holds it at `nowMs`; null while one does. */
    releasedAt: (nowMs) => (streams.count(nowMs) > 0 ? null : streams.lastEndedMs()),
    /** The tracking of one request at `nowMs`: counted before any later rule reads it. */
    track(nowMs) {
      rate.update(nowMs, 1);
      connRate.update(nowMs, 1);
      count += 1;
      touchedMs = nowMs;
      streams.start();
    },
    /** The stream tracked last ends at `untilMs` (its answer sent). */
    end: (untilMs) => streams.end(untilMs),
    /** `sc-inc-gpc0` (i 0) or `sc-inc-gpc1` (i 1) at `nowMs`: the counter and its rate, and a touch. */
    inc(nowMs, i) {
      gpc[i] += 1;
      gpcRate[i]?.update(nowMs, 1);
      touchedMs = nowMs;
    },
    /**
     * What an sc_* fetch reads at `nowMs`: 'http_req_rate' (the sliding window), 'http_req_cnt'
     * (all since made), 'gpc0' or 'gpc1' (all increments since made), 'gpc0_rate' or 'gpc1_rate'
     * (their sliding window), 'conn_rate', 'conn_cnt' (the streams tracked, as the requests),
     * 'conn_cur' (the streams in progress, the one being offered among them).
     */
    read(nowMs, counter) {
      if (counter === 'http_req_cnt' || counter === 'conn_cnt') return count;
      if (counter === 'http_req_rate') return rate.read(nowMs);
      if (counter === 'conn_rate') return connRate.read(nowMs);
      if (counter === 'conn_cur') return streams.count(nowMs);
      const i = GPC[counter];
      return counter.endsWith('_rate') ? (gpcRate[i]?.read(nowMs) ?? 0) : gpc[i];
    },
  };
}

/**
 * Several trackers on one request (`http-request track-sc0..2`), each with its own entry
 * (`trackers`: [{periodMs, expireMs, gpc0RateMs, gpc1RateMs, connRateMs, connCur}], by sc number), and the rules in
 * the file's order (`rules`: [{track: sc} | {deny: sc, counter, op, limit, tarpitMs} | {inc: sc,
 * gpc, reads?, counter?, op?, limit?}]): a request goes down the rules until a deny's test holds;
 * a tracker after that deny never counts it, one before counts it whatever the rules then decide
 * (so a denied request counts as much as one let through). An inc (`sc-inc-gpc0(sc)`, gpc 0 or 1)
 * adds one to its entry's counter, always or where its test on entry `reads` holds; a deny on
 * that counter then refuses every request until the entry expires: a client flagged once stays
 * refused while it keeps sending. A tarpit (`tarpitMs`) counts as a deny, and its answer comes
 * that much later: HAProxy holds the request until its analyser's timer expires
 * (src/http_ana.c http_process_tarpit), then answers.
 */
export function stickTableChain({ trackers, rules }, { tiesHeld = false } = {}) {
  for (const r of rules)
    if ('op' in r && !COMPARE[r.op]) throw new Error(`stick table rate: no comparison '${r.op}' (gt, ge, lt, le)`);
  const stores = trackers.map((t) => entryStore({ size: t.size, nopurge: t.nopurge, expireMs: t.expireMs }));
  /** One request's rules: `key` its value of the keyed trackers' fetch (one for all where none). */
  const request = (nowMs, key) => {
    // Per tracker, the entry this request tracks: null where the table had no room for it.
    const live = [];
    const keyOf = (i) => (trackers[i].keyed ? (key === undefined ? '' : key) : '');
    const make = (i) => () => trackedEntry(trackers[i], tiesHeld);
    // A rule reading a tracker this request has not tracked yet reads its key's entry, if any.
    const entryOf = (i) => (i in live ? live[i] : keyOf(i) === null ? null : stores[i].peek(keyOf(i), nowMs));
    const read = (i, counter) => entryOf(i)?.read(nowMs, counter) ?? (live[i] === null ? null : 0);
    // An sc_* fetch on a request its table had no room for fails: its test does not hold.
    const holds = (i, r) => {
      const v = read(i, r.counter);
      return v !== null && COMPARE[r.op](v, r.limit);
    };
    return { live, keyOf, make, holds };
  };
  /** The rules down to the first deny whose test holds: {ok, delayMs}, and the entries tracked. */
  const judge = (nowMs, key, tracked) => {
    const { live, keyOf, make, holds } = request(nowMs, key);
    for (const r of rules) {
      if ('track' in r) {
        // A request with no key for a keyed tracker (its header absent) is not tracked.
        const k = keyOf(r.track);
        const entry = k === null ? null : stores[r.track].entry(k, nowMs, make(r.track));
        live[r.track] = entry;
        if (!entry) continue;
        entry.track(nowMs);
        tracked.push(entry);
      } else if ('inc' in r) {
        if (!('op' in r) || holds(r.reads, r)) live[r.inc]?.inc(nowMs, r.gpc);
      } else if (holds(r.deny, r)) return { ok: false, delayMs: r.tarpitMs ?? 0 };
    }
    return { ok: true, delayMs: 0 };
  };
  return {
    /**
     * Offers one request at HAProxy's tick `nowMs` (whole ms) with `key`, its value of the keyed
     * trackers' fetch (a header's, a parameter's; one for all where undefined; null where the
     * request has none, so that they do not track it); `holdMs`: how
     * long the backend takes to answer one let through (its stream ends then), `deniedMs` how
     * long one denied lasts (where the proxy logged it; else until it is answered). Returns
     * {ok, delayMs}.
     */
    offer(nowMs, key, { holdMs = 0, deniedMs } = {}) {
      const tracked = [];
      const r = judge(nowMs, key, tracked);
      for (const e of tracked) e.end(nowMs + (r.ok ? holdMs : (deniedMs ?? r.delayMs)));
      return r;
    },
  };
}

/**
 * One tracker and its deny: `counter` 'http_req_rate' (the sliding window), 'http_req_cnt'
 * (every request since the entry was made) or another a table stores (trackedEntry's read), `op`
 * and `limit` the deny's test, `expireMs` the table's expire, `connRateMs` and `connCur` what
 * else it stores of the streams, `tarpitMs` a tarpit's hold (none: a deny, answered at once),
 * `size` and `nopurge` the table's room (stick-table-store.js), `keyed` whether a request's key
 * (offer's) picks its entry (a header's, a parameter's) or every request shares one (src);
 * `options` as stickTableChain's.
 */
export function stickTableRate(
  {
    periodMs,
    limit,
    op = 'gt',
    expireMs = Infinity,
    counter = 'http_req_rate',
    tarpitMs,
    connRateMs,
    connCur,
    size,
    nopurge,
    keyed,
  },
  options = {},
) {
  if (!COMPARE[op]) throw new Error(`stick table rate: no comparison '${op}' (gt, ge, lt, le)`);
  const stored = { ...(connRateMs ? { connRateMs } : {}), ...(connCur ? { connCur } : {}) };
  const room = { ...(size ? { size } : {}), ...(nopurge ? { nopurge } : {}), ...(keyed ? { keyed } : {}) };
  return stickTableChain(
    {
      trackers: [{ periodMs, expireMs, ...stored, ...room }],
      rules: [{ track: 0 }, { deny: 0, counter, op, limit, ...(tarpitMs ? { tarpitMs } : {}) }],
    },
    options,
  );
}

/** A chain's numbers, per tracker and per deny rule (the replay's sensitivity moves them). */
stickTableChain.numbers = {
  trackers: { periodMs: 'whole', expireMs: 'whole', gpc0RateMs: 'whole', gpc1RateMs: 'whole', connRateMs: 'whole' },
  rules: { limit: 'whole', tarpitMs: 'whole' },
  // The frontend's rate-limit sessions, met before the rules (limiter-replay.js acceptOf).
  sessions: 'whole',
};

/** The numbers of a stick-table rate policy, and whether each is whole (the replay's sensitivity moves them). */
stickTableRate.numbers = {
  limit: 'whole',
  size: 'whole',
  periodMs: 'whole',
  expireMs: 'whole',
  tarpitMs: 'whole',
  connRateMs: 'whole',
  sessions: 'whole',
};
