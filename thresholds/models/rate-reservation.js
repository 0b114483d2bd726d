/*
 * Traefik's `rateLimit` middleware for one source, as Traefik 3.7 runs it in memory
 * (pkg/middlewares/ratelimiter/rate_limiter.go, in_memory_limiter.go, ttlmap/ttlmap.go) on
 * golang.org/x/time/rate's Limiter (rate.go reserveN, advance, CancelAt). Each comment says a
 * detail the counts hang on.
 */

/**
 * What Traefik derives from a middleware's numbers: `average` requests per `periodS` (0: no
 * limit), `burst` (at least 1). Returns {rate: per s, burst, maxDelayMs, ttlS}.
 */
export function traefikLimits({ average, periodS = 1, burst = 1 }) {
  const rate = average > 0 ? average / periodS : Infinity;
  // maxDelay is 1 s / (2 x the rate truncated to a whole number), or 500 ms under 1 r/s.
  let maxDelayMs = 0;
  if (average > 0) maxDelayMs = rate < 1 ? 500 : 1000 / (2 * Math.trunc(rate));
  // A bucket idle this many whole seconds is dropped: 2 at 1 r/s or more, 1 + int(1/rate) under.
  let ttlS = 1;
  if (rate >= 1) ttlS = 2;
  else if (rate > 0) ttlS = 1 + Math.trunc(1 / rate);
  return { rate, burst: Math.max(1, burst), maxDelayMs, ttlS };
}

/**
 * One source's bucket for a middleware's `average`, `periodS` and `burst` (traefikLimits: its
 * rate, a reservation delayed up to maxDelay, the bucket dropped after ttl idle on whole Unix
 * seconds). `epochPhaseMs` puts the model's clock on the Unix second grid (a run's replay gives
 * wall-clock ms and 0 here).
 */
export function rateReservation({ average, periodS, burst, epochPhaseMs = 0 }) {
  const { rate, maxDelayMs, ttlS } = traefikLimits({ average, periodS, burst });
  burst = Math.max(1, burst);
  let bucket = null;
  return {
    /** Offers one request at `nowMs` (ms, fractional); returns {ok, delayMs}. */
    offer(nowMs) {
      if (rate === Infinity) return { ok: true, delayMs: 0 };
      const nowS = Math.floor((nowMs + epochPhaseMs) / 1000);
      // The ttl map drops an entry whose expiry second has come (checked when the source is next
      // seen): the new bucket is full, however little the old one held.
      if (bucket && bucket.expiryS <= nowS) bucket = null;
      bucket ??= { tokens: burst, lastMs: nowMs };
      // Every request refreshes the expiry, a refused one too: now's whole second plus the ttl.
      bucket.expiryS = nowS + ttlS;
      const elapsedMs = Math.max(0, nowMs - bucket.lastMs);
      const tokens = Math.min(burst, bucket.tokens + (elapsedMs * rate) / 1000) - 1;
      const delayMs = tokens < 0 ? (-tokens / rate) * 1000 : 0;
      // A reservation further away than maxDelay is cancelled, its token given back: a 429
      // costs the bucket nothing (unlike HAProxy's counter, which counts what it denies).
      if (delayMs > maxDelayMs) return { ok: false, delayMs: 0 };
      bucket.tokens = tokens;
      bucket.lastMs = Math.max(bucket.lastMs, nowMs);
      // Within maxDelay the request waits out its reservation, then goes on.
      return { ok: true, delayMs };
    },
  };
}

/** The numbers of a Traefik rate policy, and whether each is whole (the replay's sensitivity moves them). */
rateReservation.numbers = { average: 'whole', periodS: 'real', burst: 'whole' };
