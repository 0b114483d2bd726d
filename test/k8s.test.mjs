// Kubernetes manifests from the topology (lab/k8s/manifests.mjs): seed 003's variant (burst on a
// cluster, its load by k6-operator) renders, passes the Kubernetes schemas (kubernetes-validate,
// strict, Kubernetes 1.33) and the TestRun schema, and a broken field fails them; a stack that
// still names 127.0.0.1 for a neighbour is refused.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { k8sManifests, writeManifests } from '../lab/k8s/manifests.mjs';
import { loadTopology } from '../lab/stack/topology.mjs';
import { labEnv } from '../lab/run/suite.mjs';
import { parseRunArgs } from '../lab/cli/args.mjs';
import { plan, stackTargets } from '../thresholds/plan.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const K8S_VERSION = '1.33.0';
const python = join(root, '.lab', 'venv', 'bin', 'python');

function manifests(words, parallelism = 2) {
  const req = parseRunArgs(words, { target: 'suite' });
  const experiment = req.experiments[0];
  const p = plan({ experiment, suite: req.name, factor: req.factor, overrides: req.overrides[experiment] });
  return k8sManifests({ root, env: labEnv(root), topology: loadTopology(join(root, 'docker-compose.yml')), request: req, experiment, policy: p.policy, targets: stackTargets(experiment, p.knobs, p.policy), parallelism, prometheus: 'http://prometheus.monitoring:9090', testid: 'test-1' }).objects;
}

const validate = (files) => spawnSync(python, [join(root, 'lab', 'k8s', 'validate.py'), K8S_VERSION, ...files], { encoding: 'utf8' });

test('burst on Kubernetes: its stack and a k6-operator TestRun pass the schemas; broken fields fail them', () => {
  const objects = manifests(['spike/burst', '--quick']);
  const by = (kind, name) => objects.find((o) => o.kind === kind && o.metadata.name === name);
  assert.ok(by('Deployment', 'burst-nginx') && by('Deployment', 'burst-hello') && by('Service', 'burst-nginx'));
  const conf = by('ConfigMap', 'burst-nginx-config').data['nginx.conf'];
  assert.match(conf, /server burst-hello:18081;/);
  assert.match(conf, /listen 0\.0\.0\.0:18080;/);
  const run = by('TestRun', 'burst-spike');
  assert.equal(run.spec.parallelism, 2);
  assert.match(run.spec.arguments, /^--no-thresholds .*--tag testid=test-1/);
  assert.ok(by('ConfigMap', 'burst-spike-k6').binaryData['archive.tar'].length > 1000);
  const dir = mkdtempSync(join(tmpdir(), 'lab-k8s-test-'));
  try {
    const files = writeManifests(dir, 'burst', objects);
    const ok = validate(files);
    assert.equal(ok.status, 0, ok.stdout + ok.stderr);
    assert.equal((ok.stdout.match(/^ok /gm) || []).length, objects.length);
    // A misspelt field in each: a container's port, the TestRun's parallelism.
    const broken = files.map((f, i) => {
      const b = join(dir, `broken-${i}.yaml`);
      writeFileSync(b, readFileSync(f, 'utf8').replace('containerPort: 18080', 'containerPortz: 18080').replace('parallelism: 2', 'parallelizm: 2'));
      return b;
    });
    const bad = validate(broken);
    assert.equal(bad.status, 1);
    assert.match(bad.stdout, /FAIL .*Deployment\/burst-nginx: .*containerPort/);
    assert.match(bad.stdout, /FAIL .*TestRun\/burst-spike: .*parallelism/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('one runner pod keeps its thresholds; a capped level becomes resource limits', () => {
  const one = manifests(['spike/burst'], 1).find((o) => o.kind === 'TestRun');
  assert.doesNotMatch(one.spec.arguments, /--no-thresholds/);
  const cdn = manifests(['load/cdn', 'up_level=1'], 1).find((o) => o.kind === 'Deployment' && o.metadata.name === 'cdn-lb');
  assert.deepEqual(cdn.spec.template.spec.containers[0].resources.limits, { cpu: '20m', memory: '25Mi' });
});

test('a stack that names 127.0.0.1 for a neighbour is refused, with where', () => {
  assert.throws(() => manifests(['breakpoint/json-filter']), /json-filter-node: its command .*127\.0\.0\.1/);
});
