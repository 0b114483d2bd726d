/*
 * The generated tables of this stack's README (`just docs`): per burst length, what Envoy and
 * nginx must pass and limit, and nginx's longest wait; per suite, which rows are judged or shown.
 */
import { plan } from '../../thresholds/plan.js';
import { judgedRowsTable } from '../results/judged-rows.mjs';
import { table, byId, outcome } from '../lib.mjs';

function envoyVsNginxExpected() {
  const p = plan({ experiment: 'envoy-vs-nginx', suite: 'spike' });
  const c = byId(p);
  const steps = [...new Set(p.cases.map((x) => x.step))];
  return table(
    ['burst at 400 r/s', 'Envoy 200 / 429', 'nginx 200 / 429, longest wait'],
    steps.map((s) => [s, outcome(c[`envoy-${s}`]), outcome(c[`nginx-${s}`])]),
  );
}

export default {
  'envoy-vs-nginx-expected': envoyVsNginxExpected,
  'envoy-vs-nginx-judged': () => judgedRowsTable('envoy-vs-nginx'),
};
