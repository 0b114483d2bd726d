/*
 * Two runs side by side: per experiment both have, their overviews overlaid (seconds from each
 * experiment's start; the baseline dashed), and per case every judged measure in both runs,
 * the expected range and which side of it each fell.
 */
import { differences as unlikeness } from './run-kind.mjs';
import { boardPanels, panelSeries, byCase } from './boards.mjs';
import { rangesOf, sideOf } from './cases.mjs';
import { resultKind } from './kinds.mjs';
import { chart, chartId, PALETTE } from './chart.mjs';
import { format } from './units.js';
import { esc, mark, table, page, section, panel } from './layout.mjs';

export const comparePath = (a, b) => `compare/${a}.vs.${b}.html`;

const SUMMED = ['reqps', 'none'];
// The baseline's colours, apart from the run's (Grafana's classic palette).
const BASELINE = ['#8AB8FF', '#FF9830', '#CA95E5', '#F2CC0C', '#5794F2'];

/**
 * A panel's series of one run, merged into one per status (or one in all): summed counts, the largest
 * latency or share.
 */
function merged(p, exp, label) {
  const series = panelSeries(p, { ...exp.k6Window, keep: byCase(exp.cases.map((c) => c.id)) });
  const groups = new Map();
  const sizes = new Map();
  for (const s of series) {
    const key = s.labels.status ?? '';
    if (!groups.has(key)) groups.set(key, new Map());
    sizes.set(key, (sizes.get(key) || 0) + 1);
    const g = groups.get(key);
    for (const [t, v] of s.points) {
      if (v === null || !Number.isFinite(v)) continue;
      const x = Math.round((t - exp.k6Window.fromMs) / 1000);
      g.set(x, g.has(x) ? (SUMMED.includes(p.unit) ? g.get(x) + v : Math.max(g.get(x), v)) : v);
    }
  }
  return [...groups].map(([key, g]) => ({
    label: `${label}${key ? ` ${key}` : ''}`,
    points: [...g].sort((x, y) => x[0] - y[0]),
    merged: sizes.get(key),
  }));
}

/** The overview panels of both runs for one experiment, overlaid. */
function overlays(a, b, name) {
  const ea = a.experiments.find((e) => e.name === name);
  const eb = b.experiments.find((e) => e.name === name);
  return boardPanels(a.panels, 'lab-k6-run').map((p) => {
    const pb = boardPanels(b.panels, 'lab-k6-run').find((x) => x.panel === p.panel);
    const sa = merged(p, ea, 'run');
    const sb = pb ? merged(pb, eb, 'baseline') : [];
    const how = [...sa, ...sb].some((s) => s.merged > 1)
      ? ` (${SUMMED.includes(p.unit) ? 'summed' : 'largest'} over cases)`
      : '';
    const series = [
      ...sa.map((s, i) => ({ ...s, color: PALETTE[i % PALETTE.length] })),
      ...sb.map((s, i) => ({ ...s, color: BASELINE[i % BASELINE.length], dash: true })),
    ].map(({ merged: _, ...s }) => s);
    if (!series.length) return { title: p.panel, empty: 'no data in either run' };
    return {
      title: `${p.panel}${how}`,
      chart: chart({
        id: chartId('compare', name, String(p.panelId), p.panel),
        title: p.panel,
        unit: p.unit,
        x: 'rel',
        xLabel: "s from the experiment's k6 start",
        series,
      }),
    };
  });
}

/** A case's judged figures, from the outcome's own (runs made since outcomes carry them). */
const figuresOf = (o) =>
  o.figures.map((f) => ({
    measure: f.measure,
    lo: f.lo,
    hi: f.hi,
    value: f.measured,
    side: sideOf(f.measured, f.lo, f.hi),
  }));

/**
 * The rows of the figures beside a case's key measure: those by the same names on both sides
 * (the outcomes' own where both carry them), but the key measure again.
 */
function otherRows(oa, ob, ka, kb) {
  const both = Boolean(oa?.figures && ob?.figures);
  const ra = both ? figuresOf(oa) : rangesOf(oa);
  const rb = both ? figuresOf(ob) : rangesOf(ob);
  const same = (r, k) => r && k && r.value === k.value && r.lo === k.lo && r.hi === k.hi;
  const rows = [];
  for (const m of [...new Set([...ra, ...rb].map((r) => r.measure))]) {
    const x = ra.find((r) => r.measure === m);
    const y = rb.find((r) => r.measure === m);
    if ((same(x, ka) || !x) && (same(y, kb) || !y)) continue; // the key measure again
    rows.push({
      measure: m,
      unit: unitOf(m),
      a: x && { value: x.value, lo: x.lo, hi: x.hi },
      b: y && { value: y.value, lo: y.lo, hi: y.hi },
      sideA: x?.side ?? '-',
      sideB: y?.side ?? '-',
    });
  }
  return rows;
}

