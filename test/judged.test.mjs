/*
 * Every row a table prints is judged (ok or FAIL) or shown (marked so, never ok). A range that
 * admits every value its case could produce passes whatever the stack does, so it is not a
 * judgement: burst smoke's 200s 1..5 and 503s 0..2 of 3 requests, caching smoke's app served
 * 0..5 of 4, all printed "ok". These tests hold every plan's counts to having teeth, and show
 * what a range without them becomes: a shown row, no judging k6 threshold, no pass.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { plan, experiments, QUICK_FACTOR } from '../thresholds/plan.js';
import { kindOf } from '../thresholds/kinds/index.js';
import { admitsEvery, shownRanges, withTeeth, KEEP_ONLY } from '../thresholds/kinds/judged.js';
import { okMetric, limitedMetric } from '../thresholds/kinds/limiter.js';
import { kindFor } from '../lab/kinds/index.mjs';
import { rowStatus } from '../lab/results/judged-rows.mjs';
import { SHOWN, failedLines } from '../lab/judge/table.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Every plan of every experiment and suite, at seed timing and --quick. */
function allPlans() {
  const out = [];
  for (const e of Object.values(experiments)) {
    for (const suite of Object.keys(e.suites)) {
      for (const factor of [...new Set([1, Math.min(QUICK_FACTOR, e.maxQuick ?? Infinity)])])
        out.push(plan({ experiment: e.name, suite, factor }));
    }
  }
  return out;
}

/** The counts of a plan that cannot fail: 'experiment/case x factor: key lo..hi admits every value lo..hi'. */
function cannotFail(p) {
  const kind = kindOf(experiments[p.experiment]);
  return p.cases.flatMap((c) =>
    Object.entries(kind.possible(c, p))
      .filter(([key, range]) => c.expected[key] && admitsEvery(c.expected[key], range))
      .map(
        ([key, range]) =>
          `${c.name} x${p.factor}: ${key} ${c.expected[key].lo}..${c.expected[key].hi} admits every value ${range.lo}..${range.hi}`,
      ),
  );
}

/** A limiter summary for one case: its counts and p99. */
const limiterSummary = (c, { ok, limited, p99 = 3 }) => ({
  metrics: {
    [okMetric(c)]: { values: { count: ok } },
    [limitedMetric(c)]: { values: { count: limited } },
    [`http_reqs{case:${c.id}}`]: { values: { count: ok + limited } },
    [`http_req_duration{case:${c.id}}`]: { values: { max: p99, 'p(99)': p99 } },
  },
});
const judgeOne = (p, c, counts) => kindFor(p).judge({ ...p, cases: [c] }, { summary: limiterSummary(c, counts) });
const marks = (j) => Object.fromEntries(j.rows.map((r) => [r[1], r[r.length - 1]]));

test('no count of any plan admits every value its case could produce (every suite and experiment, seed timing and --quick)', () => {
  const plans = allPlans();
  assert.ok(plans.length >= 20, `${plans.length} plans`);
  assert.deepEqual(
    plans.flatMap(cannotFail),
    [],
    'a range that cannot fail: give it teeth (a tighter model range, more requests) or make its row shown',
  );
});

test('the check sees a range that cannot fail: a count widened to 0..requests', () => {
  const p = plan({ experiment: 'burst', suite: 'spike' });
  const c = p.cases[0];
  const wide = { ...p, cases: [{ ...c, expected: { ...c.expected, ok: { lo: 0, hi: c.requests } } }] };
  assert.deepEqual(cannotFail(wide), [`${c.name} x1: ok 0..${c.requests} admits every value 1..${c.requests}`]);
});

test("every row each plan's table can print is ok, FAIL or shown", () => {
  for (const p of allPlans()) {
    const rows = rowStatus(p);
    assert.ok(rows.length >= p.cases.length, `${p.experiment} ${p.suite}: rows for every case`);
    for (const c of p.cases)
      assert.ok(
        rows.some((r) => r.case === c.name && r.judged),
        `${c.name}: at least one judged row`,
      );
    const { rows: printed } = kindFor(p).judge(p, { summary: { metrics: {} }, cpu: {}, cgroupSamples: {}, caps: {} });
    for (const r of printed)
      assert.ok(['ok', 'FAIL', SHOWN].includes(r[r.length - 1]), `${p.experiment}: ${r.join(' | ')}`);
  }
});

