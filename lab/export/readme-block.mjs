/*
 * A stack README's generated block (`./labw docs`): for one case of each suite, its scenario
 * and thresholds as k6 code, as `./labw export` writes them (at the seed's timing, defaults).
 */
import { plan as makePlan, experimentNamed } from '../../thresholds/plan.js';
import { k6Plan } from '../../thresholds/k6-options.js';
import { exportOptions } from './options.mjs';
import { optionsCode } from './k6-code.mjs';
import { planServices } from './script.mjs';

export function scriptBlock(experiment) {
  const suites = Object.keys(experimentNamed(experiment).suites);
  const parts = suites.map((suite) => {
    const plan = k6Plan(makePlan({ experiment, suite }));
    const c = plan.cases[0];
    const options = exportOptions(plan, Object.fromEntries(planServices(plan).map((s) => [s, s])));
    return `**${suite}**, case \`${c.id}\` of ${plan.cases.length}${plan.phase ? ` (phase ${plan.phase})` : ''}: \`./labw export ${suite}/${experiment}\` writes all of them.\n\n\`\`\`js\n${optionsCode(options, { only: [c.id] })}\`\`\``;
  });
  return parts.join('\n\n');
}
