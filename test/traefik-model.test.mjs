// Traefik's rateLimit, modelled from its source (thresholds/models/rate-reservation.js): what it
// derives from average/period/burst, the delay-or-reject rule, a refused request costing nothing,
// and the ttl that drops an idle bucket (refilling it early), worked by hand.
import test from 'node:test';
import assert from 'node:assert/strict';
import { rateReservation, traefikLimits } from '../thresholds/models/rate-reservation.js';
import { simulate } from '../thresholds/models/limiter-replay.js';

test('traefikLimits: rate per s, maxDelay from the whole rate, 500 ms under 1 r/s, ttl 2 s or 1 + 1/rate', () => {
  assert.deepEqual(traefikLimits({ average: 20, periodS: 1, burst: 40 }), {
    rate: 20,
    burst: 40,
    maxDelayMs: 25,
    ttlS: 2,
  });
  // 2.5 r/s: maxDelay from the rate truncated to 2, so 250 ms, not 200.
  assert.equal(traefikLimits({ average: 5, periodS: 2 }).maxDelayMs, 250);
  // "6 per minute": 0.1 r/s, a bucket of one, 500 ms of delay, dropped after 11 idle seconds.
  assert.deepEqual(traefikLimits({ average: 6, periodS: 60, burst: 0 }), {
    rate: 0.1,
    burst: 1,
    maxDelayMs: 500,
    ttlS: 11,
  });
  assert.equal(traefikLimits({ average: 0 }).rate, Infinity);
});

test('rateReservation: the burst at once, then a request within maxDelay waits for its token, one further is refused', () => {
  // 10 r/s, burst 2: maxDelay 50 ms.
  const b = rateReservation({ average: 10, periodS: 1, burst: 2 });
  assert.deepEqual(b.offer(1000), { ok: true, delayMs: 0 });
  assert.deepEqual(b.offer(1000), { ok: true, delayMs: 0 });
  // 60 ms later 0.6 of a token: the next waits 40 ms for it.
  const r = b.offer(1060);
  assert.equal(r.ok, true);
  assert.ok(Math.abs(r.delayMs - 40) < 1e-9, String(r.delayMs));
  // At 1061 the bucket is at -0.39 tokens: one more would wait 139 ms, over 50, so 429.
  assert.deepEqual(b.offer(1061), { ok: false, delayMs: 0 });
  // The refusal took nothing: at 1100 the bucket is back at 0 and the next waits 100 ms... refused
  // too, but at 1155 it waits 45 ms and goes.
  assert.equal(b.offer(1100).ok, false);
  const s = b.offer(1155);
  assert.equal(s.ok, true);
  assert.ok(Math.abs(s.delayMs - 45) < 1e-9, String(s.delayMs));
});

test('rateReservation: a source held above the rate still gets the rate (no lockout), with delays up to maxDelay', () => {
  const b = rateReservation({ average: 10, periodS: 1, burst: 5 });
  let ok = 0;
  let maxDelay = 0;
  // 40 r/s for 10 s: the burst, then 10 r/s.
  for (let i = 1; i <= 400; i += 1) {
    const r = b.offer(1000 + i * 25);
    if (r.ok) ok += 1;
    maxDelay = Math.max(maxDelay, r.delayMs);
  }
  assert.equal(ok, 5 + 100);
  assert.ok(maxDelay > 0 && maxDelay <= 50, String(maxDelay));
});

test('rateReservation: an idle bucket is dropped on whole Unix seconds (1 to 2 s idle at >= 1 r/s) and comes back full', () => {
  // 1 r/s, burst 3.
  const b = rateReservation({ average: 1, periodS: 1, burst: 3 });
  for (let i = 0; i < 3; i += 1) assert.equal(b.offer(10_900).ok, true);
  // Expiry second 12: at 11.999 s the bucket (1.1 tokens refilled, less the request) stays.
  assert.equal(b.offer(11_999).ok, true);
  assert.equal(b.offer(11_999).ok, false);
  // At 13.999 s (expiry 13 from the request at 11.999): dropped, full again: three at once.
  for (let i = 0; i < 3; i += 1) assert.equal(b.offer(13_999).ok, true, `request ${i}`);
  assert.equal(b.offer(13_999).ok, false);
});

test('the plan runs the model as the kind rate_reservation: 20 r/s for 2 s against 10 r/s with a burst of 5', () => {
  const policy = { kind: 'rate_reservation', average: 10, periodS: 1, burst: 5 };
  const [c] = simulate(policy, [{ startMs: 0, rate: 20, durationMs: 2000 }], { jitterMs: 0 });
  // The burst of 5, then 10 r/s from the first request at 50 ms to the last at 2000 ms (19.5
  // tokens), with half a token more let through on a delay: 24 or 25.
  assert.ok(c.ok.min >= 24 && c.ok.max <= 25, JSON.stringify(c));
  assert.ok(c.maxDelayMs.max <= 50, JSON.stringify(c));
});

test("a router's inFlightReq: at most N of a source's requests in progress, a slot given back when the answer passes it again, or at once where a later rateLimit refuses", async () => {
  const { traefikChain } = await import('../thresholds/models/traefik-chain.js');
  const run = (c, times, holdMs) => times.map((t) => (c.offer(t, undefined, { holdMs }).ok ? 1 : 0)).join('');
  // Held 45 ms each, one every 10 ms: the fifth meets four in progress; by the sixth one is back.
  const every10 = Array.from({ length: 8 }, (_, i) => i * 10);
  assert.equal(run(traefikChain({ steps: [{ inFlight: 4 }] }), every10, 45), '11110111');
  // The inFlightReq first: the rateLimit's refusals give their slot back as they pass it, so the
  // client is let on again once its bucket has refilled.
  const first = traefikChain({ steps: [{ inFlight: 1 }, { average: 1, periodS: 1, burst: 1 }] });
  assert.equal(run(first, [0, 10, 11, 1100], 5), '1001');
});
