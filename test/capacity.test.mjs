// The json-filter (capacity) plans, how a ramp's steps become a breakpoint, and how a run is
// judged against the references and the backend's own count.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { plan } from '../thresholds/plan.js';
import { comparisonBounds, CAPACITY, relayedMetric } from '../thresholds/kinds/capacity.js';
import { judge as judgeCapacity, rampSteps, breakpoint } from '../lab/kinds/capacity.mjs';
import jsonFilter from '../thresholds/experiments/json-filter.js';

const byId = (p) => Object.fromEntries(p.cases.map((c) => [c.id, c]));

test('breakpoint plan: every server and reference unloaded, at a fixed rate, closed, then ramped; nothing overlaps; --quick shortens only time', () => {
  const slow = plan({ experiment: 'json-filter', suite: 'breakpoint' });
  const quick = plan({ experiment: 'json-filter', suite: 'breakpoint', factor: 5 });
  const servers = ['node', 'node-cluster', 'erlang', 'nginx', 'direct'];
  assert.deepEqual(slow.cases.map((c) => c.id), ['base', 'cost', 'closed', 'ramp'].flatMap((k) => servers.map((s) => `${s}-${k}`)));
  for (let i = 1; i < slow.cases.length; i += 1) {
    const [a, b] = [slow.cases[i - 1], slow.cases[i]];
    const gap = a.kind === 'open' && b.kind === 'open' ? 0 : a.graceS * 1000;
    assert.ok(b.startMs - b.connectS * 1000 >= a.startMs + a.durationMs + gap, `${b.id} starts after ${a.id} has settled`);
  }
  const c = byId(slow);
  const [ramp, closed] = [c['node-ramp'], c['node-closed']];
  assert.equal(closed.vus, 2500, 'the seed wrk -c 2500');
  assert.equal(closed.durationMs, 20_000, 'the seed wrk -d 20');
  const q = byId(quick);
  assert.deepEqual(q['node-ramp'].steps, ramp.steps, 'same rates');
  assert.equal(q['node-closed'].durationMs, 4000);
  assert.equal(q['node-closed'].connectS, closed.connectS, 'opening 2500 connections takes real time');
  assert.equal(ramp.expected.relayMinMs.lo, 29, 'backend delay less nginx clock ms');
  assert.equal(ramp.path, '/filter/node-ramp', 'each case its own path, counted by the backend');
  assert.equal(c['nginx-closed'].relaysAll, true);
  assert.equal(c['direct-closed'].service, 'json-filter-backend');
  assert.deepEqual(Object.keys(c['erlang-cost'].expected.efficiency), ['nginx', 'direct']);
  assert.equal(c['erlang-cost'].expected.efficiency.nginx.case, 'nginx-cost');
  assert.equal(q['erlang-cost'].durationMs, 4000, 'CPU needs real seconds: not compressed');
  assert.equal(c['erlang-base'].expected.overheadMs.direct.case, 'direct-base');
  assert.equal(c['direct-cost'].expected.efficiency, undefined, 'the direct backend is the reference of all');
  const smoke = byId(plan({ experiment: 'json-filter', suite: 'smoke' }));
  assert.equal(smoke['node-smoke'].expected.overheadMs, undefined, 'smoke compares nothing');
});

test('bounds from a measured spread: the worst run passes, a 2x slowdown of the best fails, with the same room', () => {
  const { floors, ceilings } = comparisonBounds({ efficiency: { x: { nginx: [0.6, 0.9] } }, overheadMs: { x: [0.2, 1.2] } }, 5);
  const floor = floors.x.nginx;
  assert.ok(floor <= 0.6 && floor > 0.9 / 2, `floor ${floor}`);
  assert.ok(Math.abs(0.6 / floor - floor / 0.45) < 0.01, 'equal relative room either side');
  assert.ok(ceilings.x >= 1.2 && ceilings.x < 0.2 + 5, `ceiling ${ceilings.x}`);
  assert.throws(() => comparisonBounds({ efficiency: { x: { nginx: [0.4, 0.9] } }, overheadMs: {} }, 5), /spans 2x/);
  assert.throws(() => comparisonBounds({ efficiency: {}, overheadMs: { x: [0, 6] } }, 5), /hides a 5 ms slowdown/);
  // The committed spread must allow bounds at all.
  assert.doesNotThrow(() => comparisonBounds(jsonFilter.measuredSpread, jsonFilter.perturbMs));
});

