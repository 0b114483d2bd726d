/*
 * The dashboards, proven without a Grafana server: every panel's queries are executed against
 * the live stores for one run, with the variables set to that run (testid, every case) and
 * Grafana's macros expanded as Grafana does for the ones the dashboards use.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { panelRequirements, panelTruths } from '../../dashboards/src/boards.mjs';

const SCRAPE_S = 1; // the datasources' timeInterval (provisioning) and Prometheus's scrape interval

/** Grafana's macros for a time range: $__interval from ~1000 points, never under the scrape interval. */
export function macros({ fromMs, toMs, testid }) {
  const rangeS = Math.max(1, Math.round((toMs - fromMs) / 1000));
  const intervalS = Math.max(SCRAPE_S, Math.ceil(rangeS / 1000));
  return {
    $__rate_interval: `${Math.max(intervalS + SCRAPE_S, 4 * SCRAPE_S)}s`,
    $__interval: `${intervalS}s`,
    $__interval_ms: String(intervalS * 1000),
    $__range: `${rangeS}s`,
    $timeFilter: `time >= ${fromMs}ms AND time <= ${toMs}ms`,
    $testid: testid,
    // The compare board's second run: the same run, for a check.
    $baseline: testid,
    $case: '.*',
    intervalS,
  };
}

export const expand = (text, m) =>
  text.replace(
    /\$(__rate_interval|__interval_ms|__interval|__range|timeFilter|testid|baseline|case)\b/g,
    (all) => m[all],
  );

async function getJson(url) {
  const res = await fetch(url, { signal: AbortSignal.timeout(15_000) });
  const body = await res.json().catch(() => ({}));
  if (!res.ok || body.status === 'error' || body.results?.[0]?.error) {
    throw new Error(body.error || body.results?.[0]?.error || `status ${res.status}`);
  }
  return body;
}

/** The metric names a PromQL expression selects by name (`name{...}`). */
export const metricNames = (expr) => [...new Set([...expr.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\{/g)].map((x) => x[1]))];

/**
 * Every metric a query names must exist in the run's window: a query can return data while
 * naming a metric that is not there (`a or (0 * b)`), and that panel is broken all the same.
 */
async function missingMetrics(expr, urls, { fromMs, toMs }, optional = []) {
  const missing = [];
  for (const name of metricNames(expr).filter((n) => !optional.includes(n))) {
    const r = await getJson(
      `${urls.prometheus}/api/v1/series?match[]=${encodeURIComponent(name)}&start=${fromMs / 1000}&end=${toMs / 1000}`,
    );
    if (!r.data.length) missing.push(name);
  }
  return missing;
}

/** Runs one target; returns {query, series, points}. */
async function runTarget(target, urls, m, { fromMs, toMs }, optional) {
  if (target.datasource?.type === 'influxdb') {
    const query = expand(target.query, m);
    const db = target.datasource.uid === 'lab-influxdb-forwarded' ? urls.forwarded : urls.database;
    const r = await getJson(`${urls.influx}/query?db=${db}&epoch=ms&q=${encodeURIComponent(query)}`);
    const series = r.results[0].series || [];
    const data = series.map((x) => ({ labels: x.tags || {}, name: x.name, columns: x.columns, points: x.values }));
    return { query, series: series.length, points: series.reduce((n, x) => n + x.values.length, 0), data };
  }
  const query = expand(target.expr, m);
  const missing = await missingMetrics(query, urls, { fromMs, toMs }, optional);
  if (missing.length) throw new Error(`no such metric in the run's window: ${missing.join(', ')}`);
  if (target.instant) {
    const r = await getJson(`${urls.prometheus}/api/v1/query?time=${toMs / 1000}&query=${encodeURIComponent(query)}`);
    const data = r.data.result.map((x) => ({ labels: x.metric, points: [[x.value[0] * 1000, Number(x.value[1])]] }));
    return { query, series: r.data.result.length, points: r.data.result.length, data };
  }
  // The steps counted back from the run's end, so that the last point is the end itself: the
  // judged figures, written once as the run ends, fall in the lookback of a point whatever the
  // run's length (counted from its start, the last point could fall before them).
  const steps = Math.ceil((toMs - fromMs) / 1000 / m.intervalS);
  const r = await getJson(
    `${urls.prometheus}/api/v1/query_range?start=${toMs / 1000 - steps * m.intervalS}&end=${toMs / 1000}&step=${m.intervalS}&query=${encodeURIComponent(query)}`,
  );
  // [epoch ms, value] per point; Prometheus writes NaN and infinities as strings.
  const data = r.data.result.map((x) => ({
    labels: x.metric,
    points: x.values.map(([t, v]) => [t * 1000, Number(v)]),
  }));
  return { query, series: r.data.result.length, points: r.data.result.reduce((n, x) => n + x.values.length, 0), data };
}

