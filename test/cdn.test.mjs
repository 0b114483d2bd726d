// The cdn experiment's model and accounting: cap / cost and its bottleneck, the edges' refills,
// the cap levels the knobs allow, a plan before and after the costs are measured, the
// resources table over a window, and the cgroups as Prometheus reads them.
import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { predictCapped, originFills, withCosts, CAPPED_TOLERANCE } from '../thresholds/kinds/capped.js';
import { plan } from '../thresholds/plan.js';
import cdn, { capLevels } from '../thresholds/experiments/cdn.js';
import { fittedFigures } from '../thresholds/provenance.js';
import { resourcesOver } from '../lab/stack/resources.mjs';
import { phases } from '../lab/kinds/capped.mjs';
import { labCgroups, createCgroup } from '../lab/stack/cgroups.mjs';
import { exposition } from '../lab/stores/cgroup-exporter.mjs';
import { parsePrometheusText } from '../k6/lib/prom-text.js';

test('throughput is the smallest cap / cost, and that service is the bottleneck', () => {
  const costs = { lb: 1 / 8192, edge1: 1 / 65536, origin1: 0 }; // exact in binary
  assert.deepEqual(predictCapped({ costs, caps: { lb: 0.5, edge1: 0.125, origin1: 0.5 } }), {
    rps: 4096,
    bottleneck: 'lb',
    limits: { lb: 4096, edge1: 8192 },
  });
  // Cap the balancer less than an edge and the edge limits.
  assert.equal(predictCapped({ costs, caps: { lb: 0.5, edge1: 0.03125 } }).bottleneck, 'edge1');
  assert.equal(predictCapped({ costs, caps: {} }).rps, null);
});

test('each edge refills once per lifetime, which lasts L to L + 1 s: 60 s at 10 s is 5 to 7 per edge', () => {
  assert.deepEqual(originFills({ edges: 4, seconds: 60, cacheS: 10 }), { min: 20, max: 28, lo: 16, hi: 32 });
  assert.deepEqual(originFills({ edges: 4, seconds: 12, cacheS: 2 }), { min: 16, max: 28, lo: 12, hi: 32 });
  assert.deepEqual(originFills({ edges: 1, seconds: 2, cacheS: 10 }), { min: 0, max: 1, lo: 1, hi: 2 });
});

test("cap levels: the seed's three by default, the uncapped one first and the cost level next, as many cpu as mem", () => {
  const ids = (k) => capLevels(k).map((l) => [l.id, l.caps, Boolean(l.measuresCosts)]);
  assert.deepEqual(ids({ cpu_levels: [0, 2, 1], mem_levels: [0, 25, 15], cost_cpu: 4 }), [
    ['uncapped', '', false],
    ['costs-cpu4', 'cpu=4%', true],
    ['cpu2-mem25', 'cpu=2% mem=25M', false],
    ['cpu1-mem15', 'cpu=1% mem=15M', false],
  ]);
  // cost_cpu 0: the uncapped level measures the costs, as the seed read them.
  assert.deepEqual(ids({ cpu_levels: [0, 2], mem_levels: [0, 25], cost_cpu: 0 }), [
    ['uncapped', '', true],
    ['cpu2-mem25', 'cpu=2% mem=25M', false],
  ]);
  // No level capped in CPU: nothing to predict, no cost level.
  assert.deepEqual(ids({ cpu_levels: [0, 0], mem_levels: [0, 25], cost_cpu: 4 }), [
    ['uncapped', '', true],
    ['mem25', 'mem=25M', false],
  ]);
  assert.throws(
    () => plan({ experiment: 'cdn', suite: 'load', overrides: { cpu_levels: '0,4,2', mem_levels: '0,0,25' } }),
    /knob cdn.cost_cpu 4: .*above every capped level \(4 % here\)/,
  );
  assert.deepEqual(
    plan({ experiment: 'cdn', suite: 'load', overrides: { up_level: '1' } }).policy.caps,
    'cpu=2% mem=25M',
  );
  assert.throws(
    () => plan({ experiment: 'cdn', suite: 'load', overrides: { cpu_levels: '2,1', mem_levels: '25,15' } }),
    /first level must be 0,0/,
  );
  assert.throws(() => plan({ experiment: 'cdn', suite: 'load', overrides: { cpu_levels: '0,2' } }), /as many levels/);
  assert.throws(
    () => plan({ experiment: 'cdn', suite: 'load', overrides: { cpu_levels: '0,2,2', mem_levels: '0,25,25' } }),
    /repeat a level/,
  );
  assert.throws(() => plan({ experiment: 'cdn', suite: 'load', factor: 3 }), /whole seconds/);
  assert.throws(() => plan({ experiment: 'cdn', suite: 'load', overrides: { edges: '5' } }), /topology has 4 edges/);
});

