// The model against the seeds' own tables (002 and 003), and its basic mechanics.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { limitReq } from '../thresholds/models/limit-req.js';
import { tokenBucket } from '../thresholds/models/token-bucket.js';
import { plan } from '../thresholds/plan.js';
import { simulate, JITTER_MS } from '../thresholds/models/limiter-replay.js';
import { experiments } from '../thresholds/experiments/index.js';
import { fittedFigures } from '../thresholds/provenance.js';

const byId = (p) => Object.fromEntries(p.cases.map((c) => [c.id, c]));
const inRange = (v, r) => v >= r.lo && v <= r.hi;
// A limiter case's figure as the model gives it (model's range, and the range a run is judged on).
function modelFigure(c, figure) {
  const e = c.expected;
  if (figure !== 'maxS') return { model: [e[figure].min, e[figure].max], lo: e[figure].lo, hi: e[figure].hi };
  if (e.maxMs) return { model: [e.maxMs.min / 1000, e.maxMs.max / 1000], lo: e.maxMs.lo / 1000, hi: e.maxMs.hi / 1000 };
  return { model: ['-', '-'], lo: 0, hi: e.p99Ms.hi / 1000 }; // nothing queues: the seed's max bounds its p99
}
// Every seed figure of a limiter experiment no fitted entry names, against the model's range.
function heldOut(t, name, plans) {
  const fitted = fittedFigures(experiments[name]);
  const checked = [];
  for (const c of plans.flatMap((p) => p.cases)) {
    for (const [figure, seed] of Object.entries(experiments[name].seedFigures[c.id] ?? {})) {
      if (figure === 'note' || fitted.has(`${c.id}.${figure}`)) continue;
      const m = modelFigure(c, figure);
      t.diagnostic(`held out: ${c.id} ${figure}: seed ${seed}, model ${m.model.join('..')} (judged ${m.lo}..${m.hi})`);
      assert.ok(seed >= m.lo && seed <= m.hi, `${c.id} ${figure}: seed ${seed} outside ${m.lo}..${m.hi}`);
      checked.push(`${c.id}.${figure}`);
    }
  }
  return checked;
}

test('limit_req: first request free, then one per 1/rate on the ms clock, rejects cost nothing', () => {
  const z = limitReq({ rate: 3, burst: 0 });
  assert.equal(z.offer(1000).ok, true);
  assert.equal(z.offer(1333).ok, false, '333 ms drains 999 milli-requests: excess 1 > burst 0');
  assert.equal(z.offer(1334).ok, true, '334 ms drains 1002: excess 0');
  assert.equal(z.offer(1500).ok, false);
  assert.equal(z.offer(1668).ok, true, 'the rejected request at 1500 was not charged');
});

test('limit_req: queued requests wait (excess - delay) / rate', () => {
  const z = limitReq({ rate: 20, burst: 200, delay: 20 });
  const delays = [];
  for (let i = 0; i < 400; i += 1) {
    const r = z.offer(1000);
    if (r.ok) delays.push(r.delayMs);
  }
  assert.equal(delays.length, 201, 'first free + burst 200 at the same instant');
  assert.equal(delays.filter((d) => d === 0).length, 21, 'free one + delay=20 pass at once');
  assert.equal(Math.max(...delays), 9000, '(200 - 20) / 20 r/s');
});

test('token bucket: starts full, refills continuously, needs a whole token', () => {
  const b = tokenBucket({ maxTokens: 2, tokensPerFill: 20, fillIntervalMs: 1000 });
  assert.deepEqual([b.offer(0).ok, b.offer(0).ok, b.offer(0).ok], [true, true, false]);
  assert.equal(b.offer(49).ok, false, '0.98 token after 49 ms at 20/s');
  assert.equal(b.offer(50).ok, true, 'a whole token at 50 ms, no 1 s step');
  assert.equal(b.offer(10_000).ok && b.offer(10_000).ok && !b.offer(10_000).ok, true, 'never more than max_tokens');
});

