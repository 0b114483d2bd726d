/*
 * A run's pages: its index (what ran, with which knobs and commit, every case's verdict) and one
 * page per experiment answering "what happened, and was it what the model said": insights, the
 * overview over time, thresholds, each case against the model, the boards, HTTP, nothing lost,
 * resources. Everything comes from the run folder; what is missing is said.
 */
import { boardViews, byCase, byService } from './boards.mjs';
import { caseTables } from './cases.mjs';
import { thresholdRows } from './thresholds.mjs';
import { httpRows, httpCells, HTTP_HEAD, checkRows } from './http.mjs';
import { insights } from './insights.mjs';
import { resourceTables, serviceCharts } from './resources.mjs';
import { resultKind } from './kinds.mjs';
import { knobWords, perturbationWords, quickWords } from './run-kind.mjs';
import { esc, mark, wordMark, table, page, section, grid, panel, utc, duration } from './layout.mjs';
import { policyHtml } from './policy.mjs';
import { scriptHtml } from './script.mjs';
import { labWords } from '../lib.mjs';

const caseIds = (exp) => exp.cases.map((c) => c.id);
const raw = (run, file) => `../../../${run.id}/${file}`;

/** Why a part of the page is missing, or null when the run has it all. */
export function missing(run) {
  const { info } = run;
  const lost = "the overview over time, the experiment's board, memory over time and the resources board";
  if (info.metrics === false)
    return `This run was made with --no-metrics: no metrics store ran, so there are no time series. Missing: ${lost}, and the stores' columns of the nothing-lost table. Shown from k6's summary and the run folder: thresholds, cases, HTTP, CPU per service (the runner's own sampler) and insights.`;
  if (!run.panels)
    return `This run's folder has no panels.json (the boards' data): runs made before the runner saved it lack it, and a run whose stores could not be read says so in its output. Missing: ${lost}. Shown from k6's summary and the run folder: thresholds, cases, HTTP, CPU per service and insights.`;
  return null;
}

/** The line of facts about a run shown under each of its pages' titles; a perturbed run says so first. */
export function runFacts(info) {
  const knobs = knobWords(info);
  const perturbed = perturbationWords(info);
  const facts = [
    ...(perturbed.length
      ? [
          [
            'PERTURBED',
            `${perturbed.join(' ')} (the stack differs from what the model was told: failures are expected)`,
          ],
        ]
      : []),
    ['started', `${utc(info.fromMs)} UTC`],
    ['duration', duration(info.durationMs)],
    ['suite', info.suite],
    ['--quick', quickWords(info)],
    ['knobs', knobs.length ? `what-if ${knobs.join(' ')}` : 'defaults'],
    ...((info.segments || 1) > 1 ? [['segments', String(info.segments)]] : []),
    ['commit', info.git ? `${info.git.commit}${info.git.dirty ? ' (dirty)' : ''}` : '-'],
    ['metrics', info.metrics === false ? 'none (--no-metrics)' : info.influx ? 'Prometheus, InfluxDB' : 'Prometheus'],
  ];
  return `<dl class="facts">${facts.map(([k, v]) => `<div${k === 'PERTURBED' ? ' class="perturbed" data-perturbed' : ''}><dt>${esc(k)}</dt><dd>${esc(v)}</dd></div>`).join('')}</dl>`;
}

const counts = (outcomes) => {
  const failed = outcomes.filter((o) => !o.pass).length;
  return `<span class="count ok">${outcomes.length - failed} passed</span> <span class="count${failed ? ' fail' : ''}">${failed} failed</span>`;
};

