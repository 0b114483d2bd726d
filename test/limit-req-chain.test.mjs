/*
 * Several limit_req on one location (thresholds/models/limit-req-chain.js): one limit behaves as
 * the single-zone model the seeds are judged by; with two, a rejected request is charged to none
 * and the longest delay wins.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { limitReq } from '../thresholds/models/limit-req.js';
import { limitReqChain } from '../thresholds/models/limit-req-chain.js';
import { seededRandom } from '../thresholds/models/random.js';

test('a chain of one limit is the single-zone model, request for request', () => {
  const random = seededRandom('limit-req-chain');
  for (const policy of [
    { rate: 3, burst: 0, delay: 0 },
    { rate: 3, burst: 50, delay: 0 },
    { rate: 5, burst: 10, delay: 4 },
    { rate: 2, burst: 5, delay: Infinity },
  ]) {
    const one = limitReq(policy);
    const chain = limitReqChain([{ rateMilli: policy.rate * 1000, burst: policy.burst, delay: policy.delay }]);
    let t = 0;
    for (let i = 0; i < 400; i += 1) {
      t += Math.floor(random() * 400);
      const a = one.offer(t);
      const b = chain.offer(t);
      assert.deepEqual(
        [b.ok, b.delayMs],
        [a.ok, Number.isFinite(a.delayMs) ? a.delayMs : 0],
        `${JSON.stringify(policy)} at ${t} ms`,
      );
    }
  }
});

test('two limits: the first to be over its burst rejects, and then neither is charged', () => {
  // A strict limit after a loose one: 1 r/s burst 0 after 10 r/s burst 10.
  const chain = limitReqChain([
    { rateMilli: 10000, burst: 10, delay: Infinity },
    { rateMilli: 1000, burst: 0, delay: Infinity },
  ]);
  assert.equal(chain.offer(0).ok, true);
  // 10 more in the same millisecond: the second limit rejects each; had the first been charged,
  // it would now be full.
  for (let i = 0; i < 10; i += 1) assert.deepEqual(chain.offer(0), { ok: false, delayMs: 0, by: 1 });
  // A second later the strict one lets one through, and the loose one has room for ten more.
  assert.equal(chain.offer(1000).ok, true);
});

test('two limits that delay: the request waits the longer of their delays', () => {
  // 5 r/s with burst 5 (delay all excess) and 2 r/s with burst 20 delay=2.
  const chain = limitReqChain([
    { rateMilli: 5000, burst: 5, delay: 0 },
    { rateMilli: 2000, burst: 20, delay: 2 },
  ]);
  const out = [0, 0, 0, 0].map(() => chain.offer(0));
  // The 4th: excess 3 in the first (wait 600 ms), 3 in the second, 1 over its delay=2 (wait 500 ms).
  assert.deepEqual(
    out.map((o) => o.delayMs),
    [0, 200, 400, 600],
  );
  assert.equal(out[3].by, 0);
});

test('r/m: nginx keeps the rate by integer division, 10r/m as 166 milli-requests a second', () => {
  const chain = limitReqChain([{ rateMilli: Math.floor((10 * 1000) / 60), burst: 0, delay: 0 }]);
  assert.equal(chain.offer(0).ok, true);
  // 6 s later a 10r/m bucket would have drained 1000 (one request); nginx's has drained 996.
  assert.equal(chain.offer(6000).ok, false);
  assert.equal(chain.offer(6025).ok, true);
});

test('dry run: what the limits reject passes, charged to none, and nothing waits', () => {
  const limits = [{ rateMilli: 1000, burst: 2, delay: 0 }];
  const dry = limitReqChain(limits, { dryRun: true });
  const real = limitReqChain(limits);
  const d = [0, 0, 0, 0].map(() => dry.offer(0));
  const r = [0, 0, 0, 0].map(() => real.offer(0));
  assert.deepEqual(
    r.map((x) => x.ok),
    [true, true, true, false],
  );
  assert.deepEqual(
    d.map((x) => [x.ok, x.delayMs, x.dry]),
    [
      [true, 0, null],
      [true, 0, 'delayed'],
      [true, 0, 'delayed'],
      [true, 0, 'rejected'],
    ],
  );
});
