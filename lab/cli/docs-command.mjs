/*
 * `docs [--check]`: rewrite the README figures that come from the model (docs.mjs does the
 * work); with --check only say which are stale, and exit 1 if any is.
 */
import { docs } from './docs.mjs';

export default async function docsCommand(words, { root, say }) {
  const check = words.includes('--check');
  const stale = await docs(root, { check });
  if (check && stale.length) {
    console.error(`stale generated figures in: ${stale.join(', ')}; run './labw docs'`);
    return 1;
  }
  say(stale.length ? `rewrote ${stale.join(', ')}` : 'generated figures are up to date');
  return 0;
}
