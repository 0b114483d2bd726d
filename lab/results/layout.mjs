/*
 * The frame every page of the results site shares: the document with its assets and its data
 * file (relative paths, so the site works from file://), the top bar, and the few pieces of
 * markup the pages repeat (escaped text, tables, pass marks, panels with a chart or a table).
 */
import { format } from './units.js';
import { escapeHtml } from '../lib.mjs';

export const esc = escapeHtml;

/** A pass mark: ok, FAIL, or '-' for a figure shown, not judged. */
export const mark = (pass) =>
  pass === null || pass === undefined
    ? '<span class="mark">-</span>'
    : pass
      ? '<span class="mark ok">ok</span>'
      : '<span class="mark fail">FAIL</span>';

/** A terminal table's verdict word as a mark: ok, FAIL (FAIL or LOST), shown; '-' for any other. */
export const wordMark = (word) =>
  word === 'shown' ? '<span class="mark">shown</span>' : mark({ ok: true, FAIL: false, LOST: false }[word] ?? null);

/** A table; cells are HTML already (escape text with esc). `attrs(row, i)` adds attributes to a row. */
export function table(head, rows, { cls = '', attrs = () => '' } = {}) {
  if (!rows.length) return '<p class="muted">none</p>';
  const th = head.map((h) => `<th>${h}</th>`).join('');
  const trs = rows.map((r, i) => `<tr${attrs(r, i)}>${r.map((c) => `<td>${c ?? ''}</td>`).join('')}</tr>`).join('\n');
  return `<div class="table-wrap"><table class="${cls}"><thead><tr>${th}</tr></thead><tbody>\n${trs}\n</tbody></table></div>`;
}

export const utc = (ms) => (ms == null ? '-' : new Date(ms).toISOString().replace('T', ' ').slice(0, 19));
export const duration = (ms) =>
  ms == null
    ? '-'
    : ms >= 60_000
      ? `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`
      : `${(ms / 1000).toFixed(1)} s`;

/** A board panel: its chart's place (drawn by the page's script), a table, or why it is empty. */
export function panel(view, { wide = false } = {}) {
  const cls = `panel${wide ? ' wide' : ''}`;
  const head = `<div class="panel-title">${esc(view.title)}</div>`;
  if (view.chart)
    return `<div class="${cls}">${head}<div class="chart" id="chart-${view.chart.id}" data-chart="${view.chart.id}"></div>${view.chart.note ? `<div class="note">${esc(view.chart.note)}</div>` : ''}</div>`;
  if (view.table) {
    const n = view.table.labels;
    const rows = view.table.rows.map((r) => [
      ...r.slice(0, n).map(esc),
      ...r.slice(n).map((v) => esc(format(view.unit, v))),
    ]);
    return `<div class="${cls}">${head}${table(view.table.head.map(esc), rows, { cls: 'compact' })}</div>`;
  }
  return `<div class="${cls} empty">${head}<div class="no-data">No data <span class="muted">(${esc(view.empty)})</span></div></div>`;
}

/** A section with an anchor, for the page's tab bar. */
export const section = (id, title, body, intro = '') =>
  `<section id="${id}"><h2>${esc(title)}</h2>${intro ? `<p class="muted">${intro}</p>` : ''}${body}</section>`;

/** Panels in Grafana's two-column grid. */
// A table takes the grid's whole row: half a row cut its last columns ("open files (pea").
export const grid = (views) =>
  `<div class="grid">${views.map((v) => panel(v, { wide: Boolean(v.table) })).join('\n')}</div>`;

/**
 * A whole page. `depth`: how far below the site's root it is; `tabs`: [[anchor, label]];
 * `data`: the page's charts and figures, written beside it as <file>.data.js and read by the
 * page's script (no fetch: it works from file://).
 */
export function page({ title, depth = 0, crumbs = [], tabs = [], body, dataFile = null }) {
  const up = '../'.repeat(depth);
  const trail = [`<a href="${up}index.html">runs</a>`, ...crumbs].join(' <span class="sep">/</span> ');
  const tabBar = tabs.length
    ? `<nav class="tabs">${tabs.map(([id, label]) => `<a href="#${id}">${esc(label)}</a>`).join('')}</nav>`
    : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)} · lab results</title>
<link rel="stylesheet" href="${up}assets/site.css">
</head>
<body>
<header class="top"><span class="logo">proxy-policy-lab</span> <span class="crumbs">${trail}</span></header>
${tabBar}
<main>
<h1>${esc(title)}</h1>
${body}
</main>
${dataFile ? `<script src="${esc(dataFile)}"></script>\n` : ''}<script src="${up}assets/site.js"></script>
</body>
</html>
`;
}

/** The data file's text: one assignment the page's script reads. */
export const dataScript = (data) => `window.LAB_PAGE = ${JSON.stringify(data)};\n`;
