/*
 * The Grafana boards drawn from a run's panels.json (what each panel's queries returned for the
 * run): per panel a chart (time series) or a table, cut to one experiment's window and its
 * series, with each series named as the panel's legend names it.
 */
import { chart, chartId } from './chart.mjs';

/** A series' name from the panel's legend format ({{label}} for Prometheus, $tag_x for InfluxQL). */
export function legendName(legend, labels) {
  const all =
    Object.entries(labels)
      .map(([k, v]) => `${k}="${v}"`)
      .join(', ') || 'value';
  if (!legend) return all;
  const name = legend
    .replace(/\{\{\s*(\w+)\s*\}\}/g, (_, k) => labels[k] ?? '')
    .replace(/\$tag_(\w+)/g, (_, k) => labels[k] ?? '')
    .trim();
  return name || all;
}

/**
 * panels.json's entries (one per query) as panels: {board, uid, panel, panelId, unit, type, targets},
 * in the board's order.
 */
export function boardPanels(entries, uid) {
  const out = [];
  for (const e of (entries || []).filter((x) => x.uid === uid)) {
    let p = out.find((x) => x.panelId === e.panelId && x.panel === e.panel);
    if (!p) {
      p = {
        board: e.board,
        uid: e.uid,
        panel: e.panel,
        panelId: e.panelId,
        unit: e.unit || 'none',
        type: e.type,
        description: e.description,
        targets: [],
      };
      out.push(p);
    }
    p.targets.push(e);
  }
  return out;
}

/** A panel's series within a window, kept by `keep(labels)`: [{label, labels, refId, points}]. */
export function panelSeries(p, { fromMs = -Infinity, toMs = Infinity, keep = () => true } = {}) {
  return p.targets.flatMap((t) =>
    (t.data || [])
      .filter((d) => keep(d.labels || {}))
      .map((d) => ({
        label: legendName(t.legend, d.labels || {}),
        labels: d.labels || {},
        refId: t.refId,
        points: d.points.filter(([x]) => x >= fromMs && x <= toMs),
      }))
      .filter((s) => s.points.length),
  );
}

/** Why a panel has nothing to draw: skipped by the run, its query failed, or nothing in this window. */
function emptyReason(p) {
  const t = p.targets.find((x) => x.skipped || x.error);
  if (t?.skipped) return `skipped: ${t.skipped}`;
  if (t?.error) return `its query failed: ${t.error}`;
  return "no data in this experiment's window";
}

/**
 * A table panel as Grafana shows it after merging its queries: a column per label, then one
 * value column per query (named by its legend, or 'Value #A' where the legend is a template).
 * Rows: [label values..., numbers...]; `labels` says how many cells are labels.
 */
function tableOf(p, series) {
  const refs = [...new Set(p.targets.map((t) => t.refId))];
  const keys = [...new Set(series.flatMap((s) => Object.keys(s.labels)))];
  const name = (t) =>
    refs.length === 1 ? 'Value' : t.legend && !/\{\{|\$tag_/.test(t.legend) ? t.legend : `Value #${t.refId}`;
  const rows = new Map();
  for (const s of series) {
    const key = keys.map((k) => s.labels[k] ?? '').join('\u0000');
    if (!rows.has(key)) rows.set(key, { labels: keys.map((k) => s.labels[k] ?? ''), values: {} });
    rows.get(key).values[s.refId] = s.points[s.points.length - 1][1];
  }
  return {
    head: [...keys, ...refs.map((r) => name(p.targets.find((t) => t.refId === r)))],
    labels: keys.length,
    rows: [...rows.values()].map((r) => [...r.labels, ...refs.map((x) => r.values[x] ?? null)]),
  };
}

/**
 * A board's panels for a page: {title, unit, chart | table | empty}. `keep` picks the series
 * (an experiment's cases, its services), `window` the time range; `dropEmpty` leaves out the
 * panels with nothing to draw (a shared board cut to one experiment).
 */
export function boardViews(entries, uid, { window = {}, keep, prefix = uid, dropEmpty = false } = {}) {
  return boardPanels(entries, uid)
    .map((p) => {
      // A table's queries are instant, at the run's end, over the whole run: no window to cut.
      const series = panelSeries(p, p.type === 'table' ? { keep } : { ...window, keep });
      const base = { title: p.panel, unit: p.unit, panelId: p.panelId };
      if (!series.length) return { ...base, empty: emptyReason(p) };
      if (p.type === 'table') return { ...base, table: tableOf(p, series) };
      // What each query's series must equal among the run's figures, as declared when it ran
      // (panels.json keeps it), carried onto the chart for the truth check (lab/judge/chart-truth.mjs).
      const declared = Object.fromEntries(p.targets.filter((t) => t.truth).map((t) => [t.refId, t.truth]));
      const none =
        Object.values(declared).find((t) => t.none)?.none ??
        (p.targets.some((t) => t.truth) ? null : 'its panels.json entry predates the truth declarations');
      const carry = (s) =>
        declared[s.refId] && !declared[s.refId].none ? { truth: declared[s.refId], labels: s.labels } : {};
      return {
        ...base,
        chart: chart({
          id: chartId(prefix, String(p.panelId), p.panel),
          title: p.panel,
          unit: p.unit,
          series: series.map((s) => ({ label: s.label, points: s.points, ...carry(s) })),
          ...(none ? { noTruth: none } : {}),
          ...(p.description ? { note: p.description } : {}),
        }),
      };
    })
    .filter((v) => !(dropEmpty && v.empty));
}

/**
 * Keep a series whose labels name one of `cases` (or have no case label at all, when `caseless`), of
 * `experiment` where it says.
 */
export const byCase =
  (cases, { caseless = true, experiment = null } = {}) =>
  (labels) => {
    // A series of another experiment (VUs by experiment) is not this one's.
    if (experiment && labels.experiment !== undefined && labels.experiment !== experiment) return false;
    return labels.case === undefined ? caseless : cases.includes(labels.case);
  };

/** Keep a series of one of `services` (process-exporter's groupname, the cgroups' name, or service). */
export const byService = (services) => (labels) => {
  const s = labels.groupname ?? labels.name ?? labels.service;
  return s === undefined || services.includes(s);
};
