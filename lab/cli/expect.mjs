/*
 * `expect <suite> [--quick[=N]] [knobs]`: what the model expects of a suite, as JSON, nothing
 * started; with --sensitivity instead the smallest policy change each case catches.
 */
import { parseRunArgs } from './args.mjs';
import { plansFor } from '../run/suite.mjs';
import { sensitivity } from '../../thresholds/sensitivity.js';
import { formatSensitivity } from './docs.mjs';

export default async function expect(words, { say }) {
  const sens = words.filter((w) => w === '--sensitivity').length;
  if (sens > 1) throw new Error('--sensitivity given twice');
  const req = parseRunArgs(words.filter((w) => w !== '--sensitivity'));
  if (!sens) {
    console.log(JSON.stringify(plansFor(req), null, 1));
    return 0;
  }
  for (const experiment of req.experiments) {
    const s = sensitivity({ experiment, suite: req.name, factor: req.factor, overrides: req.overrides[experiment] });
    say(`${formatSensitivity(s, { perCase: true })}\n`);
  }
  return 0;
}
