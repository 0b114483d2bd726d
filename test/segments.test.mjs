// Execution segments (lab/run/segments.mjs): each process's arguments, and the merge of their
// summaries into one a single process would have given: counts added, maxima kept, and
// percentiles bounded by the largest segment's.
import test from 'node:test';
import assert from 'node:assert/strict';
import { segmentArgs, mergeSummaries } from '../lab/run/segments.mjs';
import { parseRunArgs } from '../lab/cli/args.mjs';

test('segment i of n covers i/n to (i+1)/n of the same sequence, tagged', () => {
  assert.deepEqual(segmentArgs(0, 2), ['--execution-segment', '0:1/2', '--execution-segment-sequence', '0,1/2,1', '--tag', 'segment=0']);
  assert.deepEqual(segmentArgs(2, 3), ['--execution-segment', '2/3:1', '--execution-segment-sequence', '0,1/3,2/3,1', '--tag', 'segment=2']);
});

test('summaries merge: counts add, rates from passes and fails, max of maxima, largest percentile', () => {
  const s = (count, max, p99, passes, fails) => ({
    metrics: {
      'http_reqs{case:a,status:200}': { type: 'counter', values: { count, rate: count / 10 } },
      'http_req_duration{case:a}': { type: 'trend', values: { max, min: 1, 'p(99)': p99, med: 2, avg: 3 } },
      'http_req_failed{case:a}': { type: 'rate', values: { rate: passes / (passes + fails), passes, fails } },
    },
    setup_data: { t0: 5 },
  });
  const m = mergeSummaries([s(100, 900, 400, 1, 99), s(50, 1200, 300, 3, 47)]).metrics;
  assert.equal(m['http_reqs{case:a,status:200}'].values.count, 150);
  assert.equal(m['http_req_duration{case:a}'].values.max, 1200);
  assert.equal(m['http_req_duration{case:a}'].values['p(99)'], 400);
  assert.equal(m['http_req_failed{case:a}'].values.rate, 4 / 150);
});

test('--segments is checked before anything starts', () => {
  assert.equal(parseRunArgs(['spike', '--quick', '--segments=2']).segments, 2);
  assert.throws(() => parseRunArgs(['spike', '--segments=0']), /1\.\.8/);
  assert.throws(() => parseRunArgs(['spike', '--segments=2', '--no-metrics']), /needs the metrics stores/);
  assert.throws(() => parseRunArgs(['load/cdn', '--segments=2']), /capped plan/);
});
