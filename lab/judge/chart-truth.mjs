/*
 * Do the charts say what the run measured? Each board panel's query declares which of the run's
 * own figures its series must equal (dashboards/src: `truth`, or `noTruth` and why), and each
 * chart of the run pages carries the same declaration on its series. This module reads those
 * figures from the run folder (counts.json, the summaries, the plans, outcomes.json),
 * reads each series as its declaration says (its last value, its sum, its integral over time,
 * its largest, its count of points) and compares, series by series.
 *
 * The figures, by name (all times in ms):
 *   requests (by case, or case and status), accepted (200), limited (the policy's status),
 *   failed (statuses the policy does not allow), failedShare and limitedShare (of all answers),
 *   proxyAccepted and proxyLimited (what the proxy counted), maxMs (k6's longest answer
 *   time), lateMaxMs (k6 late against the schedule), expectedMaxWaitMs (the plan's model),
 *   dropped (iterations), vus and vusMax (each experiment's largest), summary (any of k6's summary
 *   sub-metrics: metric, stat, tags from the series' labels), outcome (a judged figure's field).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const json = (file, fallback) => (existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : fallback);

// Counts and shares are exact; the slack is floating point only (a per-second value times its step).
const RELATIVE_SLACK = 1e-9;

/** The run's own figures, from its folder. */
export function runFigures(dir) {
  const files = readdirSync(dir);
  const cases = new Map(); // case id -> {experiment, plan case, metrics}
  const byExperiment = new Map(); // experiment/case id -> the same
  const twice = new Set();
  const experiments = {}; // experiment -> {vus, vusMax}: the largest of its phases
  for (const f of files.filter((x) => x.endsWith('.plan.json'))) {
    const plan = json(join(dir, f));
    const summary = json(join(dir, f.replace(/\.plan\.json$/, '.summary.json')), { metrics: {} });
    const metrics = summary.metrics || {};
    const e = (experiments[plan.experiment] ??= { vus: 0, vusMax: 0 });
    e.vus = Math.max(e.vus, metrics.vus?.values?.max ?? 0);
    e.vusMax = Math.max(e.vusMax, metrics.vus_max?.values?.max ?? 0);
    for (const c of plan.cases || []) {
      if (cases.has(c.id) && cases.get(c.id).experiment !== plan.experiment) twice.add(c.id);
      cases.set(c.id, { experiment: plan.experiment, plan: c, metrics });
      byExperiment.set(`${plan.experiment}/${c.id}`, cases.get(c.id));
    }
  }
  const counts = new Map();
  for (const r of json(join(dir, 'counts.json'), [])) counts.set(`${r.case}|${r.status}`, r);
  return {
    cases,
    byExperiment,
    experimentNames: new Set(Object.keys(experiments)),
    twice,
    counts,
    outcomes: json(join(dir, 'outcomes.json'), []),
    experiments,
  };
}

/** A summary sub-metric's values by metric name and tags, whatever order k6 wrote the tags in. */
export function summaryValues(metrics, metric, tags) {
  const want = Object.entries(tags)
    .map(([k, v]) => `${k}:${v}`)
    .sort()
    .join(',');
  for (const [key, m] of Object.entries(metrics)) {
    const at = key.indexOf('{');
    if (
      at < 0
        ? key !== metric || want !== ''
        : key.slice(0, at) !== metric ||
          key
            .slice(at + 1, -1)
            .split(',')
            .sort()
            .join(',') !== want
    )
      continue;
    return m.values;
  }
  return null;
}

const countOf = (figs, kase, status, column = 'k6') => {
  const r = figs.counts.get(`${kase.experiment}/${kase.id}|${status}`);
  return r && /^\d+$/.test(String(r[column])) ? Number(r[column]) : null;
};

/**
 * A case's answers with one status (or 'all'): counts.json's k6 column, else k6's summary; null
 * where the run has neither (a status k6's summary keeps no sub-metric of).
 */
function requestsOf(figs, kase, status) {
  const counted = countOf(figs, kase, status);
  if (counted !== null) return counted;
  const tags = status === 'all' ? { case: kase.id } : { case: kase.id, status };
  return summaryValues(kase.metrics, 'http_reqs', tags)?.count ?? null;
}

/**
 * What the policy does not allow: for a case that declares its limited status (the k6 scripts
 * declare 200 and it expected), all less those; else k6's own unexpected_status count where the
 * summary has it. Null where the run cannot say.
 */
function failedOf(figs, k) {
  if (k.plan.limitedStatus) {
    const [all, ok, limited] = ['all', '200', String(k.plan.limitedStatus)].map((s) => requestsOf(figs, k, s));
    if (all !== null && ok !== null && limited !== null) return all - ok - limited;
  }
  return summaryValues(k.metrics, 'unexpected_status', { case: k.id })?.count ?? null;
}

