/*
 * `test <suite[/experiment]> [--quick[=N]] [--segments=N] [--no-metrics] [knobs]`: run a suite,
 * print its tables; the exit code says whether every case passed.
 */
import { parseRunArgs } from './args.mjs';
import { runSuite } from '../run/suite.mjs';

export default async function test(words, { root, say }) {
  return runSuite(root, parseRunArgs(words), { say });
}