/** Per case and measure: [case, measure, a, b, change, expected, side a, side b, pass a, pass b]. */
function differences(a, b, name) {
  const ea = a.experiments.find((e) => e.name === name);
  const eb = b.experiments.find((e) => e.name === name);
  const kind = resultKind(ea?.kindName ?? eb?.kindName);
  const names = [...new Set([...(ea?.outcomes || []), ...(eb?.outcomes || [])].map((o) => o.case))];
  return names.flatMap((n) => {
    const oa = ea?.outcomes.find((o) => o.case === n);
    const ob = eb?.outcomes.find((o) => o.case === n);
    const key = (o, e) =>
      o
        ? kind.keyMeasure(
            o,
            e.cases.find((c) => c.name === n),
          )
        : null;
    const ka = key(oa, ea);
    const kb = key(ob, eb);
    const side = (k) => (k ? sideOf(k.value, k.lo, k.hi) : '-');
    const first = {
      measure: (ka || kb)?.measure ?? '-',
      unit: (ka || kb)?.unit ?? 'none',
      a: ka,
      b: kb,
      sideA: side(ka),
      sideB: side(kb),
    };
    return [first, ...otherRows(oa, ob, ka, kb)].map((r, i) => ({
      case: n,
      first: i === 0,
      passA: oa ? oa.pass : null,
      passB: ob ? ob.pass : null,
      ...r,
    }));
  });
}

/** A measure's unit by the lab's naming of outcome figures (maxMs, errorRate, limitedShare; 'max wait ms'). */
const unitOf = (m) => (/(Ms| ms)$/.test(m) ? 'ms' : /(Rate|Share| share)$/.test(m) ? 'percentunit' : 'none');

/** A range in the same unit as the values beside it. */
const rangeText = (k, unit) => {
  if (!k || (k.lo == null && k.hi == null)) return '-';
  const f = (v) => format(unit, v);
  if (k.lo == null) return `<= ${f(k.hi)}`;
  return k.hi == null ? `>= ${f(k.lo)}` : `${f(k.lo)} .. ${f(k.hi)}`;
};
const change = (r) => {
  if (typeof r.a?.value !== 'number' || typeof r.b?.value !== 'number') return '-';
  const d = r.a.value - r.b.value;
  return `${d >= 0 ? '+' : ''}${format(r.unit, d)}${r.b.value ? ` (${d >= 0 ? '+' : ''}${((d / r.b.value) * 100).toFixed(1)} %)` : ''}`;
};

/** The compare page of run `a` against `b` (both read with their panels). */
export function comparePage(a, b) {
  const charts = [];
  const names = a.info.experiments.filter((e) => b.info.experiments.includes(e));
  const unlike = names.flatMap((n) => unlikeness(a.info, b.info, n).map((d) => `${n}: ${d}`));
  const warn = unlike.length
    ? `<p class="notice" data-unlike>Not alike, so differences are expected: ${esc(unlike.join('; '))}.</p>`
    : '';
  const sections = names.map((name) => {
    const views = a.panels && b.panels ? overlays(a, b, name) : [];
    for (const v of views) if (v.chart) charts.push(v.chart);
    const diffs = differences(a, b, name);
    const rows = diffs.map((r) => [
      r.first ? esc(r.case) : '',
      esc(r.measure),
      esc(format(r.unit, r.a?.value)),
      esc(format(r.unit, r.b?.value)),
      esc(change(r)),
      esc(
        rangeText(r.a, r.unit) === rangeText(r.b, r.unit)
          ? rangeText(r.a, r.unit)
          : `${rangeText(r.a, r.unit)} / ${rangeText(r.b, r.unit)}`,
      ),
      esc(r.sideA),
      esc(r.sideB),
      r.first ? mark(r.passA) : '',
      r.first ? mark(r.passB) : '',
    ]);
    const attrs = (x, i) =>
      (diffs[i].first ? ` data-case="${esc(diffs[i].case)}" data-pass="${diffs[i].passA}"` : '') +
      (diffs[i].sideA !== diffs[i].sideB ? ' class="bad"' : '');
    const over = views.length
      ? `<div class="grid">${views.map((v) => panel(v)).join('\n')}</div>`
      : `<p class="notice">${esc(`No overlay: ${a.panels ? b.id : a.id} has no boards' data (panels.json).`)}</p>`;
    return section(
      `exp-${name}`,
      name,
      `${over}<h3>Per case</h3>${table(['case', 'measure', 'run', 'baseline', 'change', 'expected (run / baseline)', 'side (run)', 'side (baseline)', 'pass (run)', 'pass (baseline)'], rows, { cls: 'compact', attrs })}`,
    );
  });
  const body = `<p class="lead">run <a href="../runs/${esc(a.id)}/index.html">${esc(a.id)}</a> (solid) against baseline <a href="../runs/${esc(b.id)}/index.html">${esc(b.id)}</a> (dashed).</p>${warn}${sections.join('\n')}`;
  const file = comparePath(a.id, b.id);
  return {
    path: file,
    html: page({
      title: `${a.id} vs ${b.id}`,
      depth: 1,
      crumbs: [`<a href="../runs/${esc(a.id)}/index.html">${esc(a.id)}</a>`, 'compare'],
      tabs: names.map((n) => [`exp-${n}`, n]),
      body,
      dataFile: `${a.id}.vs.${b.id}.data.js`,
    }),
    data: { charts },
  };
}
