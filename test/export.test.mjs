// `./labw export`: the standalone script's options are the options the lab runs for the same
// plan (the same thresholds; a held rate written as constant-arrival-rate fires the same
// arrivals), k6 reads them back from the script's text alike, and the script imports k6 alone.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { plan as makePlan, kindOfPlan } from '../thresholds/plan.js';
import { k6Options, k6Plan } from '../thresholds/k6-options.js';
import { durationMs } from '../thresholds/k6-duration.js';
import { exportOptions } from '../lab/export/options.mjs';
import { exportScript, planServices } from '../lab/export/script.mjs';
import { loadTopology } from '../lab/stack/topology.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const k6 = join(root, '.lab', 'bin', 'k6');
const ports = Object.fromEntries(
  Object.entries(loadTopology(join(root, 'docker-compose.yml')).services).map(([n, s]) => [n, s.ports?.http]),
);
const PLANS = [
  ['burst', 'spike', 5],
  ['burst', 'smoke', 1],
  ['envoy-vs-nginx', 'spike', 2],
  ['caching', 'smoke', 1],
  ['json-filter', 'smoke', 1],
  ['cdn', 'smoke', 1],
];
const partOf = (experiment, suite, factor) => k6Plan(makePlan({ experiment, suite, factor }));
const urlsOf = (plan) => Object.fromEntries(planServices(plan).map((s) => [s, `http://127.0.0.1:${ports[s]}`]));

/**
 * The arrivals of an arrival-rate scenario in ms from the test's start, by k6's rules: a
 * constant-arrival-rate fires at its start and every period while under its duration; a held
 * ramping-arrival-rate (startRate = target) one period after its start, then every period while
 * within its held stage.
 */
function arrivals(sc) {
  const start = durationMs(sc.startTime);
  if (sc.executor === 'constant-arrival-rate') {
    const period = 1000 / sc.rate;
    const out = [];
    for (let i = 0; i * period < durationMs(sc.duration) - 1e-6; i += 1) out.push(start + i * period);
    return out;
  }
  const period = 1000 / sc.startRate;
  const out = [];
  for (let i = 1; i * period <= durationMs(sc.stages[0].duration) + 1e-6; i += 1) out.push(start + i * period);
  return out;
}

for (const [experiment, suite, factor] of PLANS) {
  test(`${suite}/${experiment}${factor > 1 ? ` --quick=${factor}` : ''}: the export's options are the lab's, a held rate firing the same arrivals`, () => {
    const plan = partOf(experiment, suite, factor);
    const lab = k6Options(plan, urlsOf(plan));
    const out = exportOptions(plan, urlsOf(plan));
    // The same thresholds, but for one count more at the top of a constant-arrival-rate case's
    // requests (k6 may start one arrival past its duration when late: options.mjs).
    const converted = Object.keys(out.leadPeriods);
    const caseOf = (metric) => /\{case:([^,}]+)/.exec(metric)?.[1];
    const plusOne = (exprs) => exprs.map((e) => e.replace(/^count<=(\d+)$/, (_, n) => `count<=${Number(n) + 1}`));
    assert.deepEqual(Object.keys(out.thresholds), Object.keys(lab.thresholds));
    for (const [metric, exprs] of Object.entries(lab.thresholds)) {
      const widened = metric.startsWith('http_reqs{') && converted.includes(caseOf(metric));
      assert.deepEqual(out.thresholds[metric], widened ? plusOne(exprs) : exprs, metric);
    }
    assert.deepEqual(Object.keys(out.scenarios), Object.keys(lab.scenarios));
    for (const [name, sc] of Object.entries(lab.scenarios)) {
      const ex = out.scenarios[name];
      for (const k of ['exec', 'tags', 'gracefulStop', 'preAllocatedVUs', 'maxVUs', 'vus', 'iterations'])
        assert.deepEqual(ex[k], sc[k], `${name}.${k}`);
      if (ex.executor === sc.executor) {
        assert.deepEqual(ex, sc, name);
        continue;
      }
      assert.equal(ex.executor, 'constant-arrival-rate', name);
      const [a, b] = [arrivals(sc), arrivals(ex)];
      assert.equal(b.length, a.length, `${name}: arrivals`);
      a.forEach((t, i) =>
        assert.ok(Math.abs(t - b[i]) < 0.001, `${name}: arrival ${i} at ${b[i]} ms, the lab's at ${t}`),
      );
      const c = plan.cases.find((x) => x.id === name);
      assert.equal(a.length, c.requests ?? Math.round(c.rate * c.seconds), `${name}: the plan's request count`);
    }
    // Every threshold and scenario says why it stands.
    for (const metric of Object.keys(out.thresholds)) assert.ok(out.thresholdNotes[metric], `no note for ${metric}`);
    for (const name of Object.keys(out.scenarios)) assert.ok(out.scenarioNotes[name], `no note for scenario ${name}`);
  });
}

