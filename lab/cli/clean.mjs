/*
 * `clean`: delete the stores' data (.lab/data), the runs under results/ and the rendered
 * configs, saying what it deletes and how big it was; refused while the stores are up.
 */
import { join } from 'node:path';
import { existsSync, rmSync, readdirSync, lstatSync } from 'node:fs';
import { duSize } from './context.mjs';
import { storesUp } from '../stores/stores.mjs';

const isSymlink = (path) => { try { return lstatSync(path).isSymbolicLink(); } catch { return false; } };

export default async function clean(words, { root, say, topology }) {
  if (words.length) throw new Error(`./labw clean takes no arguments; got '${words.join(' ')}'`);
  if (await storesUp(topology())) throw new Error("the metrics stores are up and use .lab/data: './labw metrics down' first");
  // results/ itself stays (with its README): k6 scripts run by hand write their summaries there.
  const results = join(root, 'results');
  const runs = existsSync(results) ? readdirSync(results).filter((f) => f !== 'README.md').map((f) => join(results, f)) : [];
  for (const d of [join(root, '.lab', 'data'), ...runs, join(root, '.lab', 'rendered')]) {
    if (!existsSync(d) && !isSymlink(d)) continue;
    say(`deleting ${d} (${duSize(d)})`);
    rmSync(d, { recursive: true, force: true });
  }
  say('kept: the toolchain (.lab/bin, .lab/venv) and node_modules');
  return 0;
}
