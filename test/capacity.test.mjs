// The json-filter (capacity) plans, how a ramp's steps become a breakpoint, and how a run is
// judged against the references and the backend's own count.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { plan } from '../thresholds/plan.js';
import {
  comparisonBounds,
  CAPACITY,
  relayedMetric,
  phaseIds,
  k6Plan,
  capacityThresholds,
} from '../thresholds/kinds/capacity.js';
import { k6Options } from '../thresholds/k6-options.js';
import { durationMs } from '../thresholds/k6-duration.js';
import { judge as judgeCapacity, rampSteps, breakpoint } from '../lab/kinds/capacity.mjs';
import jsonFilter from '../thresholds/experiments/json-filter.js';
import { walkPhases } from '../lab/kinds/phases.mjs';
import { parseWrk } from '../lab/lib/wrk.mjs';
import { wrkGroups, mergeSlices } from '../lab/run/wrk.mjs';
import { wrkFigures } from '../lab/kinds/capacity.mjs';
import { recordedSpread } from '../lab/docs/json-filter.mjs';

const byId = (p) => Object.fromEntries(p.cases.map((c) => [c.id, c]));

/**
 * The most VUs k6 plans to hold at one time (lib/executor: what GetExecutionRequirements says
 * of per-vu-iterations and ramping-arrival-rate, from each scenario's start): what it starts.
 */
function peakPlannedVus(scenarios) {
  const spans = Object.values(scenarios).map((sc) => {
    const from = durationMs(sc.startTime);
    const held = sc.stages ? sc.stages.reduce((a, st) => a + durationMs(st.duration), 0) : durationMs(sc.maxDuration);
    return { from, to: from + held + durationMs(sc.gracefulStop), vus: sc.preAllocatedVUs ?? sc.vus };
  });
  return Math.max(
    ...spans.map((a) => spans.filter((b) => b.from <= a.from && a.from < b.to).reduce((n, b) => n + b.vus, 0)),
  );
}

