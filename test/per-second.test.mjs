/*
 * The boards' per-second query (dashboards/src/lib.mjs perSecond), evaluated by Prometheus's own
 * engine (`promtool test rules`) over series made to order: a proxy's counter that a new process
 * starts again under the same labels (the last run's value still seen, as after a run whose
 * Prometheus stopped with its stack), and a series born inside a step. The query it replaced
 * summed before it subtracted, and drew the restart as a negative count.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { perSecond } from '../dashboards/src/lib.mjs';
import { absent, needs } from './lib/needs.mjs';

const STEP = '1m';
const atStep = (expr) => expr.replaceAll('$__interval_ms', '60000').replaceAll('$__interval', STEP);
const missing = absent('promtool');

// One step a minute: the last run's proxy counted 30 for case a; a new proxy then counts 3, then 8.
// Case b's 429s are born inside the 2m step with 7, then 9; its 200s grow 4 a step throughout.
const SERIES = [
  { series: 'c{case="a"}', values: '0 10 20 30 3 8' },
  { series: 'c{case="b", status="429"}', values: '_ _ 7 9 9 9' },
  { series: 'c{case="b", status="200"}', values: '0 4 8 12 16 20' },
];

/** Runs promtool on expected samples of `expr` at each eval time; returns its output and status. */
function evaluate(expr, expected) {
  const dir = mkdtempSync(join(tmpdir(), 'lab-promtool-'));
  try {
    const tests = expected.map(([minute, samples]) => ({
      expr,
      eval_time: `${minute}m`,
      exp_samples: Object.entries(samples).map(([kase, perMinute]) => ({
        labels: `{case="${kase}"}`,
        value: perMinute / 60,
      })),
    }));
    const file = join(dir, 'test.yml');
    const spec = {
      rule_files: [],
      evaluation_interval: STEP,
      tests: [{ interval: STEP, input_series: SERIES, promql_expr_test: tests }],
    };
    writeFileSync(file, JSON.stringify(spec));
    const r = spawnSync('promtool', ['test', 'rules', file], { encoding: 'utf8' });
    return { ok: r.status === 0, out: `${r.stdout}${r.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('per second: a counter started again counts what it holds, and a series born inside a step counts whole', (t) => {
  if (needs(t, missing)) return;
  const expr = atStep(perSecond('c'));
  const r = evaluate(expr, [
    [1, { a: 10, b: 4 }],
    [2, { a: 10, b: 11 }], // 4 more 200s, and the 7 429s born in the step
    [3, { a: 10, b: 6 }],
    [4, { a: 3, b: 4 }], // the new proxy's 3, not 3 - 30
    [5, { a: 5, b: 4 }],
  ]);
  assert.ok(r.ok, r.out);
});

test('the query it replaced (sum, then subtract) draws the restart as -27 and fails the same evaluation', (t) => {
  if (needs(t, missing)) return;
  const old = atStep(
    `((sum by (case) (c) - sum by (case) (c offset $__interval)) or sum by (case) (c)) / ($__interval_ms / 1000)`,
  );
  assert.ok(evaluate(old, [[4, { a: -27, b: 4 }]]).ok, 'the old query drew -27 at the restart');
  const r = evaluate(old, [[4, { a: 3, b: 4 }]]);
  assert.ok(!r.ok && /exp:.*got:/s.test(r.out), r.out);
});
