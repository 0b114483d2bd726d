/*
 * `bench <experiment> [--quick] [knobs]`, `bench k6 [--quick]` and `bench results [--quick]`: a
 * benchmark (lab/bench/ finds which), not a test: it fails only when a run itself fails.
 */
import { parseRunArgs } from './args.mjs';
import { bench as runBench, benchNamed, TOOLS } from '../bench/index.mjs';

export default async function bench(words, { root, say }) {
  // A tool's bench (k6 itself, the results site): only --quick applies.
  if (Object.hasOwn(TOOLS, words[0] ?? '')) {
    const extra = words.slice(1).filter((w) => w !== '--quick');
    if (extra.length) throw new Error(`bench ${words[0]} takes only --quick; got '${extra.join(' ')}'`);
    // A bench that runs a suite reads its words as `test` does (the command line's own reader).
    return runBench(
      root,
      { name: words[0], factor: words.includes('--quick') ? 5 : 1, overrides: {} },
      { say, parseRunArgs },
    );
  }
  // A name with no bench is refused first, naming the benches there are; then its knobs are read.
  const [name] = words;
  if (name && !name.startsWith('-') && !name.includes('=')) await benchNamed(root, name);
  return runBench(root, parseRunArgs(words, { target: 'experiment' }), { say });
}