test('breakpoint plan: one phase per server, each case judged against the references followed by the same load on each, beside it (the latency reference alongside, at the same time); k6 first, then wrk; nothing else overlaps; --quick shortens only time', () => {
  const slow = plan({ experiment: 'json-filter', suite: 'breakpoint' });
  const quick = plan({ experiment: 'json-filter', suite: 'breakpoint', factor: 5 });
  const servers = ['node', 'node-cluster', 'erlang', 'nginx'];
  assert.deepEqual(phaseIds(slow), servers, 'the backend reached directly is measured only beside the others');
  assert.deepEqual(
    k6Plan(slow, { SERVER: 'node' }).cases.map((c) => c.id),
    [
      'node-base',
      'direct-base-beside-node',
      'node-cost',
      'nginx-cost-beside-node',
      'direct-cost-beside-node',
      'node-ramp',
      'node-closed',
      'nginx-closed-beside-node',
    ],
  );
  assert.deepEqual(
    k6Plan(slow, { SERVER: 'nginx' }).cases.map((c) => c.id),
    ['nginx-base', 'direct-base-beside-nginx', 'nginx-cost', 'direct-cost-beside-nginx', 'nginx-ramp', 'nginx-closed'],
  );
  for (const s of servers) {
    const part = k6Plan(slow, { PHASE: s });
    const k6 = part.cases.filter((c) => c.generator !== 'wrk');
    const wrk = part.cases.filter((c) => c.generator === 'wrk');
    assert.equal(
      k6[0].startMs - k6[0].connectS * 1000,
      slow.leadInMs,
      "k6's cases (their connections first) start after its own lead-in",
    );
    const last = k6.at(-1);
    assert.equal(
      part.durationS,
      (last.startMs +
        last.durationMs +
        last.graceS * 1000 +
        wrk.reduce((a, c) => a + c.pauseMs + c.durationMs + c.settleMs, 0)) /
        1000,
    );
    const sc = k6Options(part, Object.fromEntries(part.cases.map((c) => [c.service, 'http://127.0.0.1:1']))).scenarios;
    assert.deepEqual(
      Object.keys(sc),
      k6.flatMap((c) => (c.connectS ? [`${c.id}-connect`, c.id] : [c.id])),
      "k6 runs none of wrk's",
    );
    // An open run's VUs open their connections in a window before it, so that the run's first
    // second is not 1000 connects (k6 hands arrivals to every VU in turn).
    for (const c of k6.filter((x) => x.kind === 'open')) {
      assert.deepEqual(
        [sc[`${c.id}-connect`].vus, sc[c.id].preAllocatedVUs, sc[c.id].maxVUs],
        [c.vus, c.vus, c.vus],
        c.id,
      );
      assert.equal(parseInt(sc[`${c.id}-connect`].startTime, 10), c.startMs - c.connectS * 1000, c.id);
      assert.ok(
        parseInt(sc[`${c.id}-connect`].maxDuration, 10) < c.connectS * 1000,
        `${c.id}: its connections are open before it starts`,
      );
    }
    // The direct backend's latency reference is sent alongside its case: same start, same length.
    for (const b of k6.filter((x) => x.alongside)) {
      const a = k6.find((x) => x.id === b.beside);
      assert.equal(a.judge, 'latency', `${b.id}: only a latency reference goes alongside`);
      assert.deepEqual([b.startMs, b.durationMs, b.connectS], [a.startMs, a.durationMs, a.connectS], b.id);
    }
    assert.deepEqual(
      k6.filter((x) => x.alongside).map((x) => x.id),
      [`direct-base-beside-${s}`],
      'the cost references are sent after their case: the backend CPU would hold the relayed requests too',
    );
    const oneAfterAnother = k6.filter((x) => !x.alongside);
    for (let i = 1; i < oneAfterAnother.length; i += 1) {
      const [a, b] = [oneAfterAnother[i - 1], oneAfterAnother[i]];
      const gap = a.kind === 'open' && b.kind === 'open' ? (a.catchUpS + a.graceS) * 1000 : a.graceS * 1000;
      assert.ok(
        b.startMs - b.connectS * 1000 >= a.startMs + a.durationMs + gap,
        `${b.id} (its connections first) starts after ${a.id} has settled`,
      );
    }
    // k6 starts at once every VU its scenarios could hold at the same time, each until its
    // stages and graceful stop are over: no two cases' VUs are held together, but a case's and
    // the reference sent alongside it.
    const together = Math.max(...oneAfterAnother.map((c) => c.vus ?? 0));
    const alongside = Math.max(0, ...k6.filter((x) => x.alongside).map((x) => 2 * x.vus));
    assert.equal(peakPlannedVus(sc), Math.max(together, alongside), `${s}: VUs k6 starts`);
  }
  assert.throws(
    () => k6Plan(slow, { SERVER: 'nope' }),
    /SERVER=nope: no such server in this plan; it has node, node-cluster, erlang, nginx/,
  );
  const c = byId(slow);
  const [ramp, closed] = [c['node-ramp'], c['node-closed']];
  assert.equal(closed.vus, 2500, 'the seed wrk -c 2500');
  assert.equal(closed.durationMs, 20_000, 'the seed wrk -d 20');
  assert.deepEqual(capacityThresholds(closed), {}, 'k6 judges nothing of a case wrk sends');
  assert.equal(closed.expected.throughput.nginx.case, 'nginx-closed-beside-node');
  assert.equal(c['nginx-closed-beside-node'].service, 'json-filter-nginx');
  assert.equal(c['nginx-closed'].expected.throughput, undefined, 'the reference is judged against nothing');
  const q = byId(quick);
  assert.deepEqual(q['node-ramp'].steps, ramp.steps, 'same rates');
  assert.equal(
    q['node-closed'].durationMs,
    16_000,
    'a closed case keeps 4 slices of 4 real seconds: each opens the connections before its steady part',
  );
  assert.deepEqual([q['node-closed'].sliceS, q['node-closed'].steady], [4, { fromS: 1.5, toS: 3.7 }]);
  assert.equal(ramp.expected.relayMinMs.lo, 29, 'backend delay less nginx clock ms');
  assert.equal(ramp.path, '/filter/node-ramp', 'each case its own path, counted by the backend');
  assert.equal(c['nginx-cost-beside-node'].path, '/filter/nginx-cost-beside-node');
  assert.equal(c['direct-cost-beside-node'].service, 'json-filter-backend');
  assert.ok(c['direct-cost-beside-node'].warmS > 0, 'a cost reference is counted as a cost case is');
  assert.deepEqual(Object.keys(c['erlang-cost'].expected.efficiency), ['nginx', 'direct']);
  assert.equal(c['erlang-cost'].expected.efficiency.nginx.case, 'nginx-cost-beside-erlang');
  assert.equal(
    c['erlang-cost'].expected.efficiency.nginx.lo,
    null,
    "a filter's cost at 2000 r/s is measured beside and shown",
  );
  assert.equal(c['nginx-cost'].expected.efficiency.direct.lo, null, "nginx's against the backend is shown too");
  assert.equal(
    closed.expected.efficiency.nginx.case,
    'nginx-closed-beside-node',
    'under the closed load, against the same reference as its throughput',
  );
  assert.ok(closed.expected.efficiency.nginx.lo > 0);
  assert.equal(q['erlang-cost'].durationMs, 4000, 'CPU needs real seconds: not compressed');
  assert.equal(c['erlang-base'].expected.overheadMs.direct.case, 'direct-base-beside-erlang');
  assert.equal(c['direct-cost-beside-erlang'].expected.efficiency, undefined, 'a reference is judged against nothing');
  const smoke = plan({ experiment: 'json-filter', suite: 'smoke' });
  assert.equal(byId(smoke)['node-smoke'].expected.overheadMs, undefined, 'smoke compares nothing');
  assert.deepEqual(phaseIds(smoke), ['node', 'node-cluster', 'erlang', 'nginx', 'direct']);
});