/** The cases of an experiment, each a card: verdict, the terminal's rows, its chart against the model. */
function caseCards(run, exp, tables, charts) {
  const kind = resultKind(exp.kindName);
  return tables
    .map((t) => {
      const pass = t.outcome ? t.outcome.pass : null;
      const own = t.case && t.phase ? kind.caseCharts(run, exp, t.phase, t.case).filter(Boolean) : [];
      charts.push(...own);
      // A row's last cell: ok or FAIL (judged), else '-' or 'shown' (shown).
      const rows = t.rows.map((r) => [...r.slice(0, -1).map(esc), wordMark(r[r.length - 1])]);
      return `<div class="case ${pass === false ? 'failed' : ''}" data-case="${esc(t.name)}" data-pass="${pass}">
<div class="case-head">${mark(pass)} <span class="case-name">${esc(t.name)}</span>${t.phase?.phase && t.phase.phase !== t.case?.id ? ` <span class="muted">phase ${esc(t.phase.phase)}</span>` : ''}</div>
<div class="case-body"><div>${t.note ? `<p class="note">From the outcome only: ${esc(t.note)}</p>` : ''}${table(t.head.map(esc), rows, { cls: 'compact' })}</div>
${own.length ? `<div class="case-charts">${own.map((chart) => panel({ title: chart.title, chart })).join('\n')}</div>` : ''}</div></div>`;
    })
    .join('\n');
}

/** k6's checks (statuses the policy allows), judged: a failed check is an answer no case allows. */
function checksHtml(exp) {
  const rows = checkRows(exp);
  if (!rows.length)
    return '<p class="muted">No checks in k6\'s summary: runs made before the lab checked statuses lack them.</p>';
  return `<h3>Checks</h3>${table(
    ['phase', 'check', 'passed', 'failed', 'pass'],
    rows.map((r) => [esc(r.phase ?? '-'), esc(r.name), esc(r.passes), esc(r.fails), mark(r.fails === 0)]),
    { cls: 'compact', attrs: (r, i) => (rows[i].fails ? ' class="bad"' : '') },
  )}`;
}

/** The `./labw export` command that writes this run's test of `exp` as a standalone script. */
function exportWords(info, exp) {
  const knobs = knobWords(info, exp.name).map((w) => w.slice(exp.name.length + 1));
  const target = exp.policy ? [info.suite, `--policy=${exp.policy.file}`] : [`${info.suite}/${exp.name}`];
  const words = labWords({ target, factor: info.factors?.[exp.name], knobs });
  return `./labw export ${words.join(' ')} --out=${exp.name}.js`;
}

const note = (text) => `<p class="notice">${esc(text)}</p>`;

/**
 * The boards drawn for an experiment's page, in the order their charts go into its data: {overview,
 * board, resBoard}.
 */
function boardSets(run, exp, charts) {
  const views = (list) => {
    for (const v of list) if (v.chart) charts.push(v.chart);
    return list;
  };
  if (!run.panels) return { overview: [], board: [], resBoard: [] };
  const w = { window: exp.window };
  const overview = views(
    boardViews(run.panels, 'lab-k6-run', {
      window: exp.k6Window,
      keep: byCase(caseIds(exp), { experiment: exp.name }),
      prefix: 'overview',
    }),
  );
  const board = views(boardViews(run.panels, `lab-${exp.name}`, { ...w, prefix: 'board' }));
  const resBoard = views(
    boardViews(run.panels, 'lab-resources', {
      ...w,
      keep: byService(exp.services),
      prefix: 'resources',
      dropEmpty: true,
    }),
  );
  return { overview, board, resBoard };
}

