/*
 * `knobs [experiment]`: every experiment's knobs (or one's), with their seed defaults, what
 * each means, and the bounds it is checked against.
 */
import { experiments, experimentNamed } from '../../thresholds/plan.js';
import { describeKnobs } from '../../thresholds/knobs.js';

export default async function knobs([name], { say }) {
  const list = name ? [experimentNamed(name)] : Object.values(experiments);
  for (const e of list) {
    say(`${e.name} (seed ${e.seed}):`);
    for (const k of describeKnobs(e))
      say(
        `  ${e.name}.${k.name}=${k.default}    ${k.doc}; ${k.kind}${k.min !== undefined ? `, at least ${k.min} (${k.minWhy})` : ''}${k.max !== undefined ? `, at most ${k.max} (${k.why})` : ''}`,
      );
  }
  return 0;
}