const ofCase = {
  requests: (figs, k, labels) => requestsOf(figs, k, labels.status ?? 'all'),
  accepted: (figs, k) => requestsOf(figs, k, '200'),
  limited: (figs, k) => (k.plan.limitedStatus ? requestsOf(figs, k, String(k.plan.limitedStatus)) : null),
  failed: failedOf,
  // k6's own share where its summary keeps one for the case, else from the counts.
  failedShare: (figs, k) =>
    summaryValues(k.metrics, 'http_req_failed', { case: k.id })?.rate ??
    ratio(failedOf(figs, k), requestsOf(figs, k, 'all')),
  limitedShare: (figs, k) => (k.plan.limitedStatus ? ratio(ofCase.limited(figs, k), requestsOf(figs, k, 'all')) : null),
  proxyAccepted: (figs, k) => countOf(figs, k, '200', 'proxy'),
  proxyLimited: (figs, k) => countOf(figs, k, String(k.plan.limitedStatus), 'proxy'),
  maxMs: (figs, k) => summaryValues(k.metrics, 'http_req_duration', { case: k.id })?.max ?? null,
  lateMaxMs: (figs, k) => summaryValues(k.metrics, 'lab_arrival_late_ms', { case: k.id })?.max ?? null,
  expectedMaxWaitMs: (figs, k) => k.plan.model?.maxDelayMs?.max ?? null,
  dropped: (figs, k) => summaryValues(k.metrics, 'dropped_iterations', { scenario: k.id })?.count ?? null,
};

function ratio(part, all) {
  if (part === null || all === null || all === 0) return null;
  return part / all;
}

// Figures that runs made before a change declared, and why they hold no chart to anything now.
const RETIRED = {
  p95: "a bound that does not hold: the slowest series's percentile can lie below the case's own (k6 interpolates)",
  p99: "a bound that does not hold: the slowest series's percentile can lie below the case's own (k6 interpolates)",
};

// Figures that are counts: a chart with no line for one says none were counted.
const COUNTS = new Set(['requests', 'accepted', 'limited', 'failed', 'proxyAccepted', 'proxyLimited', 'dropped']);

// Series of requests that are not a plan's cases: health checks, warm-up, bookkeeping.
const NOT_A_CASE = "not one of the plans' cases (health checks, warm-up and bookkeeping are not counted)";

const OUTCOME_FIELDS = {
  pass: (f) => (f.pass ? 1 : 0),
  measured: (f) => f.measured,
  expected_low: (f) => f.lo,
  expected_high: (f) => f.hi,
};

/**
 * The run's figure for one series ({labels} and its truth), {value} or {none: why}. A series of
 * a case the run has no figures for (the health checks, the bookkeeping requests) has none.
 */
export function figureFor(figs, truth, labels, experiment = null) {
  if (truth.figure === 'vus' || truth.figure === 'vusMax') {
    const e = figs.experiments[labels.experiment];
    return e ? { value: e[truth.figure] } : { none: `no experiment '${labels.experiment}' among the run's plans` };
  }
  const id = labels.case;
  if (id === undefined) return { none: 'the series has no case label' };
  // The experiment the chart or series is of, where it says: case ids are unique only within one.
  const of = experiment ?? labels.experiment;
  if (!of && figs.twice.has(id))
    return { none: `case '${id}' is in two experiments of this run, and the chart adds them up` };
  const kase = of ? figs.byExperiment.get(`${of}/${id}`) : figs.cases.get(id);
  if (!kase) return { none: NOT_A_CASE, series: id };
  const k = { ...kase, id };
  let value;
  if (truth.figure === 'summary') {
    const tags = Object.fromEntries(truth.by.map((b) => [b, labels[b]]));
    value = summaryValues(k.metrics, truth.metric, tags)?.[truth.stat] ?? null;
    if (value === null)
      return {
        none: `k6's summary has no ${truth.metric}{${Object.entries(tags)
          .map(([a, b]) => `${a}:${b}`)
          .join(',')}}`,
      };
  } else if (truth.figure === 'outcome') {
    const f = figs.outcomes
      .find((o) => o.case === `${k.experiment}/${id}`)
      ?.figures?.find((x) => x.measure === labels.measure);
    value = f ? (OUTCOME_FIELDS[truth.field](f) ?? null) : null;
  } else if (ofCase[truth.figure]) {
    value = ofCase[truth.figure](figs, k, labels);
  } else if (RETIRED[truth.figure]) {
    return { none: RETIRED[truth.figure] };
  } else {
    throw new Error(`no run figure named '${truth.figure}' (lab/judge/chart-truth.mjs lists them)`);
  }
  return value === null || value === undefined
    ? { none: `the run has no ${truth.figure} figure for case '${id}'` }
    : { value };
}