test('seed 003, fitted (provenance.fitted): the bursts its mislabelled 9 r/s tables describe give those tables', (t) => {
  const c = byId(plan({ experiment: 'burst', suite: 'spike' }));
  const { fitted } = experiments.burst.provenance;
  assert.deepEqual(Object.keys(fitted), ['burst_of_table_100', 'burst_of_table_300']);
  for (const [key, e] of Object.entries(fitted)) {
    assert.ok(
      experiments.burst.knobs.bursts.default.includes(e.value),
      `${key}: burst ${e.value} is one of the stack's`,
    );
    for (const f of e.fittedTo) {
      assert.equal(f.case, `b${e.value}-9rps`);
      const m = modelFigure(c[f.case], f.figure);
      t.diagnostic(`fitted ${key}=${e.value}: ${f.case} ${f.figure}: seed ${f.seed}, model ${m.model.join('..')}`);
      // 1 + burst + 179 passed, and a longest wait of burst / 3 r/s, whatever the timing: the
      // wait within one arrival's spacing (which arrival finds the queue's last free place
      // hangs on how late k6 sends, JITTER_MS).
      const timing = f.figure === 'maxS' ? 1 / c[f.case].rate : 0;
      assert.ok(m.model[1] - m.model[0] <= timing, `${f.case} does not hang on timing`);
      assert.ok(
        Math.abs(m.model[1] - f.seed) <= 0.005 * f.seed,
        `${f.case} ${f.figure}: seed ${f.seed}, model ${m.model[1]}`,
      );
    }
  }
});

test('seed 003, held out: every figure no fit used, the 9 r/s 120 s soak among them, against the model', (t) => {
  const spike = plan({ experiment: 'burst', suite: 'spike' });
  const checked = heldOut(t, 'burst', [spike, plan({ experiment: 'burst', suite: 'soak' })]);
  // The soak ran longer than any fitted table: 760 / 320, the last after burst / rate.
  for (const f of ['ok', 'limited', 'maxS']) assert.ok(checked.includes(`b400-9rps-120s.${f}`), f);
  assert.ok(checked.includes('b400-9rps.ok') && checked.includes('b0-9rps.ok'));
  // burst=400 holds the whole minute: all 540 pass whatever the timing, the last after ~120 s.
  const b400 = byId(spike)['b400-9rps'].expected;
  assert.deepEqual([b400.ok.min, b400.ok.max], [540, 540]);
  assert.ok(Math.abs(b400.maxMs.max - 119_780) < 100);
});

test('seed 003 at 2, 3 and 9 r/s without burst: ranges from the assumed jitter hold the seed figures', () => {
  const c = byId(plan({ experiment: 'burst', suite: 'spike' }));
  assert.deepEqual([c['b0-2rps'].expected.ok.min, c['b0-2rps'].expected.ok.max], [120, 120]);
  // 3 r/s against 3 r/s: every gap is 333.33 ms, and nginx's ms clock decides 333 (reject) or 334.
  const three = c['b0-3rps'].expected;
  assert.equal(three.timingSensitive, true);
  assert.ok(three.ok.min < three.ok.max, 'a range, not a point');
  assert.ok(inRange(119, three.ok) && inRange(61, three.limited), 'seed: 119 OK, 61 rejected');
  assert.ok(three.ok.max <= 120, 'never more than every other-but-one request');
  assert.ok(inRange(145, c['b0-9rps'].expected.ok), 'seed: 145 OK');
});

test('seed 003 soak: 9 r/s for 120 s at burst 400 gives 760 / 320', () => {
  const [c] = plan({ experiment: 'burst', suite: 'soak' }).cases;
  assert.equal(c.id, 'b400-9rps-120s');
  assert.deepEqual([c.expected.ok.min, c.expected.limited.min], [760, 320]);
  assert.equal(Math.round(c.expected.maxMs.max / 100) / 10, 133.3, 'burst / rate');
});

test('seed 002, held out (nothing is fitted): Envoy and nginx both pass 200 + 20/s; nginx makes the excess wait 9 s', (t) => {
  assert.deepEqual(experiments['envoy-vs-nginx'].provenance.fitted, {});
  const p = plan({ experiment: 'envoy-vs-nginx', suite: 'spike' });
  assert.equal(heldOut(t, 'envoy-vs-nginx', [p]).length, 18, 'all six cases: 200s, 429s, longest wait');
  const c = byId(p);
  for (const d of [1, 2, 4]) {
    assert.equal(c[`nginx-${d}s`].expected.maxMs.max, 9000);
    assert.equal(c[`envoy-${d}s`].expected.maxMs, undefined, 'Envoy queues nothing');
  }
});

