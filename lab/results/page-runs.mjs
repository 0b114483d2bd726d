/*
 * The site's front page: every run, newest first (when, what, with which --quick, what-if knobs
 * or perturbations and commit, how long, how many cases passed), filtered by suite and
 * experiment in the browser, and the test histories there are.
 */
import { quickWords, runWhat } from './run-kind.mjs';
import { esc, table, page, section, utc, duration } from './layout.mjs';

/** `runs`: read runs (newest first); `histories`: [{suite, experiment, path, runs}]. */
export function runsPage(runs, histories) {
  const suites = [...new Set(runs.map((r) => r.info.suite))].sort();
  const exps = [...new Set(runs.flatMap((r) => r.info.experiments))].sort();
  const options = (all, what) =>
    `<option value="">every ${what}</option>${all.map((v) => `<option value="${esc(v)}">${esc(v)}</option>`).join('')}`;
  const rows = runs.map(({ id, info }) => {
    const { passed, failed } = info.cases;
    const broken = info.problems.length || info.interrupted;
    return [
      // The verdict first: the list is wider than a screen, and what a reader looks for is this.
      `<span class="mark ${failed || broken ? 'fail' : 'ok'}">${failed || broken ? 'failed' : 'passed'}</span> <span class="count ok">${passed}</span> / <span class="count${failed ? ' fail' : ''}">${failed}</span>${broken ? ' <span class="mark fail">!</span>' : ''}`,
      `<a href="runs/${esc(id)}/index.html">${esc(id)}</a>`,
      esc(utc(info.fromMs)),
      esc(info.suite),
      info.experiments.map((e) => `<a href="runs/${esc(id)}/${esc(e)}.html">${esc(e)}</a>`).join(' '),
      esc(info.factor > 1 ? quickWords(info) : '-'),
      info.perturbed ? `<span class="mark fail">${esc(runWhat(info))}</span>` : esc(runWhat(info)),
      esc(info.git ? `${info.git.commit}${info.git.dirty ? ' +dirty' : ''}` : '-'),
      esc(duration(info.durationMs)),
    ];
  });
  const attrs = (r, i) =>
    ` data-run="${esc(runs[i].id)}" data-suite="${esc(runs[i].info.suite)}" data-experiments=" ${esc(runs[i].info.experiments.join(' '))} " data-passed="${runs[i].info.cases.passed}" data-failed="${runs[i].info.cases.failed}"`;
  const filters = `<div class="filters"><label>suite <select id="filter-suite">${options(suites, 'suite')}</select></label> <label>experiment <select id="filter-experiment">${options(exps, 'experiment')}</select></label> <span id="filter-count" class="muted"></span></div>`;
  const hist = histories.map((h) => [
    `<a href="${esc(h.path)}">${esc(h.suite)} / ${esc(h.experiment)}</a>`,
    String(h.runs),
  ]);
  const body = `${section('runs', `Runs (${runs.length})`, `${filters}${table(['verdict: passed / failed', 'testid', 'started (UTC)', 'suite', 'experiments', '--quick', 'what ran', 'commit', 'duration'], rows, { cls: 'runs', attrs })}`)}
${section('histories', 'Test histories', table(['suite / experiment', 'runs'], hist, { cls: 'compact' }), "Each case's key measure across runs, against each run's expected range.")}`;
  return { path: 'index.html', html: page({ title: 'Results', depth: 0, body, dataFile: null }), data: null };
}