/** A series' points [[x (ms or s), y], ...] read as its truth says; `stepS` the store's step. */
export function readSeries(points, read, stepS = 1) {
  const ys = points.map(([, y]) => y).filter((y) => typeof y === 'number' && Number.isFinite(y));
  if (read === 'count') return ys.length;
  if (!ys.length) return null;
  if (read === 'last') return ys[ys.length - 1];
  if (read === 'max') return Math.max(...ys);
  if (read === 'sum') return ys.reduce((a, b) => a + b, 0);
  if (read === 'integral') return ys.reduce((a, b) => a + b, 0) * stepS;
  throw new Error(`no way to read a series named '${read}'`);
}

/** The chart's value in the figure's units: a time chart in seconds against a figure in ms. */
const inFigureUnits = (value, unit, figure) =>
  unit === 's' && /Ms$|^p9\d$|^summary$/.test(figure) ? value * 1000 : value;

/** Does a chart's value meet the figure, as its relation says ('=' by default, '<=' or '>=' for a bound)? */
export function meets(chartValue, runValue, relation = '=') {
  const slack = RELATIVE_SLACK * Math.max(1, Math.abs(runValue));
  if (relation === '>=') return chartValue >= runValue - slack;
  if (relation === '<=') return chartValue <= runValue + slack;
  return Math.abs(chartValue - runValue) <= slack;
}

/**
 * One series checked: {series, figure, shown (the chart's value), run, relation, verdict ('agree', 'DISAGREE' or
 * 'no figure'), reason}. `unit`: the chart's; `stepS`: its step, for an integral.
 */
export function checkSeries(figs, { label, labels, points, truth, unit, stepS, experiment = null }) {
  if (truth.none) return { series: label, verdict: 'no figure', reason: truth.none };
  const fig = figureFor(figs, truth, labels, experiment);
  if (fig.none)
    return {
      series: label,
      figure: truth.figure,
      verdict: 'no figure',
      reason: fig.none,
      ...(fig.series ? { other: fig.series } : {}),
    };
  let read = readSeries(points, truth.read, stepS);
  // A count with no series drawn is a count of none: nothing limited draws no line.
  if (read === null && fig.value === 0 && COUNTS.has(truth.figure)) read = 0;
  if (read === null)
    return {
      series: label,
      figure: truth.figure,
      run: fig.value,
      verdict: 'DISAGREE',
      reason: 'the chart has no value',
    };
  const shown = inFigureUnits(read, unit, truth.figure);
  if (truth.heldByCase) return againstHeld({ label, labels, truth, shown, run: fig.value });
  const ok = meets(shown, fig.value, truth.relation);
  return {
    series: label,
    figure: truth.figure,
    shown,
    run: fig.value,
    relation: truth.relation || '=',
    verdict: ok ? 'agree' : 'DISAGREE',
  };
}

/**
 * A chart of k6's own points in InfluxDB (a truth with `held`, dashboards/src/boards.mjs): it must
 * equal what InfluxDB holds of the case over the whole run, so a query or window that leaves a
 * point out disagrees. What InfluxDB holds falls short of k6's figure only by samples merged
 * (one series, one nanosecond): a count held above k6's disagrees; a short one is said.
 */
function againstHeld({ label, labels, truth, shown, run }) {
  const held = truth.heldByCase[labels.case];
  const row = { series: label, figure: truth.figure, shown, run, relation: '= held', held };
  if (held === undefined)
    return { ...row, verdict: 'DISAGREE', reason: `InfluxDB holds no point of case '${labels.case}'` };
  const isCount = COUNTS.has(truth.figure);
  const ok = meets(shown, held) && (!isCount || meets(held, run, '<='));
  const merged =
    isCount && held < run
      ? `InfluxDB holds ${held} of k6's ${run} points: ${run - held} merged (one series, one nanosecond)`
      : !isCount && !meets(held, run)
        ? `InfluxDB's points give ${held}, k6's own ${run}: samples merged (one series, one nanosecond)`
        : null;
  return { ...row, verdict: ok ? 'agree' : 'DISAGREE', ...(merged ? { reason: merged } : {}) };
}

/** The step of a query's points in seconds: the least spacing of any of its series (1 s if none). */
export function stepOf(data) {
  let least = Infinity;
  for (const d of data || [])
    for (let i = 1; i < d.points.length; i += 1) least = Math.min(least, d.points[i][0] - d.points[i - 1][0]);
  return Number.isFinite(least) && least > 0 ? least / 1000 : 1;
}

/**
 * Every board panel of a panel check (lab/stores/panels.mjs: one entry per query, with what it
 * returned and the truth declared for it) against the run's figures: one row per series, {where,
 * chart, refId, series, ...}.
 * A skipped panel or a failed query is the panel check's to report: left out here.
 */
