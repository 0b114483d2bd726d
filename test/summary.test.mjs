// What a k6 script prints and writes at its end: the thresholds with the value each was judged
// on (a handleSummary replaces k6's own summary), and a JUnit case per threshold.
import test from 'node:test';
import assert from 'node:assert/strict';
import { summaryFiles, thresholdsText, junit } from '../k6/lib/summary.js';

const data = {
  metrics: {
    'http_reqs{case:b0-2rps}': {
      values: { count: 120, rate: 3.1 },
      thresholds: { 'count>=114': { ok: true }, 'count<=120': { ok: true } },
    },
    'http_req_duration{case:b0-2rps}': {
      values: { 'p(99)': 5.4798, max: 7.9 },
      thresholds: { 'p(99)<1000': { ok: false } },
    },
    http_reqs: { values: { count: 500 } },
  },
};

test('every threshold is listed with its mark and the statistic it tested, sorted by metric', () => {
  const t = thresholdsText(data);
  assert.deepEqual([t.passed, t.failed], [2, 1]);
  const lines = t.text.split('\n');
  assert.equal(lines[0].trim(), 'http_req_duration{case:b0-2rps}');
  assert.equal(lines[1].trim(), "✗ 'p(99)<1000' p(99)=5.480");
  assert.ok(lines.includes("    ✓ 'count>=114' count=120"));
  assert.ok(!t.text.includes('http_reqs\n'), 'a metric without thresholds is not listed');
});

test('the files go where asked, and JUnit counts the failures', () => {
  const out = summaryFiles(data, { suite: 'spike', experiment: 'burst', cases: [{}] }, 'results');
  assert.deepEqual(Object.keys(out).sort(), [
    'results/spike.burst.junit.xml',
    'results/spike.burst.summary.json',
    'stdout',
  ]);
  assert.match(out.stdout, /spike\.burst: 1 cases, thresholds 2 passed, 1 failed/);
  assert.match(junit(data, 'spike.burst'), /tests="3" failures="1"/);
});
