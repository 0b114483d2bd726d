/*
 * HAProxy's rate limit on a stick table, one key: `stick-table ... expire E store
 * http_req_rate(P)`, `http-request track-sc0 <key>` and `http-request deny if {
 * sc_http_req_rate(0) gt N }` (or ge, lt, le), as HAProxy 2.6 runs them (src/http_act.c
 * http_action_track_sc, src/stick_table.c). Each comment says a detail the counts hang on.
 */
import { freqCtr } from './freq-ctr.js';

const COMPARE = {
  gt: (a, b) => a > b,
  ge: (a, b) => a >= b,
  lt: (a, b) => a < b,
  le: (a, b) => a <= b,
};

/**
 * One entry of a stick table, as one tracker keeps it: `periodMs` its http_req_rate's period,
 * `expireMs` the table's expire (an entry untouched that long is gone, and the next request makes
 * a new one with its counters at zero).
 */
function trackedEntry({ periodMs, expireMs = Infinity }) {
  let rate = null;
  let count = 0;
  let touchedMs = null;
  return {
    /** The tracking of one request at `nowMs`: counted before any later rule reads it. */
    track(nowMs) {
      // The expire task removes an entry once its expiry tick (last touch + expire) is reached.
      if (rate === null || nowMs - touchedMs >= expireMs) {
        rate = freqCtr(periodMs);
        count = 0;
      }
      rate.update(nowMs, 1);
      count += 1;
      touchedMs = nowMs;
    },
    /** What an sc_* fetch reads at `nowMs`: 'http_req_rate' (the sliding window) or 'http_req_cnt' (all since made). */
    read(nowMs, counter) {
      if (rate === null) return 0;
      return counter === 'http_req_cnt' ? count : rate.read(nowMs);
    },
  };
}

/**
 * Several trackers on one request (`http-request track-sc0..2`), each with its own entry
 * (`trackers`: [{periodMs, expireMs}], by sc number), and the rules in the file's order
 * (`rules`: [{track: sc} | {deny: sc, counter, op, limit, tarpitMs}]): a request goes down the
 * rules until a deny's test holds; a tracker after that deny never counts it, one before counts it
 * whatever the rules then decide (so a denied request counts as much as one let through). A
 * tarpit (`tarpitMs`) counts as a deny, and its answer comes that much later: HAProxy holds the
 * request until its analyser's timer expires (src/http_ana.c http_process_tarpit), then answers.
 */
export function stickTableChain({ trackers, rules }) {
  for (const r of rules)
    if ('deny' in r && !COMPARE[r.op]) throw new Error(`stick table rate: no comparison '${r.op}' (gt, ge, lt, le)`);
  const entries = trackers.map(trackedEntry);
  return {
    /** Offers one request at HAProxy's tick `nowMs` (whole ms); returns {ok, delayMs}. */
    offer(nowMs) {
      for (const r of rules) {
        if ('track' in r) entries[r.track].track(nowMs);
        else if (COMPARE[r.op](entries[r.deny].read(nowMs, r.counter), r.limit))
          return { ok: false, delayMs: r.tarpitMs ?? 0 };
      }
      return { ok: true, delayMs: 0 };
    },
  };
}

/**
 * One tracker and its deny: `counter` 'http_req_rate' (the sliding window) or 'http_req_cnt'
 * (every request since the entry was made), `op` and `limit` the deny's test, `expireMs` the
 * table's expire, `tarpitMs` a tarpit's hold (none: a deny, answered at once).
 */
export function stickTableRate({
  periodMs,
  limit,
  op = 'gt',
  expireMs = Infinity,
  counter = 'http_req_rate',
  tarpitMs,
}) {
  if (!COMPARE[op]) throw new Error(`stick table rate: no comparison '${op}' (gt, ge, lt, le)`);
  return stickTableChain({
    trackers: [{ periodMs, expireMs }],
    rules: [{ track: 0 }, { deny: 0, counter, op, limit, ...(tarpitMs ? { tarpitMs } : {}) }],
  });
}

/** A chain's numbers, per tracker and per deny rule (the replay's sensitivity moves them). */
stickTableChain.numbers = {
  trackers: { periodMs: 'whole', expireMs: 'whole' },
  rules: { limit: 'whole', tarpitMs: 'whole' },
};

/** The numbers of a stick-table rate policy, and whether each is whole (the replay's sensitivity moves them). */
stickTableRate.numbers = { limit: 'whole', periodMs: 'whole', expireMs: 'whole', tarpitMs: 'whole' };
