/*
 * Envoy's HTTP local rate limit filter around its token bucket (local_ratelimit.cc
 * Filter::decodeHeaders): a request the filter is not enabled for (filter_enabled, a share of
 * requests drawn per request, 0 when unset) passes without touching the bucket; one it is
 * enabled for takes a token if there is one; one with none left is counted as rate limited and
 * answered with the status only if the filter is enforced for it (filter_enforced, drawn the
 * same way, 0 when unset), else it passes.
 */
import { tokenBucket } from './token-bucket.js';

/**
 * `policy`: {maxTokens, tokensPerFill, fillIntervalMs, enabled, enforced} (shares 0..1);
 * `random`: a seeded draw in [0, 1) (models/random.js), Envoy's per-request runtime draw.
 */
export function localRateLimit({ enabled = 1, enforced = 1, ...bucket }, random) {
  const tokens = tokenBucket(bucket);
  return {
    /** Offers one request at `tMs`; returns {ok, delayMs, counted} (counted: enabled, and limited or not). */
    offer(tMs) {
      if (!(random() < enabled)) return { ok: true, delayMs: 0, counted: null };
      const r = tokens.offer(tMs);
      if (r.ok) return { ...r, counted: 'ok' };
      return { ok: !(random() < enforced), delayMs: 0, counted: 'rate_limited' };
    },
  };
}
