// Execution segments (lab/run/segments.mjs): each process's arguments, and the merge of their
// summaries into one a single process would have given: counts added, maxima kept, and
// percentiles bounded by the largest segment's.
import test from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { segmentArgs, mergeSummaries, scheduleSkew } from '../lab/run/segments.mjs';
import { waitPaused, resumeAll, pausedArgs, shareSetup, PAUSED_BEFORE_RUN } from '../lab/run/starter.mjs';
import { parseRunArgs } from '../lab/cli/args.mjs';

test('segment i of n covers i/n to (i+1)/n of the same sequence, tagged', () => {
  assert.deepEqual(segmentArgs(0, 2), [
    '--execution-segment',
    '0:1/2',
    '--execution-segment-sequence',
    '0,1/2,1',
    '--tag',
    'segment=0',
  ]);
  assert.deepEqual(segmentArgs(2, 3), [
    '--execution-segment',
    '2/3:1',
    '--execution-segment-sequence',
    '0,1/3,2/3,1',
    '--tag',
    'segment=2',
  ]);
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

test("the skew between segments is measured from each one's schedule origin, and carried by the merged summary", () => {
  const part = (origin) => ({
    metrics: { lab_schedule_origin: { type: 'gauge', values: { value: origin + 5, min: origin, max: origin + 5 } } },
  });
  assert.deepEqual(scheduleSkew([part(1000), part(1012), part(1003)]), { originsMs: [1000, 1012, 1003], skewMs: 12 });
  assert.equal(scheduleSkew([part(1000), { metrics: {} }]), null, 'a summary without it: not measured');
  assert.deepEqual(mergeSummaries([part(1000), part(1030)]).schedule, { originsMs: [1000, 1030], skewMs: 30 });
});

/** A stand-in for k6's REST API: paused until PATCHed, ready after `readyAfter` polls. */
function fakeK6(readyAfter) {
  const k6 = { polls: 0, resumedAt: null, paused: true };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', () => {
      if (req.url === '/v1/setup') {
        k6.setups = (k6.setups || 0) + (req.method === 'POST' ? 1 : 0);
        if (req.method === 'PUT') k6.data = JSON.parse(body);
        else k6.data = { t0: 123, before: { a: 1 } };
        return res.end(JSON.stringify({ data: { type: 'setupData', id: 'default', attributes: { data: k6.data } } }));
      }
      if (req.method === 'PATCH') {
        k6.paused = JSON.parse(body).data.attributes.paused;
        k6.resumedAt = performance.now();
      } else k6.polls += 1;
      const status = k6.polls >= readyAfter ? PAUSED_BEFORE_RUN : 1;
      res.end(
        JSON.stringify({
          data: { type: 'status', id: 'default', attributes: { status, paused: k6.paused, 'vus-max': 10 } },
        }),
      );
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ k6, server, address: `127.0.0.1:${server.address().port}` })),
  );
}

test('the starter waits until every process is paused with its VUs, runs setup() once and shares its data, then resumes them together', async () => {
  const fakes = await Promise.all([fakeK6(1), fakeK6(4)]);
  try {
    assert.deepEqual(pausedArgs('127.0.0.1:1234', 0), ['--paused', '--address', '127.0.0.1:1234', '--no-setup']);
    assert.deepEqual(
      pausedArgs('127.0.0.1:1235', 1),
      ['--paused', '--address', '127.0.0.1:1235', '--no-setup', '--no-teardown'],
      'teardown in the first process only',
    );
    const never = new Promise(() => {});
    await waitPaused(
      fakes.map((f) => f.address),
      [never, never],
    );
    assert.ok(fakes[1].k6.polls >= 4, 'polled until the slower one was ready');
    assert.ok(
      fakes.every((f) => f.k6.resumedAt === null),
      'nothing resumed while waiting',
    );
    await shareSetup(fakes.map((f) => f.address));
    assert.deepEqual(
      fakes.map((f) => f.k6.setups || 0),
      [1, 0],
      'setup() ran once, in the first process',
    );
    assert.deepEqual(fakes[1].k6.data, { t0: 123, before: { a: 1 } }, 'the others got its data');
    await resumeAll(fakes.map((f) => f.address));
    assert.ok(fakes.every((f) => f.k6.paused === false));
    assert.ok(
      Math.abs(fakes[0].k6.resumedAt - fakes[1].k6.resumedAt) < 50,
      'resumed at once, not one after the other is ready',
    );
  } finally {
    fakes.forEach((f) => f.server.close());
  }
});

test('the starter gives up, naming the process, when one exits before it is ready', async () => {
  const fake = await fakeK6(1e9);
  try {
    const exited = Promise.resolve({ code: 107, signal: null });
    await assert.rejects(
      waitPaused([fake.address, fake.address], [new Promise(() => {}), exited]),
      /k6 process 1 exited before the start \(code 107/,
    );
    await assert.rejects(
      waitPaused([fake.address], [new Promise(() => {})], { timeoutMs: 200 }),
      /k6 processes 0 were not ready/,
    );
  } finally {
    fake.server.close();
  }
});
