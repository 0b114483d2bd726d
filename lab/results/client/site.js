/*
 * The pages' script (bundled with uPlot by esbuild into the site's assets): draws every chart
 * the page's data file carries, in Grafana's look and units, and filters the runs list. The
 * charts are kept on window.labCharts, where the browser tests read what each one drew.
 */
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import './theme.css';
import { format } from '../units.js';

const AXIS = {
  stroke: '#ccccdc',
  grid: { stroke: 'rgba(204, 204, 220, 0.07)', width: 1 },
  ticks: { stroke: 'rgba(204, 204, 220, 0.12)', width: 1 },
  font: '11px sans-serif',
};
// A run's id as its date and time (MM-DD HH:MM); any other label (a case) as it is.
const runLabel = (id) =>
  /^[0-9]{8}-[0-9]{6}/.test(id || '')
    ? `${id.slice(4, 6)}-${id.slice(6, 8)} ${id.slice(9, 11)}:${id.slice(11, 13)}`
    : id || '';

/** An x range that stays a few units wide around a single point (uPlot would span years). */
const xRange = (u, lo, hi) => (lo == null ? [0, 1] : hi > lo ? [lo, hi] : [lo - 1, hi + 1]);

// Axis steps for bytes: powers of two of B, KiB, MiB, GiB.
const BYTE_INCRS = [0, 1, 2, 3].flatMap((k) => [1, 2, 4, 8, 16, 32, 64, 128, 256, 512].map((n) => n * 1024 ** k));

// A run's label (MM-DD HH:MM at 11 px) takes about 70 px: where n of them would overlap, every k-th run is labelled.
const RUN_LABEL_PX = 80;
const runSplits = (n, widthPx) => {
  const every = Math.max(1, Math.ceil((n * RUN_LABEL_PX) / Math.max(widthPx, 1)));
  return Array.from({ length: n }, (_, i) => i).filter((i) => i % every === 0);
};

// Time as HH:MM:SS UTC, one row: uPlot's own second row (date, then hour) ran into itself where the minute turned.
const utcTime = (v) => (v == null ? '' : new Date(v * 1000).toISOString().slice(11, 19));

/** The x axis and the legend's x value for a chart's kind of x. */
function xOptions(spec) {
  if (spec.x === 'time')
    return {
      scale: { time: true, range: xRange },
      axis: { space: 64, values: (u, splits) => splits.map(utcTime) },
      value: (u, v) => utcTime(v),
    };
  if (spec.x === 'runs') {
    const n = spec.xLabels.length;
    return {
      scale: { time: false, range: () => [-0.5, n - 0.5] },
      axis: {
        splits: (u) => runSplits(n, u.bbox.width / uPlot.pxRatio),
        values: (u, splits) => splits.map((i) => runLabel(spec.xLabels[i])),
      },
      value: (u, v) => (v == null ? '' : spec.xLabels[v] || ''),
    };
  }
  return {
    scale: { time: false, range: xRange },
    axis: { label: spec.xLabel, labelSize: 18, labelFont: '11px sans-serif' },
    value: (u, v) => (v == null ? '' : `${v} (${spec.xLabel})`),
  };
}

/** A y range from zero (or below, for a negative value) to a little above the largest value; or around the values. */
function yRange(lo, hi, zero) {
  if (lo == null || hi == null) return [0, 1];
  const min = zero ? Math.min(0, lo) : lo;
  const pad = hi > min ? (hi - min) * (zero ? 0.05 : 0.15) : Math.max(1, Math.abs(hi) * 0.1);
  return [zero ? min : min - pad, hi + pad];
}

function seriesOptions(s, spec) {
  const unit = s.unit || spec.unit;
  return {
    label: s.label,
    scale: unit,
    stroke: s.color,
    width: s.band ? 1 : 1.5,
    dash: s.dash || s.band ? [5, 4] : undefined,
    fill: s.band || s.line === false || s.area === false ? undefined : `${s.color}1a`,
    spanGaps: s.band || spec.spanGaps,
    paths: s.line === false ? () => null : undefined,
    // Points where asked, none on a band's edges; else uPlot's own rule (shown where sparse).
    points:
      s.dots || s.line === false
        ? { show: true, size: s.size || 7, fill: s.color, stroke: s.color }
        : { ...(s.band ? { show: false } : {}), size: 5, fill: s.color, stroke: s.color },
    value: (u, v) => format(unit, v),
  };
}

function draw(spec, el) {
  const x = xOptions(spec);
  const units = [...new Set([spec.unit, ...spec.series.map((s) => s.unit || spec.unit)])];
  const scales = { x: x.scale };
  for (const unit of units) scales[unit] = { auto: true, range: (u, lo, hi) => yRange(lo, hi, spec.yZero) };
  const axes = [
    { ...AXIS, ...x.axis },
    ...units.map((unit, i) => ({
      ...AXIS,
      scale: unit,
      side: i ? 1 : 3,
      size: 78,
      values: (u, splits) => splits.map((v) => format(unit, v)),
      grid: i ? { show: false } : AXIS.grid,
      ...(unit === 'bytes' ? { incrs: BYTE_INCRS } : {}),
    })),
  ];
  const opts = {
    width: Math.max(300, el.clientWidth),
    height: spec.height || 240,
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
    scales,
    axes,
    series: [
      { label: spec.x === 'time' ? 'time (UTC)' : spec.xLabel || 'x', value: x.value },
      ...spec.series.map((s) => seriesOptions(s, spec)),
    ],
    bands: spec.bands.map(([hi, lo]) => ({ series: [hi + 1, lo + 1], fill: spec.series[hi].fill })),
    legend: { live: true },
    cursor: { points: { size: 6 }, drag: { x: true, y: false } },
  };
  const u = new uPlot(opts, spec.data, el);
  new ResizeObserver(() => u.setSize({ width: Math.max(300, el.clientWidth), height: opts.height })).observe(el);
  return u;
}

const charts = [];
window.labCharts = charts;
for (const spec of window.LAB_PAGE?.charts || []) {
  const el = document.getElementById(`chart-${spec.id}`);
  if (!el) throw new Error(`the page has no place for chart ${spec.id}`);
  charts.push({ id: spec.id, u: draw(spec, el) });
}

// The runs list: show the rows of the chosen suite and experiment.
const suite = document.getElementById('filter-suite');
const experiment = document.getElementById('filter-experiment');
function filterRuns() {
  const rows = [...document.querySelectorAll('tr[data-run]')];
  let shown = 0;
  for (const r of rows) {
    const ok =
      (!suite.value || r.dataset.suite === suite.value) &&
      (!experiment.value || r.dataset.experiments.includes(` ${experiment.value} `));
    r.hidden = !ok;
    shown += ok ? 1 : 0;
  }
  document.getElementById('filter-count').textContent = `${shown} of ${rows.length} runs`;
}
if (suite && experiment) {
  suite.addEventListener('change', filterRuns);
  experiment.addEventListener('change', filterRuns);
  filterRuns();
}