test('knob values that would make a threshold vacuous are refused', () => {
  assert.throws(() => plan({ experiment: 'json-filter', suite: 'smoke', overrides: { backend_delay_ms: '0' } }), /backend_delay_ms: '0' is under 5: below it no threshold/);
  assert.throws(() => plan({ experiment: 'json-filter', suite: 'smoke', overrides: { relay_percent: '0' } }), /relay_percent: '0' is under 1/);
  assert.throws(() => plan({ experiment: 'json-filter', suite: 'smoke', overrides: { relay_percent: '100' } }), /relay_percent: '100' is over 99/);
});

// A summary as k6 would write it for one step of a ramp.
const stepMetrics = (metric, rate, { reqs, failed = 0, p99 = 40, relayP50 = 30.5 }) => ({
  [`${metric}_${rate}_reqs`]: { values: { count: reqs } },
  [`${metric}_${rate}_failed`]: { values: { passes: failed, rate: reqs ? failed / reqs : 0 } },
  [`${metric}_${rate}_ms`]: { values: { 'p(99)': p99 } },
  [`${metric}_${rate}_relay_ms`]: { values: { med: relayP50 } },
});

test('a step is sustained with 95 % of its rate, p99 < 1 s and errors < 1 %; the breakpoint is the last step before the first that is not', () => {
  const c = { metric: 'x', steps: [500, 1000, 2000, 4000], holdS: 4 };
  const metrics = {
    ...stepMetrics('x', 500, { reqs: 2000 }), ...stepMetrics('x', 1000, { reqs: 3990, p99: 60 }),
    ...stepMetrics('x', 2000, { reqs: 7000, p99: 80 }), ...stepMetrics('x', 4000, { reqs: 16000, p99: 90 }),
  };
  const steps = rampSteps(c, metrics);
  assert.deepEqual(steps.map((s) => s.sustained), [true, true, false, true]);
  assert.equal(breakpoint(steps), 1000, '2000 r/s delivered only 87.5 %: later steps do not count');
  const errors = rampSteps(c, { ...metrics, ...stepMetrics('x', 1000, { reqs: 4000, failed: 40 }) });
  assert.equal(errors[1].sustained, false, `exactly ${CAPACITY.errorRate * 100} % errors is not under it`);
  assert.equal(rampSteps(c, { ...metrics, ...stepMetrics('x', 500, { reqs: 0 }) })[0].p99, null, 'no requests, no latency (k6 reports zeros)');
});

const T0 = 1_700_000_000_000;

/**
 * A run in which every case of the breakpoint plan passes: k6's summary and the services' CPU
 * samples. `tweak` changes one figure: a case's counters, a server's CPU per request, or the
 * latency a server adds.
 */
