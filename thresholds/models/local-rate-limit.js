/*
 * Envoy's HTTP local rate limit filter around its token bucket (local_ratelimit.cc
 * Filter::decodeHeaders): a request the filter is not enabled for (filter_enabled, a share of
 * requests drawn per request, 0 when unset) passes without touching the bucket; one it is
 * enabled for takes a token if there is one; one with none left is counted as rate limited and
 * answered with the status only if the filter is enforced for it (filter_enforced, drawn the
 * same way, 0 when unset), else it passes.
 *
 * With descriptors (local_ratelimit_impl.cc requestAllowed): the buckets a request meets are its
 * matched descriptors' (the slowest refill first), then the default bucket where it has one and
 * none matched or always_consume_default_token_bucket (unset: true); each takes a token in turn,
 * the first empty one denies, and tokens taken before are not given back. A shadow descriptor's
 * bucket counts, but denies nothing.
 */
import { tokenBucket } from './token-bucket.js';

/**
 * `policy`: {maxTokens, tokensPerFill, fillIntervalMs, enabled, enforced} (shares 0..1);
 * `random`: a seeded draw in [0, 1) (models/random.js), Envoy's per-request runtime draw.
 */
export function localRateLimit({ enabled = 1, enforced = 1, buckets = null, ...bucket }, random) {
  // One bucket, or the chain a class of request meets (its descriptors' and the default's).
  const chain = (buckets ?? [bucket]).map((b) => ({ shadow: Boolean(b.shadow), tokens: tokenBucket(b) }));
  return {
    /** Offers one request at `tMs`; returns {ok, delayMs, counted} (counted: enabled, and limited or not). */
    offer(tMs) {
      if (!(random() < enabled)) return { ok: true, delayMs: 0, counted: null };
      const denied = chain.find((b) => !b.tokens.offer(tMs).ok && !b.shadow);
      if (!denied) return { ok: true, delayMs: 0, counted: 'ok' };
      return { ok: !(random() < enforced), delayMs: 0, counted: 'rate_limited' };
    },
  };
}
