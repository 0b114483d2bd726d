/*
 * docs/compare-proxies.md's generated block: the recorded compare-proxies run
 * (docs/runs/compare-proxies.json, written by `./labw compare-proxies ... --record`), its table
 * and each proxy's words on where it parts from the limit as stated.
 */
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { table } from '../lib.mjs';
import { COMPARE_HEAD } from '../results/proxies-table.mjs';

export function proxiesDoc(root) {
  const file = join(root, 'docs', 'runs', 'compare-proxies.json');
  if (!existsSync(file))
    throw new Error(
      'no docs/runs/compare-proxies.json: record one with ./labw compare-proxies spike --policy=FILE --record',
    );
  const r = JSON.parse(readFileSync(file, 'utf8'));
  const { limit } = r;
  const head = `Recorded ${r.stamp} (UTC), \`${r.suite}${r.quick ? ` ${r.quick}` : ''}\`: ${limit.rate} r/s per client, ${limit.atOnce} at once, from \`${r.policy}\` (${limit.at.replace(`${root}/`, '')}); steps ${r.rates.join(', ')} r/s (seed time).`;
  const rows = r.rows.map((x) => x.cells.slice(0, -1).concat(x.pass ? 'ok' : 'FAIL'));
  const words = r.runs.map((run) => `- **${run.title}**: ${run.says.join('; ')}.`);
  return [head, '', table(COMPARE_HEAD, rows), '', ...words].join('\n');
}
