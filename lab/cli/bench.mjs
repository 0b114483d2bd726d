/*
 * `bench <experiment> [--quick] [knobs]` and `bench k6 [--quick]`: a benchmark (lab/bench/ finds
 * which), not a test: it fails only when a run itself fails.
 */
import { parseRunArgs } from './args.mjs';
import { bench as runBench, benchNamed } from '../bench/index.mjs';

export default async function bench(words, { root, say }) {
  // `bench k6` measures k6 itself (on cdn's stack): only --quick applies.
  if (words[0] === 'k6') {
    const extra = words.slice(1).filter((w) => w !== '--quick');
    if (extra.length) throw new Error(`bench k6 takes only --quick; got '${extra.join(' ')}'`);
    return runBench(root, { name: 'k6', factor: words.includes('--quick') ? 5 : 1, overrides: {} }, { say });
  }
  // A name with no bench is refused first, naming the benches there are; then its knobs are read.
  const [name] = words;
  if (name && !name.startsWith('-') && !name.includes('=')) await benchNamed(root, name);
  return runBench(root, parseRunArgs(words, { target: 'experiment' }), { say });
}
