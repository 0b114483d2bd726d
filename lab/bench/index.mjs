/*
 * `bench <name>`: which benchmark a name runs. The lab's own tools have theirs here (TOOLS: `k6`
 * measures k6 itself, `results` the results site's build); an experiment's
 * bench is lab/bench/<experiment>.mjs, found here by the experiment's name in the list, so
 * adding one is that file alone. Each exports `default async (root, request, { say })`.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { list } from '../../thresholds/experiments/index.js';

const benchFile = (root, name) => join(root, 'lab', 'bench', `${name}.mjs`);

/** The benches of the lab's own tools, which take only --quick: name -> module. */
export const TOOLS = {
  k6: './k6.mjs',
  results: './results.mjs',
  stores: './stores.mjs',
  'limiter-rate': './limiter-rate.mjs',
  tls: './tls.mjs',
  'haproxy-window': './haproxy-window.mjs',
};

/** The names `bench` takes: the experiments that have a bench, in the list's order, then the tools'. */
export function benchNames(root) {
  return [...list.map((e) => e.name).filter((n) => existsSync(benchFile(root, n))), ...Object.keys(TOOLS)];
}

/** The bench function a name runs; for any other name, an error naming those there are. */
export async function benchNamed(root, name) {
  if (Object.hasOwn(TOOLS, name)) return (await import(TOOLS[name])).default;
  if (list.some((e) => e.name === name) && existsSync(benchFile(root, name)))
    return (await import(pathToFileURL(benchFile(root, name)).href)).default;
  throw new Error(`no benchmark for '${name}'; there are: ${benchNames(root).join(', ')}`);
}

export async function bench(root, request, opts = {}) {
  return (await benchNamed(root, request.name))(root, request, opts);
}