test('bounds from a measured spread: the worst run passes, a 2x (or the stated) slowdown of the best fails, with the same room', () => {
  const { floors, ceilings } = comparisonBounds(
    { efficiency: { x: { nginx: [0.6, 0.9] } }, overheadMs: { x: [0.2, 1.2] } },
    5,
  );
  const floor = floors.x.nginx;
  assert.ok(floor <= 0.6 && floor > 0.9 / 2, `floor ${floor}`);
  assert.ok(Math.abs(0.6 / floor - floor / 0.45) < 0.01, 'equal relative room either side');
  assert.ok(ceilings.x >= 1.2 && ceilings.x < 0.2 + 5, `ceiling ${ceilings.x}`);
  assert.throws(() => comparisonBounds({ efficiency: { x: { nginx: [0.4, 0.9] } }, overheadMs: {} }, 5), /spans 2x/);
  assert.throws(() => comparisonBounds({ efficiency: {}, overheadMs: { x: [0, 6] } }, 5), /hides a 5 ms slowdown/);
  // A comparison that must catch less than 2x: its floor sits half-way to max / k, and a spread
  // as wide as k is refused.
  const k = comparisonBounds({ efficiency: {}, closedEfficiency: { x: { nginx: [0.6, 0.8] } }, overheadMs: {} }, 5, {
    closedEfficiency: 1.5,
  }).closedFloors.x.nginx;
  assert.ok(k <= 0.6 && k > 0.8 / 1.5, `floor ${k}`);
  assert.throws(
    () =>
      comparisonBounds({ efficiency: {}, closedEfficiency: { x: { nginx: [0.5, 0.8] } }, overheadMs: {} }, 5, {
        closedEfficiency: 1.5,
      }),
    /spans 1.5x/,
  );
  // A slowdown per server: the one named takes its own, the others 2.
  const per = comparisonBounds(
    { efficiency: {}, closedEfficiency: { x: { nginx: [0.6, 0.8] }, y: { nginx: [0.6, 0.8] } }, overheadMs: {} },
    5,
    { closedEfficiency: { x: 1.5 } },
  ).closedFloors;
  assert.deepEqual(
    [per.x.nginx, per.y.nginx],
    [
      k,
      comparisonBounds({ efficiency: {}, closedEfficiency: { y: { nginx: [0.6, 0.8] } }, overheadMs: {} }, 5)
        .closedFloors.y.nginx,
    ],
  );
  assert.ok(per.y.nginx < per.x.nginx);
  // The committed spread must allow bounds at all.
  assert.doesNotThrow(() => comparisonBounds(jsonFilter.measuredSpread, jsonFilter.perturbMs, jsonFilter.slowdowns));
});