function healthyRun(p, tweak = {}) {
  const metrics = {};
  const cpu = {};
  const costUs = { node: 60, 'node-cluster': 100, erlang: 150, nginx: 43, direct: 34, ...tweak.costUs };
  for (const c of p.cases) {
    const relayed = 1000;
    const acct = { relay_sent: relayed, relay_answered: relayed, relay_ok: relayed, relay_gateway_error: 0, backend_received: relayed, ...tweak[c.id] };
    for (const [k, n] of Object.entries(acct)) metrics[`${c.metric}_${k}`] = { values: { count: n } };
    const p50 = c.target === 'direct' ? 30.1 : 30.6 + (tweak.addedMs?.[c.target] ?? 0);
    metrics[relayedMetric(c)] = { values: { min: 29.4, med: p50 } };
    if (c.kind === 'ramp') {
      for (const r of c.steps) Object.assign(metrics, stepMetrics(c.metric, r, { reqs: r * c.holdS, relayP50: p50 }));
      continue;
    }
    metrics[`http_reqs{case:${c.id}}`] = { values: { count: c.kind === 'open' ? c.rate * c.seconds : 40_000 } };
    metrics[`http_req_failed{case:${c.id}}`] = { values: { rate: 0 } };
    metrics[`http_req_duration{case:${c.id}}`] = { values: { 'p(99)': 40 } };
    if (c.warmS) {
      const steady = 30_000;
      metrics[`${c.metric}_steady_reqs`] = { values: { count: steady } };
      // The service's CPU grows linearly over the case, at its cost per steady request.
      const used = (costUs[c.target] * steady) / 1e6;
      const span = c.durationMs / (c.durationMs - c.warmS * 1000);
      const series = (cpu[c.service] ||= [[T0, 0]]);
      const before = series.at(-1)[1];
      series.push([T0 + c.startMs, before], [T0 + c.startMs + c.durationMs, before + used * span]);
    }
  }
  return { summary: { metrics, setup_data: { t0: T0 } }, cpu };
}

const judge = (p, run) => judgeCapacity(p, { summary: run.summary, cpu: run.cpu }).outcomes;
const failing = (p, run) => judge(p, run).filter((o) => !o.pass).map((o) => o.case);

test('judging a breakpoint run: CPU per request against the references, latency over the direct backend', () => {
  const p = plan({ experiment: 'json-filter', suite: 'breakpoint', factor: 5 });
  assert.deepEqual(failing(p, healthyRun(p)), []);
  const erlang = judge(p, healthyRun(p)).find((o) => o.case === 'json-filter/erlang-cost');
  assert.ok(Math.abs(erlang.measured.costUs - 150) < 1e-6, 'cost per request from the CPU samples of its window');
  // The best efficiency measured on this machine kind passes; twice that cost fails against both references.
  const best = 43 / jsonFilter.measuredSpread.efficiency.erlang.nginx[1];
  assert.deepEqual(failing(p, healthyRun(p, { costUs: { erlang: best, direct: 43 } })), []);
  const slow = judge(p, healthyRun(p, { costUs: { erlang: best * 2, direct: 43 } })).find((o) => o.case === 'json-filter/erlang-cost');
  assert.deepEqual([slow.pass, slow.checks.efficiency_nginx, slow.checks.efficiency_direct], [false, false, false]);
  // 5 ms more per request at 500 r/s: over the ceiling.
  assert.deepEqual(failing(p, healthyRun(p, { addedMs: { node: 5 } })), ['json-filter/node-base']);
  // No CPU samples: no cost, no pass.
  assert.ok(failing(p, { ...healthyRun(p), cpu: {} }).includes('json-filter/node-cost'));
});

test('the backend must receive what each case relayed; only requests whose fate k6 cannot know are forgiven, one by one', () => {
  const p = plan({ experiment: 'json-filter', suite: 'breakpoint', factor: 5 });
  const judgeAcct = (acct) => judge(p, healthyRun(p, { 'node-closed': acct })).find((o) => o.case === 'json-filter/node-closed');
  assert.equal(judgeAcct({}).checks.backend, true);
  assert.equal(judgeAcct({ backend_received: 1001 }).checks.backend, false, 'one filtered document reached the backend');
  assert.equal(judgeAcct({ backend_received: 999 }).checks.backend, false, 'one relayed document did not');
  // 3 sent without an answer seen and 2 answered 504: the backend may have had any of those 5.
  const unsure = { relay_sent: 1000, relay_answered: 997, relay_ok: 995, relay_gateway_error: 2 };
  assert.equal(judgeAcct({ ...unsure, backend_received: 995 }).checks.backend, true);
  assert.equal(judgeAcct({ ...unsure, backend_received: 1000 }).checks.backend, true);
  assert.equal(judgeAcct({ ...unsure, backend_received: 1001 }).checks.backend, false);
  assert.equal(judgeAcct({ backend_received: undefined }).checks.backend, false, 'no count from the backend fails');
});