/** The thresholds tab: the failed ones, then the passed folded away. */
function thresholdsHtml(thresholds) {
  const thresholdTable = (rows) =>
    table(
      ['source', 'case', 'metric / measure', 'expression / expected', 'value', 'pass'],
      rows.map((r) => [esc(r.source), esc(r.case), esc(r.name), esc(r.expression), esc(r.value), mark(r.ok)]),
      {
        cls: 'compact',
        // Each row names its case, so that the page check holds its mark to the case's verdict.
        attrs: (r, i) => `${rows[i].ok === false ? ' class="bad"' : ''} data-verdict-case="${esc(rows[i].case)}"`,
      },
    );
  const failedT = thresholds.filter((r) => r.ok === false);
  const passedT = thresholds.filter((r) => r.ok !== false);
  const shown = passedT.filter((r) => r.ok !== true).length;
  return `${failedT.length ? thresholdTable(failedT) : '<p class="muted">None failed.</p>'}<details><summary>${passedT.length - shown} passed${shown ? `, ${shown} shown (k6's a-priori ranges of cases judged on the replay)` : ''}</summary>${thresholdTable(passedT)}</details>`;
}

/** The nothing-lost tab: k6's, the stores' and the proxy's counts per case and status, or why there are none. */
function countsHtml(run, exp) {
  if (!exp.counts)
    return note(
      run.info.metrics === false
        ? "No nothing-lost table: without the stores there is nothing to compare k6's counts with."
        : 'No counts.json in the run folder.',
    );
  return table(
    ['case', 'status', 'k6', 'Prometheus', 'InfluxDB', 'proxy', 'agree'].map(esc),
    exp.counts.map((r) =>
      // A count nothing else holds (k6 does not know it) is shown, not judged.
      [r.case, r.status, r.k6, r.Prometheus, r.InfluxDB, r.proxy].map(esc).concat(wordMark(r.agree)),
    ),
    { attrs: (r, i) => (['ok', 'shown'].includes(exp.counts[i].agree) ? '' : ' class="bad"') },
  );
}

/** The resources tab: the capped phases' tables, a chart per service, and the resources board. */
function resourcesHtml(exp, perService, resBoard) {
  const resTables = resourceTables(exp)
    .map(
      (t) =>
        `<h3>${esc(t.phase || exp.name)}</h3>${table(
          t.head.slice(1).map(esc),
          t.rows.map((r) => r.slice(1).map(esc)),
          { cls: 'compact' },
        )}`,
    )
    .join('');
  const charts = perService.map((c) => panel({ title: c.title, chart: c })).join('\n');
  return `${resTables}<div class="grid small">${charts}</div>${resBoard.length ? `<h3>lab / resources</h3>${grid(resBoard)}` : ''}`;
}

/** A board's grid, or why the page has none. */
const gridOr = (views, gone, missingText) =>
  views.length ? grid(views) : note(gone ? 'No time series in this run: see the note at the top.' : missingText);

// What each tab shows, said under its title.
const INTROS = {
  policy:
    'The policy file as the model read it, route by route, and the configs the stack ran (every cell shown, not judged).',
  overview: "From the lab / k6 run board (Prometheus), this experiment's cases and window.",
  thresholds: "k6's thresholds from its summary, and the lab's own judgements: the failed ones, then the passed.",
  cases: 'Each case as the terminal table showed it, and its course against the model where the kind has one.',
  board: "The experiment's Grafana board, drawn from what its queries returned for this run.",
  http: "Per case and status, from k6's summary (latency and failures per case), and k6's checks.",
  'nothing-lost': 'Per case and status: what k6 counted, what each store holds and what the proxy counted.',
  script:
    'The scenarios and thresholds k6 ran, as k6 code: each threshold with the model figure and the tolerance it came from.',
  resources:
    "CPU % of a core per service from the runner's sampler (k6 included); memory from the boards where the run has them.",
};

/** The page's tabs, in order: [id, title, html, intro]. */
function pageSections(run, exp, { gone, sets, tables, perService, cards }) {
  const policy = policyHtml(run, exp.policy, exp.phases[0]?.plan?.factor ?? 1);
  const insightsHtml = `<ul class="insights">${insights(run, exp)
    .map((i) => `<li class="${i.level}">${esc(i.text)}</li>`)
    .join('')}</ul>`;
  const httpHtml = `${table(
    HTTP_HEAD,
    httpRows(exp).map((r) => httpCells(r).map(esc)),
  )}${checksHtml(exp)}`;
  const tabs = [
    ...(policy ? [['policy', 'Policy', policy]] : []),
    ['insights', 'Insights', insightsHtml],
    ['overview', 'Overview', gridOr(sets.overview, gone, 'panels.json has no k6 run board.')],
    ['thresholds', 'Thresholds', thresholdsHtml(thresholdRows(exp, tables))],
    ['cases', 'Cases', cards],
    ['board', `lab / ${exp.name}`, gridOr(sets.board, gone, `panels.json has no lab-${exp.name} board.`)],
    ['http', 'HTTP', httpHtml],
    ['nothing-lost', 'Nothing lost', countsHtml(run, exp)],
    ['script', 'Script', scriptHtml(exp, exportWords(run.info, exp))],
    ['resources', 'Resources', resourcesHtml(exp, perService, sets.resBoard)],
  ];
  return tabs.map(([id, title, html]) => [id, title, html, INTROS[id]]);
}

/** The page's lead line: the kind, the verdicts, and links to the run, its history, compare and k6's reports. */
function pageLead(run, exp, links) {
  const reports = exp.phases
    .filter((p) => p.report)
    .map((p) => ` · <a href="${esc(raw(run, p.report))}">k6 report${p.phase ? ` (${esc(p.phase)})` : ''}</a>`)
    .join('');
  return `<p class="lead">${esc(exp.kindName || 'unknown kind')} · ${counts(exp.outcomes)} · <a href="index.html">run ${esc(run.id)}</a>${links.history ? ` · <a href="${esc(links.history)}">history</a>` : ''}${links.compare ? ` · <a href="${esc(links.compare)}">compare</a>` : ''}${reports}</p>`;
}

/** One experiment's page: {path, html, data}. */
export function experimentPage(run, exp, links = {}) {
  const charts = [];
  const gone = missing(run);
  const sets = boardSets(run, exp, charts);
  const tables = caseTables(exp);
  const perService = serviceCharts(run, exp);
  charts.push(...perService);
  const cards = caseCards(run, exp, tables, charts);
  const sections = pageSections(run, exp, { gone, sets, tables, perService, cards });
  const body = `${pageLead(run, exp, links)}${runFacts(run.info)}${gone ? note(gone) : ''}${sections.map(([id, title, html, intro]) => section(id, title, html, intro ? esc(intro) : '')).join('\n')}`;
  return {
    path: `runs/${run.id}/${exp.name}.html`,
    html: page({
      title: `${run.id} · ${exp.name}`,
      depth: 2,
      crumbs: [`<a href="index.html">${esc(run.id)}</a>`, esc(exp.name)],
      tabs: sections.map(([id, title]) => [id, title]),
      body,
      dataFile: `${exp.name}.data.js`,
    }),
    data: { charts },
  };
}

/** The run's index: facts, problems, each experiment's verdict and every case. */
export function runIndexPage(run, links = {}) {
  const { info } = run;
  const exps = run.experiments.map((e) => [
    `<a href="${esc(e.name)}.html">${esc(e.name)}</a>`,
    esc(e.kindName || '-'),
    counts(e.outcomes),
    links.history?.[e.name] ? `<a href="${esc(links.history[e.name])}">history</a>` : '',
  ]);
  const cases = run.outcomes.map((o) => [
    mark(o.pass),
    `<a href="${esc(o.case.split('/')[0])}.html#cases">${esc(o.case)}</a>`,
  ]);
  const problems = [
    ...info.problems.map((p) => `<li class="fail">${esc(p)}</li>`),
    ...(info.interrupted ? ['<li class="fail">interrupted</li>'] : []),
  ];
  const body = `<p class="lead">${counts(run.outcomes)}${links.compare ? ` · <a href="${esc(links.compare)}">compare with ${esc(links.baseline)}</a>` : ''}</p>${runFacts(info)}
${problems.length ? `<ul class="insights">${problems.join('')}</ul>` : ''}${missing(run) ? note(missing(run)) : ''}
${section('experiments', 'Experiments', table(['experiment', 'kind', 'cases', ''], exps))}
${section('all-cases', 'Cases', table(['pass', 'case'], cases, { cls: 'compact', attrs: (r, i) => ` data-case="${esc(run.outcomes[i].case)}" data-pass="${run.outcomes[i].pass}"` }))}
${section('files', 'Files', `<p><a href="${esc(raw(run, ''))}">the run folder</a> (k6's summaries, JUnit reports, web-dashboard reports, configs and logs)</p>`)}`;
  return {
    path: `runs/${run.id}/index.html`,
    html: page({ title: `run ${run.id}`, depth: 2, crumbs: [esc(run.id)], body }),
    data: null,
  };
}
