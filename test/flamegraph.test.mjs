// The flame graph maker (lab/bench/flamegraph.mjs): perf script's stacks folded root first,
// laid out as shares of the samples, drawn as SVG.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fold, layout, svg } from '../lab/bench/flamegraph.mjs';

// Three samples as `perf script` prints them: a header line, then the stack leaf first.
const SCRIPT = `node 1 1.0: 500000 cpu-clock:ppp:
\tffffffff81649c0a tcp_ack+0x5a ([kernel.kallsyms])
\t7f0000000001 JS:*handle file:///x.js:1:1+0x10 (/tmp/perf-1.map)
\t55550000 uv_run+0x20 (/usr/bin/node)

node 1 1.1: 500000 cpu-clock:ppp:
\t7f0000000001 JS:*handle file:///x.js:1:1+0x10 (/tmp/perf-1.map)
\t55550000 uv_run+0x20 (/usr/bin/node)

node 1 1.2: 500000 cpu-clock:ppp:
\t7f0000000002 [unknown] (/usr/lib/libc.so.6)
\t55550000 uv_run+0x20 (/usr/bin/node)
`;

test('perf script stacks fold root first, offsets dropped, kernel frames marked, unknown frames named by their library', () => {
  assert.deepEqual(
    [...fold(SCRIPT)],
    [
      ['node;uv_run;JS:*handle file:///x.js:1:1;tcp_ack [k]', 1],
      ['node;uv_run;JS:*handle file:///x.js:1:1', 1],
      ['node;uv_run;[libc.so.6]', 1],
    ],
  );
});

test('boxes are shares of all samples, children side by side inside their parent, small ones left out', () => {
  const boxes = layout(fold(SCRIPT));
  const at = (name) => boxes.find((b) => b.name === name);
  assert.equal(at('all').width, 1);
  assert.equal(at('uv_run').width, 1);
  assert.equal(at('uv_run').depth, 2);
  assert.ok(Math.abs(at('JS:*handle file:///x.js:1:1').width - 2 / 3) < 1e-9);
  assert.ok(Math.abs(at('[libc.so.6]').width - 1 / 3) < 1e-9);
  // Siblings by name: the JS frame first, libc after it.
  assert.equal(at('JS:*handle file:///x.js:1:1').x, 0);
  assert.ok(Math.abs(at('[libc.so.6]').x - 2 / 3) < 1e-9);
  assert.ok(Math.abs(at('tcp_ack [k]').width - 1 / 3) < 1e-9);
  assert.equal(
    layout(fold(SCRIPT), { minShare: 0.5 }).some((b) => b.name === 'tcp_ack [k]'),
    false,
  );
  assert.deepEqual(
    layout(fold(SCRIPT), { maxDepth: 2 }).map((b) => b.name),
    ['all', 'node', 'uv_run'],
    'cut below the second frame',
  );
});

test('the SVG holds one box per frame with its share, names escaped, the sample count in the title', () => {
  const text = svg(layout(fold(SCRIPT.replaceAll('uv_run', 'a<b&c'))), { title: 'node c64' });
  assert.match(text, /node c64 \(3 samples\)/);
  assert.equal((text.match(/<rect x=/g) || []).length, 6);
  assert.match(text, /a&lt;b&amp;c: 3 samples, 100\.0 %/);
  assert.doesNotMatch(text, /a<b/);
});
