/*
 * Envoy's local_ratelimit token bucket (Envoy >= 1.34: the timer-less, atomic bucket): which
 * requests of a schedule it lets through.
 */

/**
 * The bucket starts full (max_tokens), refills continuously at tokens_per_fill / fill_interval
 * on every access rather than in steps on a timer, never holds more than max_tokens, and lets a
 * request through only when a whole token is there. Time is Envoy's monotonic clock, which has
 * sub-millisecond resolution, so no rounding to milliseconds here.
 */
export function tokenBucket({ maxTokens, tokensPerFill, fillIntervalMs }) {
  const perMs = tokensPerFill / fillIntervalMs;
  let tokens = maxTokens;
  let last = null;
  return {
    /** Offers one request at time `tMs` (any real number); returns {ok, delayMs}. */
    offer(tMs) {
      if (last !== null) tokens = Math.min(maxTokens, tokens + (tMs - last) * perMs);
      last = tMs;
      if (tokens < 1) return { ok: false, delayMs: 0 };
      tokens -= 1;
      return { ok: true, delayMs: 0 };
    },
  };
}

/** The numbers of a token bucket policy, and whether each is whole (the replay's sensitivity moves them). */
tokenBucket.numbers = { maxTokens: 'whole', tokensPerFill: 'whole', fillIntervalMs: 'real' };
