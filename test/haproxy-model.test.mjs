// HAProxy's stick-table rate limit, modelled from its source (thresholds/models/freq-ctr.js,
// stick-table-rate.js): the counter's grid, rotation and sliding read, worked by hand, and the
// lockout a steady client above the limit meets.
import test from 'node:test';
import assert from 'node:assert/strict';
import { freqCtr } from '../thresholds/models/freq-ctr.js';
import { stickTableChain, stickTableRate } from '../thresholds/models/stick-table-rate.js';

test('freq_ctr: the first event starts the grid (on an even tick), a period rotates by exactly one period, two restart it', () => {
  const c = freqCtr(10_000);
  assert.equal(c.read(500), 0);
  c.update(1001);
  assert.deepEqual(c.state(), { tick: 1000, curr: 1, prev: 0 });
  for (const t of [2000, 3000, 4000, 5000]) c.update(t);
  assert.equal(c.read(5000), 5);
  // 500 ms past the period: the 5 events of the period before weigh 9500/10000 of the window.
  assert.equal(c.read(11_500), 4);
  c.update(11_500);
  assert.deepEqual(c.state(), { tick: 11_000, curr: 1, prev: 5 });
  // 5 x 9500 + 1 x 10000 over 10000: 5.75, read in whole events.
  assert.equal(c.read(11_500), 5);
  // 29 s later: more than two periods, so the previous count goes and the grid starts again.
  c.update(40_001);
  assert.deepEqual(c.state(), { tick: 40_000, curr: 1, prev: 0 });
  assert.equal(c.read(40_001), 1);
});

test('freq_ctr: one event in the last period reads as 1 until the window has passed it (the flapping correction)', () => {
  const c = freqCtr(10_000);
  c.update(1001);
  // 0.9 of one event by the sliding window, read as 1.
  assert.equal(c.read(12_000), 1);
  assert.equal(c.read(21_001), 0);
});

test('stick table: denied requests count, so a client held just above the limit is locked out', () => {
  const accepted = (rps, seconds, limit = 20) => {
    const l = stickTableRate({ periodMs: 10_000, limit, expireMs: 30_000 });
    let ok = 0;
    for (let i = 1; i <= Math.round(rps * seconds); i += 1) if (l.offer(Math.floor((i * 1000) / rps) + 3).ok) ok += 1;
    return ok;
  };
  // Under 20 per 10 s: every request through.
  assert.equal(accepted(1.9, 60), 114);
  // 5 % over: the first 20, then nothing for the rest of the minute (a token bucket of the
  // same rate would let about 2 a second through).
  assert.equal(accepted(2.1, 60), 20);
  assert.equal(accepted(30, 60), 20);
});

test('stick table: an entry untouched for its expire is gone, and the next request starts a new one', () => {
  const l = stickTableRate({ periodMs: 10_000, limit: 2, expireMs: 5000 });
  assert.deepEqual(
    [1000, 1100, 1200].map((t) => l.offer(t).ok),
    [true, true, false],
  );
  // 4.9 s after the last touch the entry is still there (3 counted, denied one too).
  assert.equal(l.offer(6100).ok, false);
  // 5 s after the last touch: a new entry, its first request reads 1.
  assert.equal(l.offer(11_100).ok, true);
});

test('stick table: http_req_cnt counts every request since the entry was made; ge compares as HAProxy does; an unknown comparison is refused', () => {
  const cnt = stickTableRate({ periodMs: 10_000, limit: 3, op: 'ge', counter: 'http_req_cnt' });
  assert.deepEqual(
    [0, 50_000, 100_000].map((t) => cnt.offer(t).ok),
    [true, true, false],
  );
  assert.throws(() => stickTableRate({ periodMs: 1000, limit: 1, op: 'eq' }), /no comparison 'eq'/);
});