/**
 * Checks the dashboards against a run ({testid, fromMs, toMs, suite, experiments, cgroups}): per dashboard,
 * panel and query, the query run and how many series and points it returned (lab/cli/panels.mjs
 * prints them); a panel that returns no data fails.
 * Boards of an experiment the run did not include, and panels that need another suite, are
 * listed as skipped, with the reason.
 */
/** Why a panel is not queried for this run (another experiment's board, a store or suite it needs), or null. */
function skippedBecause(run, experiment, panel, needs) {
  if (experiment && !run.experiments.includes(experiment)) return `the run has no ${experiment} cases`;
  if (panel.datasource?.uid === 'lab-influxdb' && run.influx === false)
    return "this run's experiments stream to Prometheus only";
  if (needs.suite && needs.suite !== run.suite) return `only ${needs.suite} runs fill it`;
  if (needs.cgroups && !run.cgroups) return 'the run put no service in a cgroup (only capped experiments do)';
  return null;
}

/**
 * A truth with `held` (an InfluxQL query of one value per case over the whole run: what InfluxDB
 * holds of k6's own points) with that query's answer, {case: value}, beside it: the chart is
 * judged against what the store holds, and that against the run (lab/judge/chart-truth.mjs).
 */
async function resolvedTruth(truth, urls, m) {
  if (!truth?.held) return truth;
  const r = await getJson(`${urls.influx}/query?db=${urls.database}&q=${encodeURIComponent(expand(truth.held, m))}`);
  const byCase = Object.fromEntries((r.results[0].series || []).map((x) => [x.tags.case, x.values[0][1]]));
  return { ...truth, heldByCase: byCase };
}

/** One query of a panel run: its series and points (ok with both), or the store's error. */
async function queryResult(base, target, { urls, m, run, needs, truths }) {
  try {
    const r = await runTarget(target, urls, m, run, needs.optional);
    return {
      ...base,
      refId: target.refId,
      legend: target.legendFormat ?? target.alias,
      truth: await resolvedTruth(truths[base.panel]?.[target.refId], urls, m),
      ...r,
      ok: r.series > 0 && r.points > 0,
    };
  } catch (e) {
    return { ...base, refId: target.refId, query: expand(target.expr || target.query, m), error: e.message, ok: false };
  }
}

export async function checkPanels(root, urls, run) {
  const m = macros(run);
  const requires = panelRequirements();
  // Each query's result keeps the truth declared for it (the run figure its series must equal),
  // so that whoever reads panels.json later judges the data by what its query meant then.
  const truths = panelTruths();
  const results = [];
  const dir = join(root, 'dashboards');
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()) {
    const board = JSON.parse(readFileSync(join(dir, file), 'utf8'));
    const experiment = board.tags.find((t) => run.allExperiments.includes(t));
    for (const panel of board.panels.filter((p) => p.type !== 'row')) {
      const base = {
        board: board.title,
        uid: board.uid,
        panel: panel.title,
        panelId: panel.id,
        unit: panel.fieldConfig?.defaults?.unit,
        type: panel.type,
        ...(panel.description ? { description: panel.description } : {}),
      };
      const needs = requires[panel.title] || {};
      const skipped = skippedBecause(run, experiment, panel, needs);
      if (skipped) {
        results.push({ ...base, skipped });
        continue;
      }
      for (const target of panel.targets)
        results.push(await queryResult(base, target, { urls, m, run, needs, truths }));
    }
  }
  return results;
}
