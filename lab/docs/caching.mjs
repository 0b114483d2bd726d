/*
 * The generated tables of this stack's README (`just docs`): per suite and mode, the seed's
 * figures beside the model's, at the seed's 10 workers and at the 4 fitted to its figures; per
 * suite, which rows are judged or shown.
 */
import { plan } from '../../thresholds/plan.js';
import caching from '../../thresholds/experiments/caching.js';
import { judgedRowsTable } from '../results/judged-rows.mjs';
import { table, byId, span } from '../lib.mjs';

function cachingExpected() {
  const rps = (c, d) => ((c.responses * 1000) / d).toFixed(1);
  const pct = (x) => `${Math.round(x * 100)} %`;
  const ms = (x) => (x >= 1000 ? `${(x / 1000).toFixed(2)} s` : `${Math.round(x)} ms`);
  const fit = caching.provenance.fitted.seed_workers;
  const rows = [];
  for (const suite of ['stress', 'load']) {
    const p = byId(plan({ experiment: 'caching', suite }));
    const four = byId(plan({ experiment: 'caching', suite, overrides: { [fit.knob]: String(fit.value) } }));
    for (const [id, c] of Object.entries(p)) {
      const s = c.seed || {};
      const f = four[id].model;
      const m = c.model;
      rows.push([
        suite,
        c.mode,
        s.throughput ?? '-',
        `${rps(c, m.durationMs.max)}..${rps(c, m.durationMs.min)}`,
        `${rps(c, f.durationMs.max)}..${rps(c, f.durationMs.min)}`,
        s.limitedShare !== undefined ? pct(s.limitedShare) : '-',
        `${pct(m.limitedShare.min)}..${pct(m.limitedShare.max)}`,
        s.meanMs !== undefined ? ms(s.meanMs) : '-',
        `${ms(m.meanMs.min)}..${ms(m.meanMs.max)}`,
        `${ms(f.meanMs.min)}..${ms(f.meanMs.max)}`,
        span(m.appServed),
      ]);
    }
  }
  return table(
    [
      'suite',
      'mode',
      'seed r/s',
      'model r/s',
      `model r/s, ${fit.value} workers`,
      'seed 503',
      'model 503',
      'seed mean',
      'model mean',
      `model mean, ${fit.value} workers`,
      'app served',
    ],
    rows,
  );
}

export default { 'caching-expected': cachingExpected, 'caching-judged': () => judgedRowsTable('caching') };