test('several trackers: a request goes down the rules in order, and a tracker after the deny that refused it never counts it', () => {
  const run = (rules) => {
    const l = stickTableChain({ trackers: [{ periodMs: 10_000 }, { periodMs: 10_000 }], rules });
    let ok = 0;
    for (let i = 0; i < 40; i += 1) if (l.offer(1000 + i * 10).ok) ok += 1;
    return ok;
  };
  const deny = (sc, limit) => ({ deny: sc, counter: 'http_req_rate', op: 'gt', limit });
  // Both tracked first: the tighter limit decides (10), whichever deny comes first.
  assert.equal(run([{ track: 0 }, { track: 1 }, deny(0, 10), deny(1, 15)]), 10);
  assert.equal(run([{ track: 0 }, { track: 1 }, deny(1, 15), deny(0, 10)]), 10);
  // sc1 tracked after sc0's deny: it counts only the 10 let through, so its own deny never holds.
  const late = stickTableChain({
    trackers: [{ periodMs: 10_000 }, { periodMs: 10_000 }],
    rules: [{ track: 0 }, deny(0, 10), { track: 1 }, deny(1, 12)],
  });
  for (let i = 0; i < 40; i += 1) late.offer(1000 + i * 10);
  assert.equal(run([{ track: 0 }, deny(0, 10), { track: 1 }, deny(1, 12)]), 10);
  // One tracker and its deny: the chain is stickTableRate's very counts.
  const single = stickTableRate({ periodMs: 10_000, limit: 10 });
  let ok = 0;
  for (let i = 0; i < 40; i += 1) if (single.offer(1000 + i * 10).ok) ok += 1;
  assert.equal(ok, run([{ track: 0 }, deny(0, 10)]));
});

test('a tarpit counts as a deny, and its refusal comes after its hold; the replay waits for it in the longest answer and in when the answer arrives', async () => {
  const { simulate } = await import('../thresholds/models/limiter-replay.js');
  const policy = {
    kind: 'stick_table_rate',
    periodMs: 10_000,
    limit: 20,
    counter: 'http_req_rate',
    op: 'gt',
    expireMs: 60_000,
  };
  const tarpit = stickTableRate({ ...policy, tarpitMs: 2000 });
  const deny = stickTableRate(policy);
  const answers = (l) => Array.from({ length: 30 }, (_, i) => l.offer(1000 + i * 100));
  assert.deepEqual(
    answers(tarpit).map((a) => a.ok),
    answers(deny).map((a) => a.ok),
  );
  assert.deepEqual(answers(stickTableRate({ ...policy, tarpitMs: 2000 })).slice(19, 21), [
    { ok: true, delayMs: 0 },
    { ok: false, delayMs: 2000 },
  ]);
  // 30 r/s for 2 s: 20 pass at once, 40 are held 2 s each, so about 60 are in flight at the end.
  const c = { startMs: 0, rate: 30, durationMs: 2000 };
  const [held] = simulate({ ...policy, tarpitMs: 2000 }, [c], { seed: 't' });
  const [denied] = simulate(policy, [c], { seed: 't' });
  assert.deepEqual([held.ok, held.limited], [denied.ok, denied.limited]);
  assert.deepEqual([held.maxDelayMs.min, held.maxDelayMs.max, denied.maxDelayMs.max], [2000, 2000, 0]);
  assert.ok(held.inFlight.max >= 40 && denied.inFlight.max < 10, `${held.inFlight.max} vs ${denied.inFlight.max}`);
});

test("a chain's numbers, per tracker and per rule, as the replay's sensitivity moves them: each found, and one moved leaves the rest", async () => {
  const { policyNumbers, withNumber } = await import('../thresholds/models/limiter-replay.js');
  const chain = {
    kind: 'stick_table_chain',
    trackers: [{ periodMs: 10_000, expireMs: 30_000 }],
    rules: [{ track: 0 }, { deny: 0, counter: 'http_req_rate', op: 'gt', limit: 20, tarpitMs: 2000 }],
  };
  assert.deepEqual(
    policyNumbers(chain).map((n) => [n.path.join('.'), n.value, n.whole]),
    [
      ['trackers.0.periodMs', 10_000, true],
      ['trackers.0.expireMs', 30_000, true],
      ['rules.1.limit', 20, true],
      ['rules.1.tarpitMs', 2000, true],
    ],
  );
  const moved = withNumber(chain, ['rules', 1, 'limit'], 24);
  assert.deepEqual([moved.rules[1].limit, chain.rules[1].limit, moved.trackers], [24, 20, chain.trackers]);
  // A deny holds no tarpit: nothing there to move.
  assert.deepEqual(
    policyNumbers({ kind: 'stick_table_rate', periodMs: 10_000, limit: 20, expireMs: Infinity }).map((n) => n.path[0]),
    ['limit', 'periodMs', 'expireMs'],
  );
});