export function checkBoards(entries, figs) {
  const rows = [];
  for (const e of entries.filter((x) => !x.skipped && !x.error)) {
    const { truth } = e;
    const base = { where: e.board, chart: e.panel, refId: e.refId };
    if (!truth) {
      rows.push({
        ...base,
        series: '-',
        verdict: 'no figure',
        reason: 'no truth declared for its query when it ran (dashboards/src)',
      });
      continue;
    }
    if (truth.none) {
      rows.push({ ...base, series: '-', verdict: 'no figure', reason: truth.none });
      continue;
    }
    const stepS = stepOf(e.data);
    // An experiment's own board (uid lab-<experiment>) shows only its cases.
    const experiment = [...figs.experimentNames].find((x) => e.uid === `lab-${x}`) ?? null;
    for (const d of e.data || [])
      rows.push({
        ...base,
        ...checkSeries(figs, {
          label: seriesName(e.legend, d.labels),
          labels: d.labels || {},
          points: d.points,
          truth,
          unit: e.unit,
          stepS,
          experiment,
        }),
      });
  }
  return rows;
}

/** A series named by its labels, as a legend would (but every label, so that it is unambiguous). */
const seriesName = (legend, labels = {}) =>
  Object.entries(labels)
    .filter(([k]) => !['__name__'].includes(k))
    .map(([k, v]) => `${k}=${v}`)
    .join(' ') ||
  legend ||
  'value';

/** Per chart: series checked, agreeing, disagreeing and with no figure (the reasons), for a table. */
export function truthSummary(rows) {
  const by = new Map();
  for (const r of rows) {
    const key = `${r.where}\u0000${r.chart}`;
    if (!by.has(key))
      by.set(key, { where: r.where, chart: r.chart, agree: 0, disagree: 0, none: 0, reasons: new Map() });
    const s = by.get(key);
    if (r.verdict === 'agree') {
      s.agree += 1;
      // An agreeing series' note (InfluxDB merged some of k6's samples) is said beside it.
      if (r.reason) s.reasons.set(`${r.series}: ${r.reason}`, []);
    } else if (r.verdict === 'DISAGREE') s.disagree += 1;
    else {
      s.none += 1;
      if (!s.reasons.has(r.reason)) s.reasons.set(r.reason, []);
      if (r.other) s.reasons.get(r.reason).push(r.other);
    }
  }
  return [...by.values()].map((s) => ({
    ...s,
    reasons: [...s.reasons].map(([why, who]) => (who.length ? `${who.join(', ')}: ${why}` : why)),
  }));
}

/** A disagreement in words: where, the chart, the series and both figures. */
export const disagreement = (r) =>
  `${r.where} / ${r.chart} / ${r.series}: the chart says ${fmt(r.shown)} (${r.figure}), ${r.held !== undefined ? `InfluxDB holds ${fmt(r.held)} of k6's points, the run ${fmt(r.run)}` : `the run ${r.relation && r.relation !== '=' ? `${r.relation} ` : ''}${fmt(r.run)}`}${r.reason ? ` (${r.reason})` : ''}`;

const fmt = (v) => (typeof v === 'number' ? String(Math.round(v * 1e6) / 1e6) : String(v));

/** A chart's series as points [[x in ms (time) or as drawn, y], ...] from its aligned columns. */
function chartPoints(spec, i) {
  const scale = spec.x === 'time' ? 1000 : 1;
  return spec.data[0].map((x, j) => [x * scale, spec.data[i + 1][j]]).filter(([, y]) => y !== null && y !== undefined);
}

/**
 * The charts of a page (their specs, as the page carries them, or as the browser drew them)
 * against the run's figures: every series that declares a truth ({truth, labels} beside its
 * label), and a row with the reason for a chart none of whose series declares one. `experiment`:
 * the page's, whose cases its charts show.
 */
export function checkCharts(charts, figs, where, experiment = null) {
  const rows = [];
  for (const spec of charts) {
    const base = { where, chart: spec.title };
    const declared = spec.series.map((s, i) => ({ s, i })).filter(({ s }) => s.truth);
    if (!declared.length) {
      rows.push({
        ...base,
        series: '-',
        verdict: 'no figure',
        reason: spec.noTruth || 'the chart declares no run figure',
      });
      continue;
    }
    const all = declared.map(({ i }) => ({ points: chartPoints(spec, i) }));
    const stepS = stepOf(all);
    declared.forEach(({ s }, n) =>
      rows.push({
        ...base,
        ...checkSeries(figs, {
          label: s.label,
          labels: s.labels || {},
          points: all[n].points,
          truth: s.truth,
          unit: spec.unit,
          stepS,
          experiment,
        }),
      }),
    );
  }
  return rows;
}
