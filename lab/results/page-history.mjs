/*
 * A test's history (one suite/experiment): for each case, its key measure in every run as a
 * chart across runs, each run's expected range as a band and failed runs in red. Only runs that
 * agree in factor, what-if knobs, perturbations and segments are comparable (run-kind.mjs): each
 * such group has its own charts, and perturbed groups are marked apart.
 */
import { resultKind } from './kinds.mjs';
import { comparableKey, groupTitle, knobWords, perturbationWords } from './run-kind.mjs';
import { chart, chartId, RED, BAND, BAND_LINE } from './chart.mjs';
import { esc, mark, table, page, section, panel } from './layout.mjs';

export const historyPath = (suite, experiment) => `history/${suite}.${experiment}.html`;

/** The chart of one case across `runs` (oldest first): measured, failed, expected band. */
function caseHistory(name, id, runs, group) {
  const kind = resultKind(runs[0].exp.kindName);
  const points = runs.map(({ exp }, i) => {
    const o = exp.outcomes.find((x) => x.case === name);
    const c = exp.cases.find((x) => x.name === name);
    return { i, o, k: o ? kind.keyMeasure(o, c) : null };
  });
  const k = points.find((p) => p.k)?.k;
  if (!k) return null;
  const val = (p) => (p.k && typeof p.k.value === 'number' ? [[p.i, p.k.value]] : []);
  // The band first, so that the measured points and the red ones are drawn over it.
  const series = [
    {
      label: 'expected (max)',
      points: points.filter((p) => p.k?.hi != null).map((p) => [p.i, p.k.hi]),
      color: BAND_LINE,
      band: true,
      fill: BAND,
    },
    {
      label: 'expected (min)',
      points: points.filter((p) => p.k?.lo != null).map((p) => [p.i, p.k.lo]),
      color: BAND_LINE,
      band: true,
    },
    { label: k.measure, points: points.flatMap(val), color: '#8AB8FF', dots: true, area: false },
    {
      label: 'failed',
      points: points.filter((p) => p.o && !p.o.pass).flatMap(val),
      color: RED,
      line: false,
      dots: true,
      size: 11,
    },
  ];
  return chart({
    id: chartId('history', group, id),
    title: `${name}: ${k.measure}`,
    unit: k.unit,
    x: 'runs',
    xLabel: 'run',
    xLabels: runs.map((r) => r.id),
    series,
    bands: [[0, 1]],
    height: 200,
    yZero: false,
  });
}

/**
 * Runs grouped by what makes them comparable: the defaults first, then what-ifs, then the perturbed;
 * each group's newest first.
 */
function comparableGroups(runs, experiment) {
  const keys = [...new Set(runs.map((r) => comparableKey(r.info, experiment)))];
  const rank = (info) => (perturbationWords(info, experiment).length ? 2 : knobWords(info, experiment).length ? 1 : 0);
  return keys
    .map((key) => {
      const mine = runs.filter((r) => comparableKey(r.info, experiment) === key);
      return {
        key,
        mine,
        rank: rank(mine[0].info),
        perturbed: rank(mine[0].info) === 2,
        title: groupTitle(mine[0].info, experiment),
      };
    })
    .sort((a, b) => a.rank - b.rank)
    .map((g, i) => ({ ...g, id: `group-${i + 1}` }));
}

/** A group's section: its runs (newest first) and a chart per case of its key measure over them (oldest left). */
function groupSection({ id: group, mine: newest, perturbed, title }, experiment, charts) {
  const mine = newest.slice().reverse();
  const names = [...new Set(newest.flatMap((r) => r.exp.outcomes.map((o) => o.case)))];
  const panels = names.map((name) => {
    const c = caseHistory(name, name.split('/').pop(), mine, group);
    if (!c)
      return `<div class="panel" data-case="${esc(name)}"><div class="panel-title">${esc(name)}</div><div class="no-data">no key measure</div></div>`;
    charts.push(c);
    return panel({ title: c.title, chart: c }).replace(
      '<div class="panel">',
      `<div class="panel" data-case="${esc(name)}">`,
    );
  });
  const rows = newest.map((r) => {
    const failed = r.exp.outcomes.filter((o) => !o.pass).length;
    return [
      `<a href="../runs/${esc(r.id)}/${esc(experiment)}.html">${esc(r.id)}</a>`,
      esc(r.info.git ? r.info.git.commit : '-'),
      mark(failed === 0),
      `${r.exp.outcomes.length - failed} / ${failed}`,
    ];
  });
  const warn = perturbed
    ? '<p class="notice">Perturbed runs: the stack differed from what the model was told, so failures here are what the check is for, not a regression.</p>'
    : '';
  return section(
    group,
    `${title} (${mine.length} run${mine.length === 1 ? '' : 's'})`,
    `${warn}${table(['run', 'commit', 'pass', 'passed / failed'], rows, { cls: 'compact' })}<div class="grid small">${panels.join('\n')}</div>`,
  );
}

/** `runs`: [{id, info, exp}] of one suite/experiment, newest first. */
export function historyPage(suite, experiment, runs) {
  const charts = [];
  const groups = comparableGroups(runs, experiment);
  const sections = groups.map((g) => groupSection(g, experiment, charts));
  const body = `<p class="lead">Each case's key measure per run (oldest left), the band its expected range in that run, a red point where the case failed. Only runs with the same --quick factor, what-if knobs and perturbations are comparable: each such group has its own section.</p>${sections.join('\n')}`;
  const file = historyPath(suite, experiment);
  return {
    path: file,
    html: page({
      title: `${suite} / ${experiment}: history`,
      depth: 1,
      crumbs: [esc(`${suite} / ${experiment}`)],
      tabs: groups.map((g) => [g.id, g.title]),
      body,
      dataFile: `${suite}.${experiment}.data.js`,
    }),
    data: { charts },
  };
}