test('a capped case has a throughput to meet only once the cost level measured the costs', () => {
  const p = plan({ experiment: 'cdn', suite: 'load' });
  assert.deepEqual(
    p.cases.map((c) => c.id),
    ['uncapped-load', 'costs-cpu4-load', 'cpu2-mem25-load', 'cpu1-mem15-load'],
  );
  assert.ok(p.cases.every((c) => !c.expected.rps));
  assert.equal(p.cases[1].seed, null);
  assert.equal(p.cases[2].seed.rps, 38.92);
  const costs = Object.fromEntries(
    Object.values(p.roles)
      .flat()
      .map((s) => [s, s === 'cdn-lb' ? 100e-6 : 25e-6]),
  );
  const q = withCosts(p, costs, 'test');
  assert.equal(q.cases[0].expected.rps, undefined);
  assert.equal(q.cases[1].expected.rps, undefined, 'the cost level is shown: it gave the costs');
  const [two, one] = [q.cases[2].expected, q.cases[3].expected];
  assert.equal(two.bottleneck.service, 'cdn-lb');
  assert.ok(Math.abs(two.rps.model - 200) < 1e-9 && Math.abs(one.rps.model - 100) < 1e-9);
  assert.deepEqual([one.rps.lo, one.rps.hi], [100 * CAPPED_TOLERANCE.rpsLo, 100 * CAPPED_TOLERANCE.rpsHi]);
  assert.deepEqual(one.requests, {
    lo: Math.floor(6000 * CAPPED_TOLERANCE.rpsLo),
    hi: Math.ceil(6000 * CAPPED_TOLERANCE.rpsHi),
  });
});

test("run level by level, the later levels are planned on the cost level's costs, beside the uncapped throughput", () => {
  const p = plan({ experiment: 'cdn', suite: 'load' });
  // Uncapped, the balancer spent 90 us a request; at 4 %, 70 us: the costs are the 4 % level's.
  const lbUs = { 'uncapped-load': 90, 'costs-cpu4-load': 70 };
  const said = [];
  const walk = phases(p, { say: (x) => said.push(x) });
  const yielded = [];
  for (let next = walk.next(); !next.done;) {
    const phase = next.value;
    yielded.push(phase);
    const requests = 1000;
    const resources = Object.values(p.roles)
      .flat()
      .map((s) => ({ service: s, cpuS: (s === 'cdn-lb' ? (lbUs[phase.phase] ?? 80) : 20) * 1e-6 * requests }));
    next = walk.next({ outcomes: [{ pass: true, measured: { requests, rps: requests / 12, resources } }] });
  }
  assert.deepEqual(
    yielded.map((x) => [x.phase, x.policy.caps]),
    [
      ['uncapped-load', ''],
      ['costs-cpu4-load', 'cpu=4%'],
      ['cpu2-mem25-load', 'cpu=2% mem=25M'],
      ['cpu1-mem15-load', 'cpu=1% mem=15M'],
    ],
  );
  assert.equal(yielded[1].cases[0].expected.rps, undefined, 'no costs yet');
  const two = yielded[2].cases[0].expected;
  assert.ok(Math.abs(two.rps.model - 0.02 / 70e-6) < 1e-6, String(two.rps.model));
  assert.deepEqual(yielded[2].uncapped, { seed: 106.26, measured: 1000 / 12 });
  assert.match(said.join('\n'), /from costs-cpu4-load: .*cdn-lb 70 us/);
});