test('a flag (sc-inc-gpc0 above a rate, a deny on gpc0): set once, it refuses every request until the entry expires, however slowly the client then sends', () => {
  const flagged = (rules) =>
    stickTableChain({ trackers: [{ periodMs: 10_000, expireMs: 30_000 }], rules: [{ track: 0 }, ...rules] });
  const flag = { inc: 0, gpc: 0, reads: 0, counter: 'http_req_rate', op: 'gt', limit: 5 };
  const deny = { deny: 0, counter: 'gpc0', op: 'gt', limit: 0 };
  const answers = (c, times) => times.map((t) => (c.offer(t).ok ? 1 : 0)).join('');
  const burst = Array.from({ length: 8 }, (_, i) => 1000 + i * 10);
  // The deny before the flag: the request that sets it (the 6th) still goes through.
  const before = flagged([deny, flag]);
  assert.equal(answers(before, burst), '11111100');
  // One request every 29 s keeps the entry alive: still refused, with its window long empty.
  assert.equal(answers(before, [30_000, 59_000, 88_000]), '000');
  // 30 s without a request: the entry is gone, and with it the flag.
  assert.equal(answers(before, [118_000]), '1');
  // The flag before the deny: the request that sets it is refused.
  assert.equal(answers(flagged([flag, deny]), burst), '11111000');
  // Without the flag, the window alone lets the client back once it has emptied.
  const window = flagged([{ deny: 0, counter: 'http_req_rate', op: 'gt', limit: 5 }]);
  assert.equal(answers(window, [...burst, 30_000]), '111110001');
});

test("a gpc's rate (gpc0_rate, added to on every request) reads as http_req_rate does, and every tracked request touches its entry, whatever the table stores", () => {
  const times = Array.from({ length: 30 }, (_, i) => 1000 + i * 100);
  const run = (c) => times.map((t) => (c.offer(t).ok ? 1 : 0)).join('');
  const viaGpc = stickTableChain({
    trackers: [{ periodMs: 10_000, gpc0RateMs: 10_000, expireMs: 60_000 }],
    rules: [{ track: 0 }, { inc: 0, gpc: 0 }, { deny: 0, counter: 'gpc0_rate', op: 'gt', limit: 7 }],
  });
  assert.equal(run(viaGpc), run(stickTableRate({ periodMs: 10_000, limit: 7, expireMs: 60_000 })));
  // A table storing gpc0 alone, flagged at 1000 ms: each request after it touches the entry
  // (HAProxy 2.6 measured: a flag kept 7 s by a request a second, expire 3 s), so the flag holds
  // until the client has been silent for the expire.
  const flagOnly = stickTableChain({
    trackers: [{ periodMs: 1, expireMs: 5000 }],
    rules: [{ track: 0 }, { deny: 0, counter: 'gpc0', op: 'gt', limit: 0 }, { inc: 0, gpc: 0 }],
  });
  assert.deepEqual(
    [1000, 2000, 5999, 6000, 10_999, 15_999].map((t) => flagOnly.offer(t).ok),
    [true, false, false, false, false, true],
  );
  // Flagged on another tracker's rate: the requests after the last flag (1300 ms) keep it too.
  const flaggedLater = stickTableChain({
    trackers: [
      { periodMs: 1, expireMs: 5000 },
      { periodMs: 10_000, expireMs: 60_000 },
    ],
    rules: [
      { track: 0 },
      { track: 1 },
      { deny: 0, counter: 'gpc0', op: 'gt', limit: 1 },
      { inc: 0, gpc: 0, reads: 1, counter: 'http_req_rate', op: 'gt', limit: 2 },
    ],
  });
  assert.deepEqual(
    [1000, 1100, 1200, 1300, 1400, 6200, 11_199, 16_200].map((t) => flaggedLater.offer(t).ok),
    [true, true, true, true, false, false, false, true],
  );
});

