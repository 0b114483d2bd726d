/*
 * Envoy's local rate limit filter around its bucket (thresholds/models/local-rate-limit.js):
 * fully enabled and enforced it is the bucket; not enabled, nothing is counted or limited; not
 * enforced, what the bucket limits is counted and passes; in between, the shares hold.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { localRateLimit } from '../thresholds/models/local-rate-limit.js';
import { tokenBucket } from '../thresholds/models/token-bucket.js';
import { seededRandom } from '../thresholds/models/random.js';

const bucket = { maxTokens: 10, tokensPerFill: 1, fillIntervalMs: 100 };
const times = Array.from({ length: 200 }, (_, i) => i * 5);
const run = (policy, seed = 'lrl') => {
  const l = localRateLimit({ ...bucket, ...policy }, seededRandom(seed));
  return times.map((t) => l.offer(t));
};

test('enabled and enforced for every request, the filter is its bucket', () => {
  const b = tokenBucket(bucket);
  assert.deepEqual(
    run({ enabled: 1, enforced: 1 }).map((r) => r.ok),
    times.map((t) => b.offer(t).ok),
  );
});

test('not enabled (Envoy default when filter_enabled is unset): nothing counted, nothing limited', () => {
  const out = run({ enabled: 0, enforced: 1 });
  assert.ok(out.every((r) => r.ok && r.counted === null));
});

test('enabled but not enforced: what the bucket limits is counted, and passes', () => {
  const out = run({ enabled: 1, enforced: 0 });
  assert.ok(out.every((r) => r.ok));
  assert.equal(
    out.filter((r) => r.counted === 'rate_limited').length,
    run({ enabled: 1, enforced: 1 }).filter((r) => !r.ok).length,
  );
});

test('half enforced: about half of what the bucket limits is answered limited', () => {
  const out = run({ enabled: 1, enforced: 0.5 });
  const counted = out.filter((r) => r.counted === 'rate_limited').length;
  const limited = out.filter((r) => !r.ok).length;
  assert.ok(counted > 100 && limited > counted * 0.35 && limited < counted * 0.65, `${limited} of ${counted}`);
});