test('--quick keeps the counts of every case that does not hang on the ms clock, and divides the waits', () => {
  const changed = [];
  for (const [experiment, suite] of [
    ['burst', 'spike'],
    ['envoy-vs-nginx', 'spike'],
    ['burst', 'soak'],
  ]) {
    const slow = byId(plan({ experiment, suite }));
    const quick = plan({ experiment, suite, factor: 5 });
    for (const q of quick.cases) {
      const s = slow[q.id];
      assert.equal(q.requests, s.requests);
      const same = ['ok', 'limited'].every(
        (k) => q.expected[k].min === s.expected[k].min && q.expected[k].max === s.expected[k].max,
      );
      if (!same) {
        changed.push(q.id);
        assert.ok(
          s.expected.timingSensitive || q.expected.timingSensitive,
          `${q.id} changed under --quick without hanging on the ms clock`,
        );
      }
      // k6's lateness is in real ms, not divided by --quick: a wait scaled back up moves by it.
      if (s.expected.maxMs && q.expected.maxMs)
        assert.ok(
          Math.abs(q.expected.maxMs.max * quick.factor - s.expected.maxMs.max) <= 10 + JITTER_MS * quick.factor,
          q.id,
        );
    }
  }
  assert.ok(changed.includes('b0-3rps') && changed.includes('b0-9rps'), 'README.md lists them (test/docs.test.mjs)');
});

test('thresholds can fail: a policy change the model is not told about moves the expected counts out of range', () => {
  const base = byId(plan({ experiment: 'burst', suite: 'spike' }));
  const faster = byId(plan({ experiment: 'burst', suite: 'spike', overrides: { rate: 4 } }));
  for (const id of ['b0-9rps', 'b50-9rps', 'b100-9rps', 'b300-9rps']) {
    const a = base[id].expected.ok;
    const b = faster[id].expected.ok;
    assert.ok(b.min > a.hi, `${id}: rate 4 gives ${b.min}.., outside 3 r/s's ..${a.hi}`);
  }
  const e = byId(plan({ experiment: 'envoy-vs-nginx', suite: 'spike' }));
  const e2 = byId(
    plan({ experiment: 'envoy-vs-nginx', suite: 'spike', overrides: { max_tokens: 190, nginx_burst: 190 } }),
  );
  for (const id of ['envoy-1s', 'nginx-1s']) assert.ok(e2[id].expected.ok.max < e[id].expected.ok.lo, id);
});

test('--quick is capped per experiment where k6 could not keep up; fresh limiters need no pauses', () => {
  const p = plan({ experiment: 'envoy-vs-nginx', suite: 'spike', factor: 5 });
  assert.deepEqual([p.factor, p.requestedFactor], [2, 5]);
  const c = byId(p);
  assert.equal(c['envoy-1s'].rate, 800);
  assert.equal(
    c['envoy-2s'].startMs,
    c['envoy-1s'].startMs + c['envoy-1s'].durationMs,
    'one burst right after another',
  );
  const burst = plan({ experiment: 'burst', suite: 'spike' });
  assert.equal(
    new Set(burst.cases.map((x) => x.startMs)).size,
    1,
    'burst: every case at once, each on its own limiter key',
  );
});

test('a what-if case expects what an isolated run of it gives: no state from the case before', () => {
  // rate=2 bursts=15: the 9 r/s case on its own key, as if the 3 r/s case had never run.
  const p = byId(plan({ experiment: 'burst', suite: 'spike', overrides: { rate: '2', bursts: '15' } }));
  const alone = simulate({ kind: 'limit_req', rate: 2, burst: 15, delay: 0 }, [{ ...p['b15-9rps'] }], {
    seed: 'burst',
  })[0];
  assert.deepEqual([p['b15-9rps'].expected.ok.min, p['b15-9rps'].expected.ok.max], [alone.ok.min, alone.ok.max]);
  assert.ok(
    p['b15-9rps'].expected.ok.min >= 135,
    `isolated: 1 + 15 + 2 r/s x ~60 s, got ${p['b15-9rps'].expected.ok.min}`,
  );
});