test('smoke counts can fail now: a zone slower than 1 r/s fails burst smoke, a cache miss too many fails caching smoke', () => {
  const p = plan({ experiment: 'burst', suite: 'smoke' });
  const c = p.cases.find((x) => x.id === 'b0-smoke');
  assert.deepEqual(
    [c.expected.ok.lo, c.expected.ok.hi, c.expected.limited.lo, c.expected.limited.hi],
    [3, 3, 0, 0],
    'the model is exact for 3 requests at 1 r/s',
  );
  assert.equal(judgeOne(p, c, { ok: 3, limited: 0 }).outcomes[0].pass, true);
  // A zone of 30r/m (nginx's syntax; the knob takes whole r/s) limits the second request, 1 s
  // after the first: 2 passed, 1 limited, inside the old 1..5 and 0..2.
  const slow = judgeOne(p, c, { ok: 2, limited: 1 });
  assert.equal(slow.outcomes[0].pass, false);
  assert.deepEqual(marks(slow), { 200: 'FAIL', 503: 'FAIL', p99: 'ok' });

  // The recorded smoke run's caching summary, with one more request reaching the application.
  const caching = plan({ experiment: 'caching', suite: 'smoke' });
  const server = caching.cases.find((x) => x.id === 'server-smoke');
  assert.deepEqual(
    [server.expected.appServed.lo, server.expected.appServed.hi],
    [2, 2],
    'the first request of each user misses, the second hits',
  );
  const summary = JSON.parse(
    readFileSync(join(root, 'test/fixtures/results/20261123-090928-smoke/smoke.caching.summary.json'), 'utf8'),
  );
  const served = (n) => ({
    ...summary,
    metrics: { ...summary.metrics, 'lab_app_served{case:server-smoke}': { values: { count: n } } },
  });
  const judge = (p, n) =>
    kindFor(p).judge({ ...p, cases: [p.cases.find((x) => x.id === 'server-smoke')] }, { summary: served(n) });
  assert.equal(judge(caching, 2).outcomes[0].pass, true);
  assert.equal(judge(caching, 3).outcomes[0].pass, false);
  assert.equal(marks(judge(caching, 3))['app served'], 'FAIL');
  const before = JSON.parse(
    readFileSync(join(root, 'test/fixtures/results/20261123-090928-smoke/smoke.caching.plan.json'), 'utf8'),
  );
  assert.equal(marks(judge(before, 3))['app served'], SHOWN, 'planned before: 0..5 of 4, shown');
});

test('a range that admits every value is shown: no ok, no k6 threshold, no figure, no pass or fail', () => {
  // The recorded smoke run (test/fixtures/results), planned before: 200s 1..5 and 503s 0..2 of 3.
  const old = JSON.parse(
    readFileSync(join(root, 'test/fixtures/results/20261123-090928-smoke/smoke.burst.plan.json'), 'utf8'),
  );
  const oc = old.cases[0];
  assert.deepEqual(
    [oc.expected.ok.lo, oc.expected.ok.hi, oc.expected.limited.lo, oc.expected.limited.hi],
    [1, 5, 0, 2],
  );
  assert.deepEqual(Object.keys(shownRanges(oc.expected, kindOf(experiments.burst).possible(oc))), ['ok', 'limited']);
  const kind = kindFor(old);
  for (const counts of [
    { ok: 3, limited: 0 },
    { ok: 1, limited: 2 },
  ]) {
    const j = judgeOne(old, oc, counts);
    assert.deepEqual(marks(j), { 200: SHOWN, 503: SHOWN, p99: 'ok' }, 'shown whatever was counted');
    assert.equal(j.outcomes[0].pass, true);
    assert.deepEqual([j.outcomes[0].checks.ok, j.outcomes[0].checks.limited], [null, null]);
    assert.deepEqual(
      kind.figures(j.outcomes[0]).map((f) => f.measure),
      ['p99 ms', 'sent'],
      'a shown range is no judged figure',
    );
  }
  assert.equal(
    judgeOne(old, oc, { ok: 3, limited: 0, p99: 2000 }).outcomes[0].pass,
    false,
    'what is judged still fails the case',
  );
  const t = kind.thresholds(oc, old);
  assert.deepEqual(
    [t[okMetric(oc)], t[limitedMetric(oc)]],
    [[KEEP_ONLY], [KEEP_ONLY]],
    'k6 gets only what keeps the count in its summary (it judges nothing), for a shown range',
  );
  assert.ok(`http_req_duration{case:${oc.id}}` in t);
});

test("a range is narrowed to the model's own count only where the tolerance leaves nothing to judge and the model is exact", () => {
  const possible = { lo: 1, hi: 3 };
  assert.deepEqual(withTeeth({ min: 3, max: 3, lo: 1, hi: 5 }, possible), { min: 3, max: 3, lo: 3, hi: 3 });
  assert.deepEqual(
    withTeeth({ min: 2, max: 3, lo: 0, hi: 5 }, possible),
    { min: 2, max: 3, lo: 0, hi: 5 },
    'not exact: left as it is, and shown',
  );
  assert.deepEqual(
    withTeeth({ min: 3, max: 3, lo: 2, hi: 5 }, possible),
    { min: 3, max: 3, lo: 2, hi: 5 },
    'it can fail already',
  );
});

test('a run ends by naming each failed figure: case, measure, what was measured and the bound it missed', () => {
  const outcomes = [
    {
      case: 'json-filter/node-cost',
      pass: false,
      figures: [
        { measure: 'efficiency vs nginx', lo: 0.268, hi: null, measured: 0.2091234, pass: false },
        { measure: 'p99 ms', lo: null, hi: 1000, measured: 40, pass: true },
      ],
    },
    {
      case: 'json-filter/node-base',
      pass: true,
      figures: [{ measure: 'requests', lo: 1900, hi: 2000, measured: 2000, pass: true }],
    },
    { case: 'burst/b0-3rps', pass: false, figures: [{ measure: 'ok', lo: 170, hi: 190, measured: 240, pass: false }] },
    { case: 'cdn/uncapped-load', pass: false, checks: { oom: false, errors: true } },
    {
      case: 'json-filter/node-smoke',
      pass: false,
      figures: [{ measure: 'backend received', lo: 10, hi: 10, measured: 20, pass: false }],
    },
  ];
  assert.deepEqual(failedLines(outcomes), [
    '  json-filter/node-cost: efficiency vs nginx 0.2091, expected >= 0.268',
    '  burst/b0-3rps: ok 240, expected >= 170 and <= 190',
    '  cdn/uncapped-load: failed (oom)',
    '  json-filter/node-smoke: backend received 20, expected 10',
  ]);
});