test('conn_cur counts the streams in progress (the request offered among them), conn_rate and conn_cnt the tracked ones, denied too', () => {
  const limit = (rules, tracker = {}, options) =>
    stickTableChain({ trackers: [{ periodMs: 10_000, expireMs: 60_000, connCur: true, ...tracker }], rules }, options);
  const cur = limit([{ track: 0 }, { deny: 0, counter: 'conn_cur', op: 'gt', limit: 2 }]);
  // Three held 100 ms each at once: the third is the third in progress; once the first two end, one more.
  const answers = [
    [0, 100],
    [10, 100],
    [20, 100],
    [100, 100],
    [105, 100],
  ].map(([t, holdMs]) => cur.offer(t, undefined, { holdMs }).ok);
  assert.deepEqual(answers, [true, true, false, true, false]);
  // A stream ending in the millisecond a request's rules run: let go before them, or held past them.
  const tie = (tiesHeld) => {
    const c = limit([{ track: 0 }, { deny: 0, counter: 'conn_cur', op: 'gt', limit: 1 }], {}, { tiesHeld });
    return [c.offer(0, undefined, { holdMs: 5 }).ok, c.offer(5).ok];
  };
  assert.deepEqual(
    [tie(false), tie(true)],
    [
      [true, true],
      [true, false],
    ],
  );
  // conn_rate over its own period counts every tracked request, refused ones too: 3 per 1 s.
  const rate = limit([{ track: 0 }, { deny: 0, counter: 'conn_rate', op: 'gt', limit: 3 }], { connRateMs: 1000 });
  assert.equal([0, 100, 200, 300, 400, 2500].map((t) => (rate.offer(t).ok ? 1 : 0)).join(''), '111001');
  const cnt = limit([{ track: 0 }, { deny: 0, counter: 'conn_cnt', op: 'ge', limit: 3 }]);
  assert.equal([0, 1, 2, 3].map((t) => (cnt.offer(t).ok ? 1 : 0)).join(''), '1100');
});

test('an entry storing conn_cur is touched again when a stream ends, and none goes while a stream holds it', () => {
  const entry = (connCur) =>
    stickTableChain({
      trackers: [{ periodMs: 1, expireMs: 1000, connCur }],
      rules: [{ track: 0 }, { deny: 0, counter: 'http_req_cnt', op: 'gt', limit: 1 }],
    });
  // A request held 800 ms at 0, the next at 1500: 1500 ms after the first touch, 700 ms after its end.
  const run = (e) => [e.offer(0, undefined, { holdMs: 800 }).ok, e.offer(1500).ok];
  // With conn_cur its end touched it: the count of 1 is kept, and the second request is the second.
  assert.deepEqual(run(entry(true)), [true, false]);
  // Without, it expired at 1000: a fresh entry lets the second through.
  assert.deepEqual(run(entry(false)), [true, true]);
  // Held past its expire, it is not removed while the stream lasts.
  const held = entry(false);
  assert.deepEqual([held.offer(0, undefined, { holdMs: 3000 }).ok, held.offer(2000).ok], [true, false]);
});