test('the plan is deterministic', () => {
  assert.deepEqual(
    plan({ experiment: 'burst', suite: 'spike', factor: 5 }),
    plan({ experiment: 'burst', suite: 'spike', factor: 5 }),
  );
});

test('the model over time ends where the plan does, and never counts down', async () => {
  const { caseCourse } = await import('../thresholds/plan.js');
  const p = plan({ experiment: 'burst', suite: 'spike', factor: 5 });
  for (const id of ['b50-9rps', 'b0-3rps', 'b400-fill']) {
    const c = p.cases.find((x) => x.id === id);
    const course = caseCourse(p, id);
    const last = course.tMs.length - 1;
    assert.deepEqual([course.ok.min[last], course.ok.max[last]], [c.expected.ok.min, c.expected.ok.max], id);
    assert.deepEqual(
      [course.limited.min[last], course.limited.max[last]],
      [c.expected.limited.min, c.expected.limited.max],
      id,
    );
    for (const key of ['ok', 'limited']) {
      for (let i = 1; i <= last; i += 1)
        assert.ok(
          course[key].min[i] >= course[key].min[i - 1] && course[key].max[i] >= course[key].min[i],
          `${id} ${key} at ${i}`,
        );
    }
  }
  // nginx at 400 r/s with burst=200 delay=20: 21 pass at once (the free request and the delay),
  // then 20 a second, while up to 180 wait in its queue.
  const e = plan({ experiment: 'envoy-vs-nginx', suite: 'spike' });
  const n = caseCourse(e, 'nginx-2s');
  assert.deepEqual(n.ok.max.slice(0, 4), [0, 40, 60, 80]);
  assert.equal(
    caseCourse(plan({ experiment: 'caching', suite: 'smoke' }), 'none-smoke'),
    null,
    'no course for a closed loop',
  );
});

test('a failed limiter case is explained by the knob whose prediction holds what was measured', async () => {
  const { explainCase } = await import('../thresholds/plan.js');
  const p = plan({ experiment: 'burst', suite: 'spike', factor: 5 });
  // What the stack would give if it ran rate=4 while the model was told 3.
  const other = plan({ experiment: 'burst', suite: 'spike', factor: 5, overrides: { rate: '4' } }).cases.find(
    (x) => x.id === 'b50-9rps',
  );
  const fits = explainCase(p, 'b50-9rps', { ok: other.expected.ok.min, limited: other.expected.limited.min });
  assert.deepEqual(fits.found[0], { knob: 'rate', lo: 4, hi: 4, planned: 3 });
  assert.equal(fits.on, 'plan');
  // Counts no single knob of the plan can give: no explanation, and how far it searched.
  const none = explainCase(p, 'b50-9rps', { ok: 5, limited: 0 });
  assert.deepEqual(none.found, []);
  assert.ok(
    none.searched.some((s) => /^rate 1\.\.48$/.test(s)),
    JSON.stringify(none.searched),
  );
  assert.equal(explainCase(plan({ experiment: 'caching', suite: 'smoke' }), 'none-smoke', { ok: 1, limited: 0 }), null);
});

test("JITTER_MS covers k6's lateness in every recorded run, with room, and every limiter case judges it", async () => {
  const { recordedLateness } = await import('../lab/cli/k6-lateness.mjs');
  const runs = recordedLateness(new URL('..', import.meta.url).pathname);
  const spreads = runs.flatMap((r) => Object.values(r.spreads));
  assert.ok(runs.length >= 3 && spreads.length >= 40, `${runs.length} recorded runs with k6's lateness`);
  assert.ok(
    Math.max(...spreads) * 1.2 <= JITTER_MS,
    `largest recorded spread ${Math.max(...spreads)} ms, JITTER_MS ${JITTER_MS}`,
  );
  for (const p of [
    plan({ experiment: 'burst', suite: 'spike', factor: 2 }),
    plan({ experiment: 'envoy-vs-nginx', suite: 'spike' }),
  ]) {
    for (const c of p.cases) assert.equal(c.expected.lateSpreadMs.hi, JITTER_MS, c.id);
  }
});
