/*
 * A run's Script tab, as Grafana Cloud k6 shows a run's script: per k6 process, the scenarios
 * and thresholds k6 ran, as k6 code, each threshold with the model figure and tolerance it came
 * from. From <suite>.<experiment>[.<phase>].options.json (lab/run/start.mjs writes it).
 */
import { esc } from './layout.mjs';
import { optionsCode } from '../export/k6-code.mjs';

/** The Script section's HTML: one block per phase, or why there is none. */
export function scriptHtml(exp, exportWords) {
  const withOptions = exp.phases.filter((p) => p.options);
  if (!withOptions.length)
    return '<p class="notice">No options.json in the run folder: runs made before the runner saved the options k6 ran lack it.</p>';
  const blocks = withOptions.map(
    (p) =>
      `${p.phase ? `<h3>${esc(p.phase)}</h3>` : ''}<pre class="code" data-script="${esc(p.base)}"><code>${esc(optionsCode(p.options))}</code></pre>`,
  );
  return `<p>The same test as one standalone k6 script, for <code>k6 run</code>, <code>k6 archive</code> or a k6-operator TestRun: <code>${esc(exportWords)}</code>. It writes a held flat rate as constant-arrival-rate where k6 allows it.</p>\n${blocks.join('\n')}`;
}
