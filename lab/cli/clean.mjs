/*
 * `clean [--yes]`: delete the stores' data (.lab/data), the runs under results/ and the rendered
 * configs. Without --yes it only lists what it would delete and how big each is (nothing is
 * undone later: results/ holds every run's figures). Refused while a run is live (it writes
 * there: lab/run/lock.mjs) and while the stores are up (they use .lab/data).
 */
import { join } from 'node:path';
import { existsSync, rmSync, readdirSync, lstatSync } from 'node:fs';
import { duSize } from '../lib.mjs';
import { storesUp } from '../stores/stores.mjs';
import { refuseWhileLive } from '../run/lock.mjs';

const isSymlink = (path) => {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
};

/** What clean deletes: the stores' data, every entry of results/ but its README, the rendered configs. */
function doomed(root) {
  // results/ itself stays (with its README): k6 scripts run by hand write their summaries there.
  const results = join(root, 'results');
  const runs = existsSync(results)
    ? readdirSync(results)
        .filter((f) => f !== 'README.md')
        .sort()
        .map((f) => join(results, f))
    : [];
  return [join(root, '.lab', 'data'), ...runs, join(root, '.lab', 'rendered')].filter(
    (d) => existsSync(d) || isSymlink(d),
  );
}

export default async function clean(words, { root, say, topology }) {
  const bad = words.filter((w) => w !== '--yes');
  if (bad.length) throw new Error(`./labw clean takes only --yes; got '${bad.join(' ')}'`);
  const yes = words.includes('--yes');
  refuseWhileLive(root, './labw clean');
  if (await storesUp(topology()))
    throw new Error("the metrics stores are up and use .lab/data: './labw metrics down' first");
  const paths = doomed(root);
  for (const d of paths) say(`${yes ? 'deleting' : 'would delete'} ${d} (${duSize(d)})`);
  if (!yes) {
    say(paths.length ? `nothing deleted: './labw clean --yes' deletes the ${paths.length} above` : 'nothing to delete');
    return paths.length ? 1 : 0;
  }
  for (const d of paths) rmSync(d, { recursive: true, force: true });
  say('kept: the toolchain (.lab/bin, .lab/venv) and node_modules');
  return 0;
}
