/*
 * The HTTP view of a run page: per case and status, how many requests k6 counted and their
 * share of the case; per case its latency (p95, p99, max) and failed share, from k6's summary
 * and the nothing-lost table's k6 column.
 */
import { format } from './units.js';

const tagsOf = (name) =>
  Object.fromEntries(
    (/\{(.*)\}$/.exec(name)?.[1] || '')
      .split(',')
      .filter(Boolean)
      .map((kv) => kv.split(':')),
  );

/** [{case, status, requests, share, p95, p99, max, failed}] for every case of an experiment. */
export function httpRows(exp) {
  const metrics = Object.assign({}, ...exp.phases.map((p) => p.summary?.metrics || {}));
  const rows = [];
  for (const c of exp.cases) {
    const byStatus = {};
    for (const [name, m] of Object.entries(metrics)) {
      const tags = tagsOf(name);
      if (name.startsWith('http_reqs{') && tags.case === c.id && tags.status && Object.keys(tags).length === 2)
        byStatus[tags.status] = m.values.count;
    }
    for (const r of (exp.counts || []).filter((x) => x.case === c.name && /^\d+$/.test(x.status)))
      byStatus[r.status] ??= Number(r.k6);
    const total =
      metrics[`http_reqs{case:${c.id}}`]?.values?.count ?? Object.values(byStatus).reduce((a, b) => a + b, 0);
    const d = metrics[`http_req_duration{case:${c.id}}`]?.values || {};
    const failed = metrics[`http_req_failed{case:${c.id}}`]?.values?.rate;
    rows.push({
      case: c.name,
      status: 'all',
      requests: total,
      share: null,
      p95: d['p(95)'],
      p99: d['p(99)'],
      max: d.max,
      failed,
    });
    for (const [status, n] of Object.entries(byStatus).sort())
      rows.push({ case: c.name, status, requests: n, share: total ? n / total : null });
  }
  return rows;
}

/** The rows as table cells (text, unescaped). */
export const httpCells = (r) => [
  r.status === 'all' ? r.case : '',
  r.status,
  format('none', r.requests),
  r.share == null ? '' : format('percentunit', r.share),
  ...[r.p95, r.p99, r.max].map((v) => (v === undefined ? '' : format('ms', v))),
  r.failed === undefined ? '' : format('percentunit', r.failed),
];
export const HTTP_HEAD = ['case', 'status', 'requests', 'share', 'p95', 'p99', 'max', 'failed'];

/** k6's checks of the experiment's runs, as its summary lists them: [{name, passes, fails}] per k6 process. */
export function checkRows(exp) {
  return exp.phases.flatMap((p) =>
    (p.summary?.root_group?.checks || []).map((c) => ({
      phase: p.phase,
      name: c.name,
      passes: c.passes,
      fails: c.fails,
    })),
  );
}
