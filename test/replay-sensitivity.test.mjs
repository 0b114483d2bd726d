/*
 * The smallest policy change a recorded run's replay catches (lab/results/replay-sensitivity.mjs),
 * on a run of two routes, each its own limiter (test/fixtures/replay/README.md).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readRun } from '../lab/results/runs.mjs';
import { replaySensitivity } from '../lab/results/replay-sensitivity.mjs';

const FIXTURE = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'replay');
const TESTID = '20261129-105958-835-2686-spike-quick5';

test("each route's numbers moved on their own, the other route's policy kept as the run had it", () => {
  const rows = replaySensitivity(readRun(FIXTURE, TESTID, { panels: false }));
  const shown = (x) => (x ? Number(x.value.toPrecision(6)) : '-');
  const said = rows.map((r) => `${r.target} ${r.field} ${r.value}: ${shown(r.down)} ${shown(r.up)}`);
  // traefik-forwarded.dynamic.yml: api 20 r/s, burst 10; search 5 r/s, burst 5 (x5 at --quick: period 0.2 s).
  assert.deepEqual(said, [
    'api average 20: 19 21',
    'api periodS 0.2: 0.196 0.204',
    'api burst 10: 8 12',
    'search average 5: 4 6',
    'search periodS 0.2: 0.19 0.204',
    'search burst 5: 4 7',
  ]);
  // What caught a change is a case of the route changed, never the other's.
  for (const r of rows)
    for (const f of [...(r.down?.failed ?? []), ...(r.up?.failed ?? [])])
      assert.match(f, new RegExp(`^traefik-forwarded/${r.target}-`), f);
});
