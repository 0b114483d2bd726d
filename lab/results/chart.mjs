/*
 * A chart as the pages carry it: named series aligned on one x axis (uPlot's columns), the
 * unit, and bands between two series. Built here from [x, y] points; drawn in the browser by
 * client/site.js. How many points each series has is what the browser tests check.
 */

// Grafana's classic palette, in its order.
export const PALETTE = [
  '#7EB26D',
  '#EAB839',
  '#6ED0E0',
  '#EF843C',
  '#E24D42',
  '#1F78C1',
  '#BA43A9',
  '#705DA0',
  '#508642',
  '#CCA300',
  '#447EBC',
  '#C15C17',
  '#890F02',
  '#0A437C',
  '#6D1F62',
  '#584477',
  '#B7DBAB',
  '#F4D598',
  '#70DBED',
  '#F9BA8F',
  '#F29191',
  '#82B5D8',
  '#E5A8E2',
  '#AEA2E0',
];
export const RED = '#F2495C';
export const GREEN = '#73BF69';
export const BAND = 'rgba(115, 191, 105, 0.18)';
export const BAND_LINE = 'rgba(115, 191, 105, 0.55)';

const finite = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/**
 * A chart from series of points. `x`: 'time' (points' x in epoch ms, drawn as time), 'rel'
 * (seconds, e.g. since a case's start) or 'runs' (a run's index; `xLabels` names each run).
 * Each series: {label, points: [[x, y], ...], color?, dash?, line? (false: points only),
 * dots? (draw its points; size? in px), area? (false: no fill under the line), band? (a band's edge:
 * no legend value of its own), unit? (a second
 * axis)}. `xLabel` names a non-time x axis. `spanGaps`: join a series over missing points (not
 * on a board's time series, as Grafana's default; yes where series are aligned on other x).
 * `yZero`: the y axis starts at zero (else it fits the values, as a history needs). `bands`: [[upper
 * series index, lower series index], ...] (indices into `series`).
 * A series may carry `truth` and `labels`, the run figure it must equal (lab/judge/chart-truth.mjs);
 * `noTruth` says why a chart has none.
 */
export function chart({
  id,
  title,
  unit = 'none',
  x = 'time',
  xLabel,
  series,
  bands = [],
  xLabels,
  note,
  height,
  spanGaps = x !== 'time',
  yZero = true,
  noTruth,
}) {
  const scale = x === 'time' ? 1000 : 1;
  const xs = [...new Set(series.flatMap((s) => s.points.map(([t]) => t)))].sort((a, b) => a - b);
  const at = new Map(xs.map((t, i) => [t, i]));
  const data = [xs.map((t) => t / scale)];
  for (const s of series) {
    const ys = xs.map(() => null);
    for (const [t, v] of s.points) ys[at.get(t)] = finite(v);
    data.push(ys);
  }
  const meta = series.map(({ points, ...rest }, i) => ({ color: rest.color || PALETTE[i % PALETTE.length], ...rest }));
  return {
    id,
    title,
    unit,
    x,
    spanGaps,
    yZero,
    ...(xLabel ? { xLabel } : {}),
    series: meta,
    data,
    bands,
    ...(xLabels ? { xLabels } : {}),
    ...(note ? { note } : {}),
    ...(height ? { height } : {}),
    ...(noTruth ? { noTruth } : {}),
  };
}

/** How many points each series of a chart has (what the page must draw), by label. */
export const pointCounts = (spec) =>
  spec.series.map((s, i) => ({ label: s.label, points: spec.data[i + 1].filter((v) => v !== null).length }));

/** A chart id from words: lowercase letters, digits and hyphens, unique within a page. */
export const chartId = (...words) =>
  words
    .join('-')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