test('knob values that would make a threshold vacuous are refused', () => {
  assert.throws(
    () => plan({ experiment: 'json-filter', suite: 'smoke', overrides: { backend_delay_ms: '0' } }),
    /backend_delay_ms: '0' is under 5: below it no threshold/,
  );
  assert.throws(
    () => plan({ experiment: 'json-filter', suite: 'smoke', overrides: { relay_percent: '0' } }),
    /relay_percent: '0' is under 1/,
  );
  assert.throws(
    () => plan({ experiment: 'json-filter', suite: 'smoke', overrides: { relay_percent: '100' } }),
    /relay_percent: '100' is over 99/,
  );
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
    ...stepMetrics('x', 500, { reqs: 2000 }),
    ...stepMetrics('x', 1000, { reqs: 3990, p99: 60 }),
    ...stepMetrics('x', 2000, { reqs: 7000, p99: 80 }),
    ...stepMetrics('x', 4000, { reqs: 16000, p99: 90 }),
  };
  const steps = rampSteps(c, metrics);
  assert.deepEqual(
    steps.map((s) => s.sustained),
    [true, true, false, true],
  );
  assert.equal(breakpoint(steps), 1000, '2000 r/s delivered only 87.5 %: later steps do not count');
  const errors = rampSteps(c, { ...metrics, ...stepMetrics('x', 1000, { reqs: 4000, failed: 40 }) });
  assert.equal(errors[1].sustained, false, `exactly ${CAPACITY.errorRate * 100} % errors is not under it`);
  assert.equal(
    rampSteps(c, { ...metrics, ...stepMetrics('x', 500, { reqs: 0 }) })[0].p99,
    null,
    'no requests, no latency (k6 reports zeros)',
  );
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
  const costUs = { node: 60, 'node-cluster': 100, erlang: 120, nginx: 43, direct: 34, ...tweak.costUs };
  const rps = { node: 9000, 'node-cluster': 7500, erlang: 7800, nginx: 15000, direct: 27000, ...tweak.rps };
  const wrk = {};
  for (const c of p.cases) {
    if (c.generator === 'wrk') {
      // wrk's report: every request answered 2xx, 100 of those in flight at its end reached the backend.
      const requests = rps[c.target] * c.seconds;
      const fromMs = T0 + 100_000;
      wrk[c.id] = {
        rps: rps[c.target],
        requests,
        non2xx: 0,
        socketErrors: 0,
        latencyMs: { 99: 400 },
        fromMs,
        toMs: fromMs + c.durationMs,
        backendReceived: requests + 100,
        ...tweak[c.id],
      };
      // Saturated, each server spends its cost per request over wrk's window (closedUs, else costUs).
      const series = (cpu[c.service] ||= [[T0, 0]]);
      const before = series.at(-1)[1];
      series.push(
        [fromMs, before],
        [fromMs + c.durationMs, before + ((tweak.closedUs?.[c.target] ?? costUs[c.target]) * requests) / 1e6],
      );
      continue;
    }
    const relayed = 1000;
    const acct = {
      relay_sent: relayed,
      relay_answered: relayed,
      relay_ok: relayed,
      relay_gateway_error: 0,
      backend_received: relayed,
      ...tweak[c.id],
    };
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
  return { summary: { metrics, setup_data: { t0: T0 } }, cpu, wrk };
}

// A plan judged phase by phase, as the runner does, each on a healthy run of its own (`edit` changes it).
const judge = (p, tweak = {}, edit = (r) => r) =>
  phaseIds(p).flatMap((id) => {
    const part = k6Plan(p, { PHASE: id });
    return judgeCapacity(part, edit(healthyRun(part, tweak), id)).outcomes;
  });
const failing = (p, tweak, edit) =>
  judge(p, tweak, edit)
    .filter((o) => !o.pass)
    .map((o) => o.case);

test('judging a breakpoint run: CPU per request against the references (judged under the closed load, shown at 2000 r/s), latency over the direct backend', () => {
  const p = plan({ experiment: 'json-filter', suite: 'breakpoint', factor: 5 });
  assert.deepEqual(failing(p), []);
  const erlang = judge(p).find((o) => o.case === 'json-filter/erlang-cost');
  assert.ok(Math.abs(erlang.measured.costUs - 120) < 1e-6, 'cost per request from the CPU samples of its window');
  // At 2000 r/s a filter's efficiency is shown: twice its cost there fails nothing by itself.
  assert.deepEqual(failing(p, { costUs: { erlang: 240 }, closedUs: { erlang: 120 } }), []);
  // Under the closed load the best efficiency measured on this machine kind passes; twice that cost fails.
  const best = 43 / jsonFilter.measuredSpread.closedEfficiency.erlang.nginx[1];
  assert.deepEqual(failing(p, { closedUs: { erlang: best } }), []);
  const slow = judge(p, { closedUs: { erlang: best * 2 } }).find((o) => o.case === 'json-filter/erlang-closed');
  assert.deepEqual([slow.pass, slow.checks.efficiency_nginx, slow.checks.throughput_nginx], [false, false, true]);
  // 5 ms more per request at 500 r/s: over the ceiling.
  assert.deepEqual(failing(p, { addedMs: { node: 5 } }), ['json-filter/node-base']);
  // No CPU samples: no cost, no pass.
  const blind = failing(p, {}, (r) => ({ ...r, cpu: {} }));
  assert.ok(blind.includes('json-filter/node-closed') && !blind.includes('json-filter/node-cost'), blind.join(', '));
});

test('judged phase by phase, as the runner runs it: each case against its references measured beside it', async () => {
  const whole = plan({ experiment: 'json-filter', suite: 'breakpoint', factor: 5 });
  const phases = await walkPhases(whole, (p, kind) => kind.judge(p, healthyRun(p)), { say: () => {} });
  assert.deepEqual(
    phases.map((j) => j.outcomes[0].case),
    ['json-filter/node-base', 'json-filter/node-cluster-base', 'json-filter/erlang-base', 'json-filter/nginx-base'],
  );
  assert.deepEqual(
    phases
      .flatMap((j) => j.outcomes)
      .filter((o) => !o.pass)
      .map((o) => o.case),
    [],
  );
  const erlang = phases[2].outcomes.find((o) => o.case === 'json-filter/erlang-cost');
  assert.ok(Math.abs(erlang.measured.efficiency.nginx - 43 / 120) < 1e-6, "nginx's cost beside erlang's over erlang's");
  // A reference that measured nothing (no CPU samples of nginx in erlang's phase) fails the case judged against it.
  const blind = await walkPhases(
    whole,
    (p, kind) =>
      kind.judge(
        p,
        p.phase === 'erlang'
          ? { ...healthyRun(p), cpu: { ...healthyRun(p).cpu, 'json-filter-nginx': [] } }
          : healthyRun(p),
      ),
    { say: () => {} },
  );
  const e = blind[2].outcomes.find((o) => o.case === 'json-filter/erlang-closed');
  assert.deepEqual([e.pass, e.checks.efficiency_nginx, e.checks.throughput_nginx], [false, false, true]);
  assert.equal(
    blind[2].outcomes.find((o) => o.case === 'json-filter/erlang-cost').pass,
    true,
    'shown there, not judged',
  );
  assert.equal(
    blind[0].outcomes.find((o) => o.case === 'json-filter/node-closed').pass,
    true,
    "another phase's nginx is not erlang's reference",
  );
});

test('the backend must receive what each case relayed; only requests whose fate k6 cannot know are forgiven, one by one', () => {
  const p = plan({ experiment: 'json-filter', suite: 'breakpoint', factor: 5 });
  const judgeAcct = (acct) => judge(p, { 'node-cost': acct }).find((o) => o.case === 'json-filter/node-cost');
  assert.equal(judgeAcct({}).checks.backend, true);
  assert.equal(
    judgeAcct({ backend_received: 1001 }).checks.backend,
    false,
    'one filtered document reached the backend',
  );
  assert.equal(judgeAcct({ backend_received: 999 }).checks.backend, false, 'one relayed document did not');
  // 3 sent without an answer seen and 2 answered 504: the backend may have had any of those 5.
  const unsure = { relay_sent: 1000, relay_answered: 997, relay_ok: 995, relay_gateway_error: 2 };
  assert.equal(judgeAcct({ ...unsure, backend_received: 995 }).checks.backend, true);
  assert.equal(judgeAcct({ ...unsure, backend_received: 1000 }).checks.backend, true);
  assert.equal(judgeAcct({ ...unsure, backend_received: 1001 }).checks.backend, false);
  assert.equal(judgeAcct({ backend_received: undefined }).checks.backend, false, 'no count from the backend fails');
  // wrk's closed run (every document relayed): at least its 2xx answers, at most one more per connection.
  const closed = (w) => judge(p, { 'node-closed': w }).find((o) => o.case === 'json-filter/node-closed');
  const n = 9000 * p.cases.find((c) => c.id === 'node-closed').seconds;
  assert.equal(closed({ backendReceived: n }).checks.backend, true);
  assert.equal(closed({ backendReceived: n + 2500 }).checks.backend, true, 'each connection had one in flight');
  assert.equal(closed({ backendReceived: n + 2501 }).checks.backend, false);
  assert.equal(closed({ backendReceived: n - 1 }).checks.backend, false, 'an answered relay the backend never had');
  assert.equal(
    closed({ non2xx: 10, backendReceived: n + 2500 }).checks.backend,
    true,
    'a non-2xx may or may not have reached it',
  );
});

test("wrk's closed run: errors and throughput against nginx's in the same run, from wrk's report", () => {
  const p = plan({ experiment: 'json-filter', suite: 'breakpoint', factor: 5 });
  const closed = (tweak) => judge(p, tweak).find((o) => o.case === 'json-filter/erlang-closed');
  const floor = closed({}).expected.throughput.nginx.lo;
  assert.equal(closed({ rps: { erlang: 15000 * floor * 1.01 } }).checks.throughput_nginx, true);
  assert.equal(closed({ rps: { erlang: 15000 * floor * 0.99 } }).checks.throughput_nginx, false);
  // The middle of the measured spread (geometric), halved, fails; so does the best, at 40 %.
  const [worst, best] = jsonFilter.measuredSpread.throughput.erlang.nginx;
  assert.equal(closed({ rps: { erlang: (15000 * Math.sqrt(worst * best)) / 2 } }).pass, false);
  assert.equal(closed({ rps: { erlang: 15000 * best * 0.4 } }).pass, false);
  assert.equal(closed({ 'erlang-closed': { non2xx: 1000 } }).checks.errors, false, '1000 non-2xx of 78 000 (8 s)');
  assert.equal(
    closed({ 'erlang-closed': { latencyMs: { 99: 5000 } } }).pass,
    true,
    'p99 is shown: a closed loop of 2500 sockets has a long tail even on the backend alone',
  );
  assert.equal(
    judge(p, {}, (r) => ({ ...r, wrk: null })).find((o) => o.case === 'json-filter/erlang-closed').pass,
    false,
    'no wrk report: fails',
  );
});

test("wrk's report parsed: rate, answers, socket errors, latency percentiles in ms", () => {
  const w = parseWrk(`Running 4s test @ http://127.0.0.1:21001/filter/node-closed
  2 threads and 2500 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   299.16ms  343.91ms   3.76s    88.27%
  Latency Distribution
     50%  155.87ms
     75%  297.28ms
     90%  711.60us
     99%    1.45s 
  7332 requests in 4.04s, 193.32KB read
  Socket errors: connect 0, read 3, write 0, timeout 12
  Non-2xx or 3xx responses: 7
Requests/sec:   1812.86
`);
  assert.deepEqual([w.rps, w.requests, w.non2xx, w.socketErrors, w.socket.timeout], [1812.86, 7332, 7, 15, 12]);
  assert.deepEqual(w.latencyMs, { 50: 155.87, 75: 297.28, 90: 0.7116, 99: 1450 });
});

test('a closed case and the references beside it take turns in slices: figures summed, CPU over every window', () => {
  const p = plan({ experiment: 'json-filter', suite: 'breakpoint', factor: 5 });
  const groups = wrkGroups(p).map((g) => g.map((c) => c.id));
  assert.deepEqual(groups, [
    ['node-closed', 'nginx-closed-beside-node'],
    ['node-cluster-closed', 'nginx-closed-beside-node-cluster'],
    ['erlang-closed', 'nginx-closed-beside-erlang'],
    ['nginx-closed'],
  ]);
  const [lead, ref] = wrkGroups(p)[0];
  assert.equal(lead.slices, 4);
  assert.deepEqual([ref.pauseMs, ref.settleMs], [0, 0], "the reference runs within its case's pause and settling");
  const slice = (fromMs, rps, requests, p99, extra = {}) => ({
    rps,
    requests,
    non2xx: 1,
    socket: { connect: 0, read: 1, write: 0, timeout: 2 },
    socketErrors: 3,
    latencyMs: { 50: 10, 99: p99 },
    fromMs,
    toMs: fromMs + 2000,
    ...extra,
  });
  const w = mergeSlices([slice(0, 1000, 2000, 300), slice(5000, 500, 1000, 900)]);
  assert.deepEqual([w.requests, w.non2xx, w.socketErrors, w.socket.timeout], [3000, 2, 6, 4]);
  assert.equal(w.rps, 3000 / 4, "the rate over wrk's own running time (2 s + 2 s)");
  assert.deepEqual(w.latencyMs, { 50: 10, 99: 900 }, "each percentile the worst slice's (shown only)");
  assert.deepEqual(
    w.slices.map((x) => [x.fromMs, x.toMs]),
    [
      [0, 2000],
      [5000, 7000],
    ],
  );
  // CPU: 1 s per second inside the windows, 10 s per second between them (another case's slice).
  const cpu = [
    [0, 0],
    [2000, 2],
    [5000, 32],
    [7000, 34],
  ];
  const f = wrkFigures({ vus: 100 }, { ...w, backendReceived: 2998 }, cpu);
  assert.equal(f.costUs, (4 * 1e6) / 3000, 'only the windows count');
  assert.deepEqual(
    [f.backend.lo, f.backend.hi],
    [2998, 2998 + 2 + 100 * 2],
    'one request in flight per connection at each of the 2 stops',
  );
  // With steady parts: the rate and CPU per request are theirs (the backend's count in them).
  const ws = mergeSlices([
    slice(0, 1000, 2000, 300, { steady: { fromMs: 500, toMs: 1500, received: 900 } }),
    slice(5000, 500, 1000, 900, { steady: { fromMs: 5500, toMs: 6500, received: 600 } }),
  ]);
  const fs = wrkFigures({ vus: 100 }, ws, cpu);
  assert.equal(fs.rps, 1500 / 2, 'received over the steady seconds');
  assert.equal(fs.wrkRps, 750);
  assert.equal(fs.costUs, (2 * 1e6) / 1500, "the steady windows' CPU over what the backend received in them");
  const single = wrkFigures({ vus: 100 }, { ...w, slices: undefined, fromMs: 0, toMs: 2000 }, cpu);
  assert.equal(single.costUs, (2 * 1e6) / 3000, 'a run recorded before slices: its one window');
});

test("the measured spread the bounds come from covers every recorded breakpoint run's figures (docs/runs/)", () => {
  const { runs, values } = recordedSpread();
  assert.ok(runs.length >= 5, `${runs.length} recorded runs`);
  const spread = jsonFilter.measuredSpread;
  for (const [key, servers] of Object.entries(values)) {
    for (const [server, refs] of Object.entries(servers)) {
      for (const [ref, xs] of Object.entries(refs)) {
        const [min, max] = key === 'overheadMs' ? spread.overheadMs[server] : spread[key][server][ref];
        for (const x of xs)
          assert.ok(x >= min && x <= max, `${key} ${server}/${ref}: recorded ${x} outside the stated ${min}..${max}`);
        assert.equal(xs.length, runs.length, `${key} ${server}/${ref}: one figure per recorded run`);
      }
    }
  }
  // And every judged spread has its figures in the recorded runs (a null one is shown, not judged).
  for (const key of ['efficiency', 'closedEfficiency', 'throughput']) {
    for (const [server, refs] of Object.entries(spread[key])) {
      for (const [ref, s] of Object.entries(refs))
        if (s !== null)
          assert.equal(
            values[key]?.[server]?.[ref]?.length,
            runs.length,
            `${key} ${server}/${ref}: no recorded figure`,
          );
    }
  }
});

test("the bench's per-CPU points summed up: per load and server, each repetition over nginx's in the same repetition", async () => {
  const { perCpuSummary, spread } = await import('../lab/bench/per-cpu.mjs');
  const p = (connections, rep, name, perCpuS) => ({
    connections,
    rep,
    name,
    rps: 2000,
    errors: name === 'node' ? 1 : 0,
    perCpuS,
  });
  const points = [
    p(64, 0, 'node', 10),
    p(64, 0, 'nginx', 40),
    p(64, 1, 'node', 12),
    p(64, 1, 'nginx', 30),
    p(400, 0, 'node', 20),
    p(400, 0, 'nginx', 50),
  ];
  const s = perCpuSummary(points, 'nginx');
  assert.deepEqual(
    s.map((r) => [r.connections, r.name]),
    [
      [64, 'node'],
      [64, 'nginx'],
      [400, 'node'],
      [400, 'nginx'],
    ],
  );
  assert.deepEqual(s[0].ratios, [0.25, 0.4], 'against the same repetition, not the median nginx');
  assert.equal(s[0].errors, 2);
  assert.equal(s[1].ratios, null, 'nginx is the reference');
  assert.equal(spread(s[0].ratios), '0.40 (0.25-0.40)');
});
