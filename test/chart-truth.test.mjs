/*
 * The chart truth check (lab/judge/chart-truth.mjs): a series read as its declaration says and
 * compared with the run's own figures. Seen failing on the queries the boards had before it:
 * `max by (case)` over k6's per-status failed rates, and per-second rates of short cases.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  runFigures,
  figureFor,
  readSeries,
  checkBoards,
  checkSeries,
  truthSummary,
  meets,
  disagreement,
} from '../lab/judge/chart-truth.mjs';
import { panelTruths, boards } from '../dashboards/src/boards.mjs';
import { panel } from '../dashboards/src/lib.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const RUN = join(root, 'test', 'fixtures', 'results', '20261123-091219-spike-quick5');
const oldPanels = JSON.parse(readFileSync(join(RUN, 'panels.json'), 'utf8'));
const truths = panelTruths();
const FAILED_SHARE =
  'Failed requests (share of all, since the case started), by case: statuses the policy does not allow';

test('the run figures: counts, shares and times per case, from the run folder', () => {
  const figs = runFigures(RUN);
  assert.deepEqual(figureFor(figs, { figure: 'requests' }, { case: 'envoy-2s', status: '429' }), { value: 554 });
  assert.deepEqual(figureFor(figs, { figure: 'limited' }, { case: 'envoy-2s' }), { value: 554 });
  assert.deepEqual(figureFor(figs, { figure: 'failedShare' }, { case: 'envoy-2s' }), { value: 0 });
  assert.equal(figureFor(figs, { figure: 'limitedShare' }, { case: 'envoy-2s' }).value, 554 / 793);
  assert.match(figureFor(figs, { figure: 'requests' }, { case: 'setup' }).none, /not one of the plans' cases/);
  assert.ok(figureFor(figs, { figure: 'maxMs' }, { case: 'envoy-2s' }).value > 0);
  assert.throws(() => figureFor(figs, { figure: 'nonsense' }, { case: 'envoy-2s' }), /no run figure named 'nonsense'/);
});

test('a series is read as declared: last, sum, integral over its step, max, count', () => {
  const pts = [
    [0, 1],
    [1000, null],
    [2000, 3],
    [3000, 2],
  ];
  assert.equal(readSeries(pts, 'last'), 2);
  assert.equal(readSeries(pts, 'sum'), 6);
  assert.equal(readSeries(pts, 'integral', 2), 12);
  assert.equal(readSeries(pts, 'max'), 3);
  assert.equal(readSeries(pts, 'count'), 3);
  assert.ok(meets(10, 10) && !meets(10.001, 10) && meets(11, 10, '>=') && !meets(9, 10, '>=') && meets(9, 10, '<='));
});

test("the old failed share, max by (case) over k6's per-status rates, disagrees with the run's counts", () => {
  const old = oldPanels.filter(
    (e) => e.board === 'lab / k6 run' && e.panel === 'Failed requests (share, since the case started), by case',
  );
  assert.equal(old.length, 1);
  const rows = checkBoards(
    old.map((e) => ({ ...e, truth: truths[FAILED_SHARE].A })),
    runFigures(RUN),
  );
  const bad = rows.filter((r) => r.verdict === 'DISAGREE');
  // Every case that limited anything drew 1 (its limited status's series), where nothing failed.
  assert.ok(bad.length >= 10, `${bad.length} disagreements`);
  assert.ok(
    bad.every((r) => r.shown === 1 && r.run === 0),
    JSON.stringify(bad[0]),
  );
});

test('the old per-second rates of short cases add up to less than they counted', () => {
  const old = oldPanels.filter((e) => e.board === 'lab / k6 run' && e.panel === 'Requests per second, by case');
  const rows = checkBoards(
    old.map((e) => ({ ...e, truth: truths['Requests per second, by case'].A })),
    runFigures(RUN),
  );
  const envoy1 = rows.find((r) => r.series === 'case=envoy-1s');
  assert.equal(envoy1.verdict, 'DISAGREE');
  assert.ok(envoy1.shown < envoy1.run, JSON.stringify(envoy1));
  assert.ok(truthSummary(rows)[0].disagree > 0);
});

test('an exact per-second series adds up to the count; a count with no line is none; a bound holds one way', () => {
  const figs = runFigures(RUN);
  const perSecond = {
    label: 'x',
    labels: { case: 'envoy-2s' },
    points: [
      [0, 200],
      [1000, 354],
      [2000, 0],
    ],
    truth: { figure: 'limited', read: 'integral' },
    unit: 'reqps',
    stepS: 1,
  };
  assert.equal(checkSeries(figs, perSecond).verdict, 'agree');
  assert.equal(
    checkSeries(figs, {
      ...perSecond,
      points: [
        [0, 200],
        [1000, 353],
      ],
    }).verdict,
    'DISAGREE',
  );
  const none = checkSeries(figs, {
    label: 'x',
    labels: { case: 'b400-2rps' },
    points: [],
    truth: { figure: 'limited', read: 'last' },
  });
  assert.equal(none.verdict, 'agree');
  const maxMs = figureFor(figs, { figure: 'maxMs' }, { case: 'envoy-2s' }).value;
  const bound = {
    label: 'x',
    labels: { case: 'envoy-2s' },
    truth: { figure: 'maxMs', read: 'last', relation: '<=' },
    unit: 's',
  };
  assert.equal(checkSeries(figs, { ...bound, points: [[0, (maxMs * 0.5) / 1000]] }).verdict, 'agree');
  assert.equal(checkSeries(figs, { ...bound, points: [[0, (maxMs * 1.5) / 1000]] }).verdict, 'DISAGREE');
});

test("a chart of k6's points in InfluxDB equals what InfluxDB holds; held short of k6's count by merged samples is said, held above it disagrees", () => {
  const figs = runFigures(RUN);
  const run = figureFor(figs, { figure: 'requests' }, { case: 'envoy-2s' }).value;
  const chart = (shown, held) => ({
    label: 'case=envoy-2s',
    labels: { case: 'envoy-2s' },
    points: [
      [0, shown - 100],
      [1000, 100],
    ],
    truth: { figure: 'requests', read: 'sum', heldByCase: { 'envoy-2s': held } },
    unit: 'none',
  });
  // Two samples in one nanosecond were one point: the chart shows all InfluxDB holds.
  const merged = checkSeries(figs, chart(run - 1, run - 1));
  assert.equal(merged.verdict, 'agree');
  assert.match(merged.reason, /1 merged/);
  assert.equal(checkSeries(figs, chart(run, run)).reason, undefined);
  // A window that cuts a point off: the chart is short of what the store holds.
  const cut = checkSeries(figs, chart(run - 1, run));
  assert.equal(cut.verdict, 'DISAGREE');
  assert.match(disagreement({ where: 'b', chart: 'c', ...cut }), /InfluxDB holds \d+ of k6's points, the run \d+/);
  assert.equal(checkSeries(figs, chart(run + 1, run + 1)).verdict, 'DISAGREE');
  const absent = { ...chart(run, run), truth: { figure: 'requests', read: 'sum', heldByCase: {} } };
  assert.equal(checkSeries(figs, absent).verdict, 'DISAGREE');
});

// k6's TrendSink.P: linear interpolation between the samples either side of p * (n - 1).
const k6Percentile = (values, p) => {
  const s = [...values].sort((a, b) => a - b);
  const i = p * (s.length - 1);
  return s[Math.floor(i)] + (s[Math.ceil(i)] - s[Math.floor(i)]) * (i - Math.floor(i));
};

test("the slowest status's p95 need not bound the case's own, so the chart of it holds no figure", () => {
  // A case of 11 requests: two answered 200 and nine 503 (one slow). Seen in a CI run's b0-3rps.
  const ok = [2, 2.1];
  const limited = [0, 0, 0, 0, 0, 0, 0, 1, 3];
  const slowest = Math.max(k6Percentile(ok, 0.95), k6Percentile(limited, 0.95));
  assert.ok(
    k6Percentile([...ok, ...limited], 0.95) > slowest,
    `${k6Percentile([...ok, ...limited], 0.95)} <= ${slowest}`,
  );
  assert.match(truths['p95 and p99 of the slowest status (since the case started), by case'].A.none, /interpolation/);
  // A run that declared the old bound is not held to it.
  assert.match(
    figureFor(runFigures(RUN), { figure: 'p95', relation: '>=' }, { case: 'envoy-2s' }).none,
    /does not hold/,
  );
});

test('every query of every board says what run figure it must equal, or why none; a panel that says neither does not build', () => {
  for (const b of boards()) {
    for (const p of b.panels.filter((x) => x.type !== 'row')) {
      for (const t of p.targets) assert.ok(truths[p.title]?.[t.refId], `${b.title} / ${p.title} ${t.refId}`);
    }
  }
  assert.throws(
    () => panel({ title: 'a bare panel', queries: [{ expr: 'up' }] }),
    /say neither what run figure they must equal/,
  );
});

test("a case that declares no limited status has no limited share to check, its failed share is k6's own, and a status k6 kept no count of has no figure", () => {
  const figs = runFigures(join(root, 'test', 'fixtures', 'results', '20261123-090928-smoke'));
  const id = 'node-smoke';
  for (const figure of ['limitedShare', 'limited'])
    assert.match(figureFor(figs, { figure }, { case: id }).none, /the run has no/, figure);
  // direct-smoke is a case of caching and of json-filter: by case alone, the k6 board adds them up.
  assert.match(
    figureFor(figs, { figure: 'requests' }, { case: 'direct-smoke' }).none,
    /in two experiments of this run/,
  );
  assert.equal(typeof figureFor(figs, { figure: 'requests' }, { case: 'direct-smoke' }, 'json-filter').value, 'number');
  assert.equal(
    figureFor(figs, { figure: 'failedShare' }, { case: id }).value,
    figs.cases.get(id).metrics[`http_req_failed{case:${id}}`].values.rate,
  );
  assert.match(
    figureFor(figs, { figure: 'requests' }, { case: id, status: '204' }).none,
    /the run has no requests figure/,
  );
});
