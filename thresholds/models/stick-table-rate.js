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
 * `counter`: 'http_req_rate' (the sliding window) or 'http_req_cnt' (every request since the
 * entry was made). `expireMs`: the table's expire (an entry untouched that long is gone, and the
 * next request makes a new one with its counters at zero).
 */
export function stickTableRate({ periodMs, limit, op = 'gt', expireMs = Infinity, counter = 'http_req_rate' }) {
  if (!COMPARE[op]) throw new Error(`stick table rate: no comparison '${op}' (gt, ge, lt, le)`);
  let rate = null;
  let count = 0;
  let touchedMs = null;
  return {
    /** Offers one request at HAProxy's tick `nowMs` (whole ms); returns {ok, delayMs}. */
    offer(nowMs) {
      // The expire task removes an entry once its expiry tick (last touch + expire) is reached.
      if (rate === null || nowMs - touchedMs >= expireMs) {
        rate = freqCtr(periodMs);
        count = 0;
      }
      // Tracking counts the request before any rule reads it, and whatever the rules then
      // decide: a denied request counts as much as one let through.
      rate.update(nowMs, 1);
      count += 1;
      touchedMs = nowMs;
      const value = counter === 'http_req_cnt' ? count : rate.read(nowMs);
      return { ok: !COMPARE[op](value, limit), delayMs: 0 };
    },
  };
}

/** The numbers of a stick-table rate policy, and whether each is whole (the replay's sensitivity moves them). */
stickTableRate.numbers = { limit: 'whole', periodMs: 'whole', expireMs: 'whole' };