test('seed 001: only the page size is fitted; its capped levels are held out, and cap / cost on its uncapped figures meets them', (t) => {
  const fitted = fittedFigures(cdn);
  assert.deepEqual([...fitted], ['uncapped-load.read'], 'page_bytes, to the bytes wrk read');
  // The seed's uncapped level stands in for a run's: its CPU per request, service by service.
  const p = plan({ experiment: 'cdn', suite: 'load' });
  const seed = cdn.seedFigures['uncapped-load'];
  const costs = { 'cdn-lb': seed.lbCpuPct / 100 / seed.rps };
  for (const edge of p.roles.edge) costs[edge] = seed.edgesCpuPct / 100 / p.roles.edge.length / seed.rps;
  const q = withCosts(p, costs, 'seed 001, uncapped');
  for (const c of q.cases.filter((x) => x.level.cpu && !x.level.measuresCosts)) {
    assert.ok(!fitted.has(`${c.id}.rps`), `${c.id} was not fitted`);
    const e = c.expected;
    const ratio = c.seed.rps / e.rps.model;
    t.diagnostic(
      `held out: ${c.id} rps: seed ${c.seed.rps}, model ${e.rps.model.toFixed(2)} (seed / model ${ratio.toFixed(2)}, judged ${e.rps.lo.toFixed(2)}..${e.rps.hi.toFixed(2)}), bottleneck ${e.bottleneck.service}`,
    );
    assert.ok(Math.abs(e.rps.model - c.seed.modelRps) < 1e-9, "the figure the experiment shows beside the seed's");
    assert.ok(
      c.seed.rps >= e.rps.lo && c.seed.rps <= e.rps.hi,
      `${c.id}: seed ${c.seed.rps} outside ${e.rps.lo}..${e.rps.hi}`,
    );
    // "only the load-balancer reached the CPU cap"
    assert.equal(e.bottleneck.service, 'cdn-lb');
  }
});

test('the resources table reads the loaded window: CPU between its ends, the most memory seen in it', () => {
  const s = (t, cpuS, memBytes) => [
    t,
    { cpuS, memBytes, memMaxBytes: 9e6, pids: 2, oomKills: 0, throttledS: cpuS / 2 },
  ];
  const rows = resourcesOver(
    { lb: [s(0, 0, 1e6), s(1000, 0.01, 5e6), s(3000, 0.05, 2e6), s(5000, 0.09, 8e6)] },
    { lb: { cpu: 0.02, memBytes: 25 * 1024 ** 2 } },
    1000,
    3000,
  );
  assert.equal(rows[0].cpuPct.toFixed(6), (2).toFixed(6)); // 0.04 s over 2 s
  assert.equal(rows[0].memBytes, 5e6);
  assert.equal(rows[0].capPct, 2);
  assert.equal(rows[0].throttledS.toFixed(6), '0.020000');
});

test("the lab's cgroups as Prometheus reads them, under cAdvisor's names; limits the kernel holds", () => {
  const root = mkdtempSync(join(tmpdir(), 'lab-cgx-'));
  try {
    for (const c of ['cpu', 'cpuacct', 'memory', 'pids']) {
      mkdirSync(join(root, c));
      writeFileSync(join(root, c, 'cgroup.procs'), '');
    }
    createCgroup('lab-42-cdn-lb', { cpu: 0.02, memBytes: 25 * 1024 ** 2 }, { fsRoot: root });
    createCgroup('lab-42-cdn-edge1', {}, { fsRoot: root });
    mkdirSync(join(root, 'cpuacct', 'system.slice'));
    writeFileSync(join(root, 'cpuacct/lab-42-cdn-lb/cpuacct.usage'), '2000000000\n');
    writeFileSync(join(root, 'memory/lab-42-cdn-edge1/memory.limit_in_bytes'), '9223372036854771712\n');
    const groups = labCgroups({ fsRoot: root });
    assert.deepEqual(groups.map((g) => g.service).sort(), ['cdn-edge1', 'cdn-lb']);
    const samples = parsePrometheusText(exposition(groups));
    const one = (name, service) => samples.find((x) => x.name === name && x.labels.name === service);
    assert.equal(one('container_cpu_usage_seconds_total', 'cdn-lb').value, 2);
    assert.equal(one('container_spec_memory_limit_bytes', 'cdn-lb').value, 25 * 1024 ** 2);
    assert.equal(one('container_spec_cpu_quota_cores', 'cdn-lb').value, 0.02);
    // No limit, no series: an unlimited cgroup is not drawn at 8 EiB.
    assert.equal(one('container_spec_memory_limit_bytes', 'cdn-edge1'), undefined);
    assert.equal(one('container_spec_cpu_quota_cores', 'cdn-edge1'), undefined);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
