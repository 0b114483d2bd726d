/*
 * The generated tables of this stack's README (`just docs`): per load and burst size, the 200s
 * and 503s the model expects, and the longest wait; per suite, which rows are judged or shown.
 */
import { plan } from '../../thresholds/plan.js';
import { judgedRowsTable } from '../results/judged-rows.mjs';
import { table, byId, outcome } from '../lib.mjs';

function burstExpected() {
  const spike = plan({ experiment: 'burst', suite: 'spike' });
  const soak = plan({ experiment: 'burst', suite: 'soak' });
  const bursts = spike.knobs.bursts;
  const steps = [...new Set(spike.cases.map((c) => c.step))];
  const c = byId(spike);
  const rows = steps.map((s) => {
    const first = spike.cases.find((x) => x.step === s);
    return [
      `${first.rate} r/s, ${first.durationMs / 1000} s`,
      ...bursts.map((b) => (c[`b${b}-${s}`] ? outcome(c[`b${b}-${s}`]) : '')),
    ];
  });
  for (const x of soak.cases)
    rows.push([
      `${x.rate} r/s, ${x.durationMs / 1000} s (soak)`,
      ...bursts.map((b) => (x.target === `b${b}` ? outcome(x) : '')),
    ]);
  return table(['load', ...bursts.map((b) => `burst ${b}: 200 / 503`)], rows);
}

export default { 'burst-expected': burstExpected, 'burst-judged': () => judgedRowsTable('burst') };