test('a held rate k6 cannot write as constant-arrival-rate (under 1 s) stays a held ramping-arrival-rate, and says why', () => {
  const plan = partOf('envoy-vs-nginx', 'spike', 2);
  const out = exportOptions(plan, urlsOf(plan));
  const short = plan.cases.filter((c) => (c.requests - 0.5) / c.rate < 1);
  assert.ok(short.length, 'spike --quick=2 has a case under 1 s');
  for (const c of short) {
    assert.equal(out.scenarios[c.id].executor, 'ramping-arrival-rate');
    assert.match(out.scenarioNotes[c.id], /under 1 s, k6's least for constant-arrival-rate/);
  }
  // The lab's own options keep the held ramp everywhere, and say why too.
  const lab = exportOptions(plan, urlsOf(plan), { constant: false });
  for (const c of plan.cases) assert.match(lab.scenarioNotes[c.id], /held flat|under 1 s/);
});

test('the exported script imports k6 alone, and k6 reads the same options back from its text', () => {
  const plan = partOf('burst', 'spike', 5);
  const script = exportScript(root, plan, { ports, about: ['test'] });
  const imported = [...script.matchAll(/^import .* from "([^"]+)";$/gm)].map((m) => m[1]);
  assert.ok(imported.length > 0);
  assert.deepEqual(
    imported.filter((m) => m !== 'k6' && !m.startsWith('k6/')),
    [],
  );
  assert.equal(new Set(imported).size, imported.length, 'one import per module');
  assert.ok(script.indexOf('export const options') < script.indexOf('const PLAN'), 'the options come first');
  const dir = mkdtempSync(join(tmpdir(), 'lab-export-test-'));
  try {
    writeFileSync(join(dir, 'script.js'), script);
    const r = spawnSync(k6, ['inspect', 'script.js'], {
      cwd: dir,
      encoding: 'utf8',
      env: { PATH: process.env.PATH, K6_NO_USAGE_REPORT: 'true' },
    });
    assert.equal(r.status, 0, r.stderr);
    const seen = JSON.parse(r.stdout);
    const out = exportOptions(plan, urlsOf(plan));
    // k6's own reading of the literal options: every threshold, and every scenario's executor.
    assert.deepEqual(seen.thresholds, out.thresholds);
    for (const [name, sc] of Object.entries(out.scenarios))
      assert.equal(seen.scenarios[name].executor, sc.executor, name);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a plan of phases exports one k6 process: capacity carries its document, capped its roles', () => {
  const filter = partOf('json-filter', 'smoke', 1);
  assert.match(exportScript(root, filter, { ports, about: [] }), /^ {2}sample: \{"relay":/m);
  const cdn = partOf('cdn', 'smoke', 1);
  const script = exportScript(root, cdn, { ports, about: [] });
  for (const s of planServices(cdn)) assert.match(script, new RegExp(`"${s}": __ENV\\.[A-Z0-9_]+_URL`));
  assert.equal(kindOfPlan(cdn).name, 'capped');
});
