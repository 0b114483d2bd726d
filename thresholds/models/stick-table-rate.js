/*
 * HAProxy's rate limit on a stick table, one key: `stick-table ... expire E store
 * http_req_rate(P)`, `http-request track-sc0 <key>` and `http-request deny if {
 * sc_http_req_rate(0) gt N }` (or ge, lt, le), as HAProxy 2.6 runs them (src/http_act.c
 * http_action_track_sc, src/stick_table.c). Each comment says a detail the counts hang on.
 */
import { freqCtr } from './freq-ctr.js';
import { inProgress } from './in-flight.js';

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
  let made = false;
  let rate = null;
  let count = 0;
  let gpc = [0, 0];
  let gpcRate = [];
  let connRate = null;
  let touchedMs = null;
  let streams = inProgress(tiesHeld);
  const lastTouchMs = () => (connCur ? Math.max(touchedMs, streams.lastEndedMs()) : touchedMs);
  return {
    /** The tracking of one request at `nowMs`: counted before any later rule reads it. */
    track(nowMs) {
      // The expire task removes an entry once its expiry tick (last touch + expire) is reached.
      if (!made || (!streams.count(nowMs) && nowMs - lastTouchMs() >= expireMs)) {
        made = true;
        rate = freqCtr(periodMs ?? 1);
        count = 0;
        gpc = [0, 0];
        gpcRate = [gpc0RateMs, gpc1RateMs].map((p) => (p ? freqCtr(p) : null));
        connRate = freqCtr(connRateMs ?? 1);
        streams = inProgress(tiesHeld);
      }
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
      if (!made) return 0;
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
  const entries = trackers.map((t) => trackedEntry(t, tiesHeld));
  const holds = (nowMs, entry, r) => COMPARE[r.op](entries[entry].read(nowMs, r.counter), r.limit);
  /** The rules down to the first deny whose test holds: {ok, delayMs}, and the entries tracked. */
  const judge = (nowMs, tracked) => {
    for (const r of rules) {
      if ('track' in r) {
        entries[r.track].track(nowMs);
        tracked.push(entries[r.track]);
      } else if ('inc' in r) {
        if (!('op' in r) || holds(nowMs, r.reads, r)) entries[r.inc].inc(nowMs, r.gpc);
      } else if (holds(nowMs, r.deny, r)) return { ok: false, delayMs: r.tarpitMs ?? 0 };
    }
    return { ok: true, delayMs: 0 };
  };
  return {
    /**
     * Offers one request at HAProxy's tick `nowMs` (whole ms); `holdMs`: how long the backend
     * takes to answer one let through (its stream ends then), `deniedMs` how long one denied
     * lasts (where the proxy logged it; else until it is answered). Returns {ok, delayMs}.
     */
    offer(nowMs, _keys, { holdMs = 0, deniedMs } = {}) {
      const tracked = [];
      const r = judge(nowMs, tracked);
      for (const e of tracked) e.end(nowMs + (r.ok ? holdMs : (deniedMs ?? r.delayMs)));
      return r;
    },
  };
}

/**
 * One tracker and its deny: `counter` 'http_req_rate' (the sliding window), 'http_req_cnt'
 * (every request since the entry was made) or another a table stores (trackedEntry's read), `op`
 * and `limit` the deny's test, `expireMs` the table's expire, `connRateMs` and `connCur` what
 * else it stores of the streams, `tarpitMs` a tarpit's hold (none: a deny, answered at once);
 * `options` as stickTableChain's.
 */
export function stickTableRate(
  { periodMs, limit, op = 'gt', expireMs = Infinity, counter = 'http_req_rate', tarpitMs, connRateMs, connCur },
  options = {},
) {
  if (!COMPARE[op]) throw new Error(`stick table rate: no comparison '${op}' (gt, ge, lt, le)`);
  const stored = { ...(connRateMs ? { connRateMs } : {}), ...(connCur ? { connCur } : {}) };
  return stickTableChain(
    {
      trackers: [{ periodMs, expireMs, ...stored }],
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
  periodMs: 'whole',
  expireMs: 'whole',
  tarpitMs: 'whole',
  connRateMs: 'whole',
  sessions: 'whole',
};
