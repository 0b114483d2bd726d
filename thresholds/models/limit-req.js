/*
 * nginx limit_req, one key of one zone, as ngx_http_limit_req_module.c computes it (nginx 1.22),
 * detail for detail: each comment below says a detail the counts hang on.
 */
export function limitReq({ rate, burst = 0, delay = 0 }) {
  const rateMilli = rate * 1000; // ctx->rate for "N r/s"
  const burstMilli = burst * 1000;
  const delayMilli = delay * 1000;
  let seen = false;
  let excess = 0;
  let last = 0;
  return {
    /**
     * Offers one request at nginx clock `nowMs` (an integer); returns {ok, delayMs}. The clock is
     * nginx's cached millisecond clock (ngx_current_msec), so two requests 333.33 ms apart are 333
     * or 334 ms apart depending on where they fall in the millisecond.
     */
    offer(nowMs) {
      let e;
      let ms;
      // The first request for a new key is free: its node starts with excess 0 and last = 0, so
      // the drain wipes the +1000.
      if (!seen) {
        e = 0;
        ms = 1;
      } else {
        // `excess` is kept in milli-requests: each accepted request adds 1000, and the zone
        // drains rate*ms/1000 (integer division) per elapsed millisecond.
        ms = Math.max(0, nowMs - last);
        e = excess - Math.floor((rateMilli * ms) / 1000) + 1000;
        if (e < 0) e = 0;
      }
      // A rejected request changes nothing.
      if (e > burstMilli) return { ok: false, delayMs: 0 };
      seen = true;
      excess = e;
      // `last` only moves when at least 1 ms has passed.
      if (ms) last = nowMs;
      // An accepted request waits (excess - delay) / rate seconds when excess exceeds `delay`.
      const delayMs = e <= delayMilli ? 0 : Math.floor(((e - delayMilli) * 1000) / rateMilli);
      return { ok: true, delayMs };
    },
  };
}

/** The numbers of a limit_req policy, and whether each is whole (the replay's sensitivity moves them). */
limitReq.numbers = { rate: 'real', burst: 'whole', delay: 'whole' };