test("rate-limit sessions: the first N of a second accepted at once, the next when HAProxy's second has passed, then N a second, in arrival order", async () => {
  const { acceptRate } = await import('../thresholds/models/accept-rate.js');
  const burst = acceptRate(10);
  const at = Array.from({ length: 13 }, () => burst.accept(0));
  // freq_ctr_remain is 0 once 10 are counted; next_event_delay then reads (10 x 1000 - 10 x 1000)
  // / 10 = 0, at least 1 ms, until the period rotates at 1000: the previous 10 weigh 999/1000 of
  // the window at 1001 (9.99, read as 9), and one more is let in; then one every 100 ms.
  assert.deepEqual(at, [...Array(10).fill(0), 1001, 1101, 1201]);
  // Arrivals at 20 a second from 1000: the 11th waits 501 ms, and the wait grows 50 ms each.
  const steady = acceptRate(10);
  const waits = Array.from({ length: 14 }, (_, i) => steady.accept(1000 + i * 50) - (1000 + i * 50));
  assert.deepEqual(waits, [...Array(10).fill(0), 501, 551, 601, 651]);
  // None is accepted before one that came earlier, even where the counter would let it in.
  const order = acceptRate(2);
  assert.deepEqual([order.accept(0), order.accept(0), order.accept(0), order.accept(2000)], [0, 0, 1001, 2000]);
});

test('freq_ctr_total: the events of two periods in events x ms, the previous weighted by what of it the window still holds', () => {
  const c = freqCtr(1000);
  assert.equal(c.total(0), 0);
  c.update(0, 4);
  assert.equal(c.total(400), 4000);
  c.update(1200, 2);
  // At 1200: the period began at 1000, 800 ms of the previous one left in the window.
  assert.equal(c.total(1200), 4 * 800 + 2 * 1000);
  assert.equal(c.read(1200), 5);
  // Past two periods, nothing.
  assert.equal(c.total(3100), 0);
});

// A table that holds 3 keys (to_batch 1: two nodes looked at), expire 1 s, 2 requests per 10 s.
const smallTable = () => stickTableRate({ periodMs: 10_000, limit: 2, expireMs: 1000, size: 3, keyed: true });
// Sends as 'ms:key ...'; 1 for each let through, 0 for each refused.
const okAt = (model, sends) =>
  sends.split(' ').map((s) => {
    const [ms, key] = s.split(':');
    return model.offer(Number(ms), key).ok ? 1 : 0;
  });

test('a full table trashes its oldest entry: a client refused at 0-20 ms is let in again once two fresh keys came after it', () => {
  const m = smallTable();
  // x: 2 let through, the third refused; a and b fill the table (x, a, b).
  assert.deepEqual(okAt(m, '0:x 10:x 20:x 30:a 40:b'), [1, 1, 0, 1, 1]);
  // c: x is oldest (queued at 1000), touched since (expire 1020): queued again at 1020, which
  // comes before a's 1030, so it is looked at again, untouched now: freed. x comes back fresh.
  assert.deepEqual(okAt(m, '50:c 60:x 70:x 80:x'), [1, 1, 1, 0]);
});

test('a client touched after the keys behind it is queued again behind them: the next untouched key goes instead', () => {
  const m = smallTable();
  assert.deepEqual(okAt(m, '0:x 10:x 20:x 30:a 35:x 40:b'), [1, 1, 0, 1, 0, 1]);
  // c: x is queued again at 1035, after a's 1030: a is freed, x keeps its count and stays refused.
  assert.deepEqual(okAt(m, '50:c 60:x'), [1, 0]);
  // d: x (1035) is first again, but its refused request at 60 touched it: queued again at 1060,
  // and b goes. A client that keeps sending keeps its entry, refused.
  assert.deepEqual(okAt(m, '70:d 80:x'), [1, 0]);
});

test('two touched entries first in the tree use both looks: the new key gets no entry, and no test on it holds', () => {
  const m = stickTableRate({ periodMs: 10_000, limit: 1, expireMs: 1000, size: 2, keyed: true });
  assert.deepEqual(okAt(m, '0:x 5:y 10:x 15:y'), [1, 1, 0, 0]);
  // z at 20: x and y are each queued again (1010, 1015), and the walk has looked at two nodes: z
  // is not tracked, and not counted. At 21 x is first, untouched since it was queued again:
  // freed, and z tracked, its count 1 (counted at 20 too, it would be 2, over the limit).
  assert.deepEqual(okAt(m, '20:z 21:z 22:z'), [1, 1, 0]);
});

