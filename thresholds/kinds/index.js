/*
 * The plan kinds, by name: each says how an experiment of its kind becomes a plan and its k6
 * thresholds (thresholds/kinds/README.md states the interface). Adding a kind is its file here
 * and one line below, with its executor in k6/lib/kinds/ and its judge in lab/kinds/.
 */
import limiter from './limiter.js';
import closedLoop from './closed-loop.js';
import capped from './capped.js';
import capacity from './capacity.js';

export const kinds = Object.fromEntries([limiter, closedLoop, capped, capacity].map((k) => [k.name, k]));

/** The kind of an experiment (or of a plan, through its experiment's declaration). */
export function kindNamed(name) {
  const k = kinds[name];
  if (!k) throw new Error(`unknown plan kind '${name}'; known: ${Object.keys(kinds).join(', ')}`);
  return k;
}
export const kindOf = (exp) => kindNamed(exp.kind);
