/*
 * `bench <experiment> [--quick] [knobs]`, `bench k6 [--quick]` and `bench results [--quick]`: a
 * benchmark (lab/bench/ finds which), not a test: it fails only when a run itself fails.
 */
import { parseRunArgs } from './args.mjs';
import { bench as runBench, benchNamed, TOOLS } from '../bench/index.mjs';

/**
 * A tool bench's words: --quick, --proxy=NAME[,NAME] (the proxies a bench that runs each proxy
 * runs: limiter-rate's) and --rates=R[,R] (the rates it tries, whole r/s), checked here.
 */
function toolWords(words) {
  const proxyWord = words.find((w) => w.startsWith('--proxy='));
  const ratesWord = words.find((w) => w.startsWith('--rates='));
  const extra = words.slice(1).filter((w) => w !== '--quick' && w !== proxyWord && w !== ratesWord);
  if (extra.length)
    throw new Error(`bench ${words[0]} takes only --quick, --proxy=NAME and --rates=R,R; got '${extra.join(' ')}'`);
  const rates = ratesWord ? ratesWord.slice('--rates='.length).split(',') : null;
  if (rates?.some((r) => !/^[1-9]\d{0,4}$/.test(r)))
    throw new Error(`${ratesWord}: whole numbers of requests a second, 1 to 99999, joined by commas`);
  return {
    proxies: proxyWord ? proxyWord.slice('--proxy='.length).split(',') : null,
    rates: rates ? rates.map(Number) : null,
  };
}

export default async function bench(words, { root, say }) {
  // A tool's bench (k6 itself, the results site): only --quick applies.
  if (Object.hasOwn(TOOLS, words[0] ?? '')) {
    const { proxies, rates } = toolWords(words);
    // A bench that runs a suite reads its words as `test` does (the command line's own reader).
    return runBench(
      root,
      {
        name: words[0],
        factor: words.includes('--quick') ? 5 : 1,
        overrides: {},
        proxies,
        rates,
      },
      { say, parseRunArgs },
    );
  }
  // A name with no bench is refused first, naming the benches there are; then its knobs are read.
  const [name] = words;
  if (name && !name.startsWith('-') && !name.includes('=')) await benchNamed(root, name);
  return runBench(root, parseRunArgs(words, { target: 'experiment' }), { say });
}