test('nopurge: a full table makes no room, and the new key is never tracked; the expiry task frees an entry at its tick', () => {
  const m = stickTableRate({ periodMs: 10_000, limit: 1, expireMs: 1000, size: 1, nopurge: true, keyed: true });
  assert.deepEqual(okAt(m, '0:x 10:y 11:y 20:x'), [1, 1, 1, 0]);
  // x's entry expires at 1020 (its last touch and 1 s): y is tracked from then on.
  assert.deepEqual(okAt(m, '1019:y 1020:y 1021:y'), [1, 1, 0]);
});

test('a table of the same keys with room for all of them keeps every count (the model without a size)', () => {
  const sends = '0:x 10:x 20:x 30:a 40:b 50:c 60:x';
  const roomy = stickTableRate({ periodMs: 10_000, limit: 2, expireMs: 1000, size: 4, keyed: true });
  assert.deepEqual(okAt(roomy, sends), [1, 1, 0, 1, 1, 1, 0]);
});

test("an evict case's runs tell its table's size from one smaller and one larger, jittered or not", async () => {
  const { simulate } = await import('../thresholds/models/limiter-replay.js');
  const gap = { count: 8, none: true };
  const runs = [
    { count: 21, own: true },
    gap,
    { count: 15, fresh: 'string' },
    gap,
    { count: 5, own: true },
    gap,
    { count: 16, fresh: 'string' },
    gap,
    { count: 5, own: true },
  ];
  const okOf = (size) => {
    const policy = {
      kind: 'stick_table_rate',
      counter: 'http_req_rate',
      op: 'gt',
      limit: 10,
      periodMs: 10_000,
      expireMs: 30_000,
      size,
      keyed: true,
      keyRuns: { header: 'X-Token', runs },
    };
    return simulate(policy, [{ startMs: 2000, rate: 60, durationMs: (94 / 60) * 1000 }])[0].ok;
  };
  // 16: its own key kept through the first fill, trashed by the second; 15 trashes it in the
  // first (5 more let in), 17 keeps it through both (5 fewer). Every trial agrees.
  assert.deepEqual(okOf(16), { min: 78, max: 78 });
  assert.deepEqual(okOf(15), { min: 83, max: 83 });
  assert.deepEqual(okOf(17), { min: 73, max: 73 });
});

test("an evict case's keys in turn: its own (null), none (''), or fresh ones numbered across runs, as the table's type stores them", async () => {
  const { keyAt, freshKey } = await import('../thresholds/key-runs.js');
  const runs = [
    { count: 2, own: true },
    { count: 1, none: true },
    { count: 2, fresh: 'ip' },
    { count: 1, fresh: 'ip' },
  ];
  assert.deepEqual(
    [0, 1, 2, 3, 4, 5, 6].map((i) => keyAt(runs, i)),
    [null, null, '', '198.18.0.1', '198.18.0.2', '198.18.0.3', null],
  );
  assert.deepEqual(
    ['string', 'integer', 'ipv6'].map((type) => freshKey(type, 300)),
    ['lab-fresh-301', '100300', '2001:db8:1::12d'],
  );
});

test('an entry a stream holds past its expire is not freed by the expiry task; it goes once the stream ends', () => {
  const heldPastExpire = () => {
    const m = stickTableRate({ periodMs: 10_000, limit: 1, expireMs: 1000, size: 4, keyed: true });
    // x's request at 0 is held 1500 ms, past its expire at 1000.
    assert.equal(m.offer(0, 'x', { holdMs: 1500 }).ok, true);
    return m;
  };
  // At 1400 the stream still holds it: x counts 2, over the limit.
  assert.equal(heldPastExpire().offer(1400, 'x').ok, false);
  // At 1600 its stream ended (1500) after its expire: freed then, and x is counted afresh.
  assert.equal(heldPastExpire().offer(1600, 'x').ok, true);
});
