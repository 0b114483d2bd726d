/*
 * A test's history (one suite/experiment): for each case, its key measure in every run as a
 * chart across runs, each run's expected range as a band and failed runs in red. Runs with
 * different --quick factors are not comparable: each factor has its own charts.
 */
import { resultKind } from './kinds.mjs';
import { chart, chartId, RED, BAND, BAND_LINE } from './chart.mjs';
import { esc, mark, table, page, section, panel } from './layout.mjs';

export const historyPath = (suite, experiment) => `history/${suite}.${experiment}.html`;

/** The chart of one case across `runs` (oldest first): measured, failed, expected band. */
function caseHistory(name, id, runs, factor) {
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
    { label: 'expected (max)', points: points.filter((p) => p.k?.hi != null).map((p) => [p.i, p.k.hi]), color: BAND_LINE, band: true, fill: BAND },
    { label: 'expected (min)', points: points.filter((p) => p.k?.lo != null).map((p) => [p.i, p.k.lo]), color: BAND_LINE, band: true },
    { label: k.measure, points: points.flatMap(val), color: '#8AB8FF', dots: true, area: false },
    { label: 'failed', points: points.filter((p) => p.o && !p.o.pass).flatMap(val), color: RED, line: false, dots: true, size: 11 },
  ];
  return chart({ id: chartId('history', `x${factor}`, id), title: `${name}: ${k.measure}`, unit: k.unit, x: 'runs', xLabel: 'run', xLabels: runs.map((r) => r.id), series, bands: [[0, 1]], height: 200, yZero: false });
}

/** `runs`: [{id, info, exp}] of one suite/experiment, newest first. */
export function historyPage(suite, experiment, runs) {
  const charts = [];
  const groups = [...new Set(runs.map((r) => r.info.factor))].sort((a, b) => a - b);
  const sections = groups.map((factor) => {
    const mine = runs.filter((r) => r.info.factor === factor).slice().reverse();
    const names = [...new Set(mine.slice().reverse().flatMap((r) => r.exp.outcomes.map((o) => o.case)))];
    const panels = names.map((name) => {
      const c = caseHistory(name, name.split('/').pop(), mine, factor);
      if (!c) return `<div class="panel" data-case="${esc(name)}"><div class="panel-title">${esc(name)}</div><div class="no-data">no key measure</div></div>`;
      charts.push(c);
      return panel({ title: c.title, chart: c }).replace('<div class="panel">', `<div class="panel" data-case="${esc(name)}">`);
    });
    const rows = mine.slice().reverse().map((r) => {
      const failed = r.exp.outcomes.filter((o) => !o.pass).length;
      return [`<a href="../runs/${esc(r.id)}/${esc(experiment)}.html">${esc(r.id)}</a>`, esc(r.info.git ? r.info.git.commit : '-'), mark(failed === 0), `${r.exp.outcomes.length - failed} / ${failed}`];
    });
    const title = factor > 1 ? `--quick=${factor} (${mine.length} runs)` : `seed timing (${mine.length} runs)`;
    return section(`factor-${factor}`, title, `${table(['run', 'commit', 'pass', 'passed / failed'], rows, { cls: 'compact' })}<div class="grid small">${panels.join('\n')}</div>`);
  });
  const body = `<p class="lead">Each case's key measure per run (oldest left), the band its expected range in that run, a red point where the case failed. Only runs with the same --quick factor are comparable.</p>${sections.join('\n')}`;
  const file = historyPath(suite, experiment);
  return {
    path: file,
    html: page({ title: `${suite} / ${experiment}: history`, depth: 1, crumbs: [esc(`${suite} / ${experiment}`)], tabs: groups.map((f) => [`factor-${f}`, f > 1 ? `x${f}` : 'seed timing']), body, dataFile: `${suite}.${experiment}.data.js` }),
    data: { charts },
  };
}

