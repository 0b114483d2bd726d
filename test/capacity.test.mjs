// The json-filter (capacity) plans and how a ramp's steps become a breakpoint.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { plan } from '../thresholds/plan.js';
import { rampSteps, breakpoint, CAPACITY } from '../thresholds/capacity.js';
import { capacityOutcomes } from '../lab/report-capacity.mjs';

test('breakpoint plan: per server a ramp then a closed run, one after another; --quick shortens only time', () => {
  const slow = plan({ experiment: 'json-filter', suite: 'breakpoint' });
  const quick = plan({ experiment: 'json-filter', suite: 'breakpoint', factor: 5 });
  assert.deepEqual(slow.cases.map((c) => c.id), ['node-ramp', 'node-closed', 'node-cluster-ramp', 'node-cluster-closed', 'erlang-ramp', 'erlang-closed', 'nginx-ramp', 'nginx-closed']);
  for (let i = 1; i < slow.cases.length; i += 1) {
    const a = slow.cases[i - 1];
    assert.ok(slow.cases[i].startMs >= a.startMs + a.durationMs + a.graceS * 1000, 'no overlap');
  }
  const [ramp, closed] = slow.cases;
  assert.equal(closed.vus, 2500, 'the seed wrk -c 2500');
  assert.equal(closed.durationMs, 20_000, 'the seed wrk -d 20');
  assert.deepEqual(quick.cases[0].steps, ramp.steps, 'same rates');
  assert.equal(quick.cases[1].durationMs, 4000);
  assert.equal(ramp.expected.relayMinMs.lo, 29, 'backend delay less nginx clock ms');
  assert.equal(slow.cases.find((c) => c.id === 'nginx-closed').relaysAll, true);
});

test('a step is sustained with 95 % of its rate, p99 < 1 s and errors < 1 %; the breakpoint is the last step before the first that is not', () => {
  const c = { metric: 'x', steps: [500, 1000, 2000, 4000], holdS: 4 };
  const m = (rate, reqs, failed, p99) => ({
    [`x_${rate}_reqs`]: { values: { count: reqs } },
    [`x_${rate}_failed`]: { values: { count: failed } },
    [`x_${rate}_ms`]: { values: { 'p(99)': p99 } },
  });
  const metrics = { ...m(500, 2000, 0, 40), ...m(1000, 3990, 0, 60), ...m(2000, 7000, 0, 80), ...m(4000, 16000, 0, 90) };
  const steps = rampSteps(c, metrics);
  assert.deepEqual(steps.map((s) => s.sustained), [true, true, false, true]);
  assert.equal(breakpoint(steps), 1000, '2000 r/s delivered only 87.5 %: later steps do not count');
  const errors = rampSteps(c, { ...metrics, ...m(1000, 4000, 40, 60) });
  assert.equal(errors[1].sustained, false, `exactly ${CAPACITY.errorRate * 100} % errors is not under it`);
});

test('the backend must receive exactly the documents that were to reach it', () => {
  const p = plan({ experiment: 'json-filter', suite: 'smoke' });
  const summary = { metrics: { backend_expected: { values: { count: 50 } }, http_req_failed: { values: { passes: 0, rate: 0 } } } };
  const judge = (before, after) => capacityOutcomes(p, summary, { before, after }).outcomes.at(-1).pass;
  assert.equal(judge(100, 150), true);
  assert.equal(judge(100, 151), false, 'one filtered document reached the backend');
  assert.equal(judge(100, 149), false, 'one relayed document did not');
});
