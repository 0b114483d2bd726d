// Kubernetes manifests from the topology (lab/k8s/manifests.mjs): seed 003's variant (burst on a
// cluster, its load by k6-operator) renders, passes the Kubernetes schemas (kubernetes-validate,
// strict, Kubernetes 1.33) and the TestRun schema, and a broken field fails them; a stack that
// still names 127.0.0.1 for a neighbour is refused. Fit for a shared cluster: a namespace of the
// run's own, every pod under the `restricted` Pod Security Standard, requests and limits on every
// container, no Service for Envoy's admin port, NetworkPolicies that deny by default; checkov (pinned,
// installed by the installer) passes them, with each skip's reason in the manifest, and fails
// one with a privileged container. The images are pinned, by digest where one could be had.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { k8sManifests, writeManifests, namespaceOf } from '../lab/k8s/manifests.mjs';
import { loadTopology } from '../lab/stack/topology.mjs';
import { parseRunArgs } from '../lab/cli/args.mjs';
import { plan, stackTargets } from '../thresholds/plan.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const K8S_VERSION = '1.33.0';
const python = join(root, '.lab', 'venv', 'bin', 'python');
const checkov = join(root, '.lab', 'venv', 'bin', 'checkov');
const TESTID = 'test-1';

function manifests(words, parallelism = 2, topology = loadTopology(join(root, 'docker-compose.yml')), testid = TESTID) {
  const req = parseRunArgs(words, { target: 'suite' });
  const experiment = req.experiments[0];
  const p = plan({ experiment, suite: req.name, factor: req.factor, overrides: req.overrides[experiment] });
  return k8sManifests({
    root,
    topology,
    request: req,
    experiment,
    policy: p.policy,
    targets: stackTargets(experiment, p.knobs, p.policy),
    parallelism,
    prometheus: 'http://prometheus.monitoring:9090',
    testid,
  }).objects;
}

const validate = (files) =>
  spawnSync(python, [join(root, 'lab', 'k8s', 'validate.py'), K8S_VERSION, ...files], { encoding: 'utf8' });
// checkov on files or a folder, offline (--skip-download: no Prisma Cloud guidelines fetched).
const runCheckov = (args) =>
  spawnSync(checkov, ['--framework', 'kubernetes', '--skip-download', '--compact', ...args], {
    encoding: 'utf8',
    cwd: root,
  });

/** Every pod spec and its containers in the objects: Deployments' templates. */
const podsOf = (objects) =>
  objects.filter((o) => o.kind === 'Deployment').map((d) => ({ name: d.metadata.name, spec: d.spec.template.spec }));

test('burst on Kubernetes: its stack and a k6-operator TestRun pass the schemas; broken fields fail them', () => {
  const objects = manifests(['spike/burst', '--quick']);
  const by = (kind, name) => objects.find((o) => o.kind === kind && o.metadata.name === name);
  // A namespace of the run's own, first; every other object in it, its name carrying the testid.
  assert.equal(objects[0].kind, 'Namespace');
  assert.equal(objects[0].metadata.name, 'lab-test-1');
  assert.equal(objects[0].metadata.labels['pod-security.kubernetes.io/enforce'], 'restricted');
  for (const o of objects.slice(1)) {
    assert.equal(o.metadata.namespace, 'lab-test-1', `${o.kind}/${o.metadata.name}`);
    assert.match(o.metadata.name, /test-1/, `${o.kind}/${o.metadata.name}`);
    assert.equal(o.metadata.labels['lab/testid'], TESTID, `${o.kind}/${o.metadata.name}`);
  }
  assert.ok(
    by('Deployment', 'burst-nginx-test-1') &&
      by('Deployment', 'burst-hello-test-1') &&
      by('Service', 'burst-nginx-test-1'),
  );
  const conf = by('ConfigMap', 'burst-nginx-test-1-config').data['nginx.conf'];
  assert.match(conf, /server burst-hello-test-1:18081;/);
  assert.match(conf, /listen 0\.0\.0\.0:18080;/);
  const run = by('TestRun', 'k6-test-1');
  assert.equal(run.metadata.labels['app.kubernetes.io/component'], 'burst');
  assert.equal(run.spec.parallelism, 2);
  assert.match(run.spec.arguments, /^--no-thresholds .*--tag testid=test-1/);
  // The load is the exported script itself: options first, k6 modules only, each service's URL
  // from the runners' environment.
  const script = by('ConfigMap', 'k6-test-1-script').data['script.js'];
  assert.match(script, /^export const options = \{$/m);
  assert.deepEqual(
    [...script.matchAll(/^import .* from "([^"]+)";$/gm)].map((m) => m[1]).filter((m) => !m.startsWith('k6')),
    [],
  );
  assert.deepEqual(run.spec.script, { configMap: { name: 'k6-test-1-script', file: 'script.js' } });
  assert.deepEqual(
    run.spec.runner.env.find((e) => e.name === 'BURST_NGINX_URL'),
    { name: 'BURST_NGINX_URL', value: 'http://burst-nginx-test-1:18080' },
  );
  const dir = mkdtempSync(join(tmpdir(), 'lab-k8s-test-'));
  try {
    const files = writeManifests(dir, 'burst', objects);
    const ok = validate(files);
    assert.equal(ok.status, 0, ok.stdout + ok.stderr);
    assert.equal((ok.stdout.match(/^ok /gm) || []).length, objects.length);
    // A misspelt field in each: a container's port, the TestRun's parallelism.
    const broken = files.map((f, i) => {
      const b = join(dir, `broken-${i}.yaml`);
      writeFileSync(
        b,
        readFileSync(f, 'utf8')
          .replace('containerPort: 18080', 'containerPortz: 18080')
          .replace('parallelism: 2', 'parallelizm: 2'),
      );
      return b;
    });
    const bad = validate(broken);
    assert.equal(bad.status, 1);
    assert.match(bad.stdout, /FAIL .*Deployment\/burst-nginx-test-1: .*containerPort/);
    assert.match(bad.stdout, /FAIL .*TestRun\/k6-test-1: .*parallelism/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('every pod meets the restricted Pod Security Standard, and every container has requests and limits', () => {
  const objects = manifests(['spike/burst', '--quick'], 2);
  const restricted = (what, pod, containers) => {
    assert.equal(
      pod.automountServiceAccountToken === false || pod.automountServiceAccountToken === 'false',
      true,
      `${what}: automountServiceAccountToken`,
    );
    assert.equal(pod.securityContext.runAsNonRoot, true, what);
    assert.ok(
      Number.isInteger(pod.securityContext.runAsUser) && pod.securityContext.runAsUser >= 10000,
      `${what}: a numeric, high runAsUser`,
    );
    assert.equal(pod.securityContext.seccompProfile.type, 'RuntimeDefault', what);
    for (const c of containers) {
      const sc = c.containerSecurityContext ?? c.securityContext;
      const name = `${what} ${c.name ?? ''}`;
      assert.equal(sc.allowPrivilegeEscalation, false, name);
      assert.equal(sc.privileged, false, name);
      assert.equal(sc.readOnlyRootFilesystem, true, name);
      assert.equal(sc.runAsNonRoot, true, name);
      assert.deepEqual(sc.capabilities, { drop: ['ALL'] }, name);
      assert.equal(sc.seccompProfile.type, 'RuntimeDefault', name);
      for (const k of ['requests', 'limits'])
        assert.ok(c.resources?.[k]?.cpu && c.resources?.[k]?.memory, `${name}: resources.${k}`);
    }
  };
  const pods = podsOf(objects);
  assert.equal(pods.length, 2);
  for (const { name, spec } of pods) {
    restricted(name, spec, [...(spec.initContainers || []), ...spec.containers]);
    // The root filesystem is read-only: /tmp (nginx's prefix and temp paths) is an emptyDir.
    const tmp = spec.volumes.find((v) => v.name === 'tmp');
    assert.ok(tmp?.emptyDir, `${name}: an emptyDir for /tmp`);
    for (const c of spec.containers)
      assert.ok(
        c.volumeMounts.some((m) => m.mountPath === '/tmp' && m.name === 'tmp'),
        `${name}: /tmp mounted`,
      );
  }
  // The Node pod's init container runs npm ci into an emptyDir, its cache in /tmp.
  const hello = pods.find((p) => p.name === 'burst-hello-test-1').spec;
  assert.match(hello.initContainers[0].command.join(' '), /npm ci --omit=dev --ignore-scripts/);
  assert.ok(hello.volumes.find((v) => v.name === 'lab').emptyDir);
  // k6-operator's pods: runner, initializer, starter.
  const run = objects.find((o) => o.kind === 'TestRun');
  for (const role of ['runner', 'initializer', 'starter']) {
    const pod = run.spec[role];
    restricted(`TestRun ${role}`, pod, [
      { name: role, containerSecurityContext: pod.containerSecurityContext, resources: pod.resources },
    ]);
  }
  // Runner sizing (docs/beyond-one-machine.md, `bench k6`): a core each, requests = limits, and
  // memory for 41 MiB + 153 KiB per VU, doubled: 520 VUs at most in spike/burst --quick -> 256 MiB.
  assert.deepEqual(run.spec.runner.resources, {
    requests: { cpu: '1', memory: '256Mi' },
    limits: { cpu: '1', memory: '256Mi' },
  });
  // A capped level: its caps, requested and limited.
  const cdn = manifests(['load/cdn', 'up_level=1'], 1).find(
    (o) => o.kind === 'Deployment' && o.metadata.name === 'cdn-lb-test-1',
  );
  assert.deepEqual(cdn.spec.template.spec.containers[0].resources, {
    requests: { cpu: '20m', memory: '25Mi' },
    limits: { cpu: '20m', memory: '25Mi' },
  });
});

test("NetworkPolicies: deny by default, the lab pods reach each other on their Services' ports; Envoy's admin port gets no Service", () => {
  // envoy-vs-nginx: Envoy's admin port is declared on its container (the readiness probe asks
  // it), in no Service and in no policy's allowed ports.
  const objects = manifests(['spike/envoy-vs-nginx', '--quick'], 1);
  const policies = objects.filter((o) => o.kind === 'NetworkPolicy');
  const deny = policies.find((p) => p.metadata.name === 'default-deny-test-1');
  assert.deepEqual(deny.spec, { podSelector: {}, policyTypes: ['Ingress', 'Egress'] });
  const envoy = policies.find((p) => p.metadata.name === 'envoy-vs-nginx-envoy-test-1');
  assert.deepEqual(envoy.spec.ingress[0].ports, [{ protocol: 'TCP', port: 18000 }]);
  assert.deepEqual(envoy.spec.ingress[0].from, [
    { podSelector: { matchLabels: { 'app.kubernetes.io/part-of': 'proxy-policy-lab', 'lab/testid': TESTID } } },
  ]);
  const svc = objects.find((o) => o.kind === 'Service' && o.metadata.name === 'envoy-vs-nginx-envoy-test-1');
  assert.deepEqual(
    svc.spec.ports.map((p) => p.name),
    ['http'],
  );
  const dep = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'envoy-vs-nginx-envoy-test-1');
  const container = dep.spec.template.spec.containers[0];
  assert.deepEqual(
    container.ports.map((p) => p.name),
    ['http', 'admin'],
  );
  assert.equal(container.readinessProbe.httpGet.port, 18001);
  // Envoy reaches its web service by the Service's name, which carries the testid.
  const conf = objects.find((o) => o.metadata.name === 'envoy-vs-nginx-envoy-test-1-config').data['envoy.yaml'];
  assert.match(conf, /address: envoy-vs-nginx-web-test-1, port_value: 20000/);
  // Egress: the lab's pods and DNS; the Node pods the npm registry; the runners Prometheus' port.
  const egress = policies.find((p) => p.metadata.name === 'lab-egress-test-1');
  assert.equal(egress.spec.egress.length, 2);
  const runners = policies.find((p) => p.metadata.name === 'k6-runners-test-1');
  assert.deepEqual(runners.spec.egress, [{ ports: [{ protocol: 'TCP', port: 9090 }] }]);
  assert.ok(policies.find((p) => p.metadata.name === 'npm-registry-test-1'));
});

test('the namespace comes from the testid and is checked; a run id of the longest form still names everything', () => {
  assert.equal(namespaceOf('20261123-091050-spike-k8s'), 'lab-20261123-091050-spike-k8s');
  // render --k8s's testids: YYYYMMDD-HHMMSS-mmm-<pid>-<suite>-k8s, a pid of up to 7 digits.
  const long = '20261123-121207-330-4194304-stress-k8s';
  const objects = manifests(['smoke/caching'], 1, undefined, long);
  assert.equal(objects[0].metadata.name, `lab-${long}`);
  for (const o of objects) {
    assert.ok(o.metadata.name.includes(long), o.metadata.name);
    if (o.kind === 'Service') assert.ok(o.metadata.name.length <= 63, o.metadata.name);
  }
  assert.ok(objects.find((o) => o.kind === 'TestRun').metadata.name.length <= 51);
  assert.throws(() => namespaceOf('../x'), /cannot name Kubernetes objects/);
  assert.throws(() => namespaceOf('Spike_1'), /cannot name Kubernetes objects/);
  assert.throws(() => namespaceOf(`20261123-091050-${'x'.repeat(60)}`), /at most 63/);
});

test('checkov passes the rendered manifests, each skip with its reason in the manifest; a privileged container fails it', () => {
  assert.ok(existsSync(checkov), `no ${checkov}: the installer puts checkov in the lab's venv (run ./labw setup)`);
  const objects = manifests(['spike/burst', '--quick'], 2);
  const dir = mkdtempSync(join(tmpdir(), 'lab-k8s-checkov-'));
  try {
    const files = writeManifests(dir, 'burst', objects);
    writeManifests(dir, 'envoy-vs-nginx', manifests(['spike/envoy-vs-nginx', '--quick'], 1));
    const r = runCheckov(['-d', dir, '-o', 'json']);
    assert.equal(r.status, 0, r.stdout.slice(-3000) + r.stderr.slice(-3000));
    const report = JSON.parse(r.stdout);
    const { summary, results } = Array.isArray(report) ? report[0] : report;
    assert.equal(summary.failed, 0);
    assert.ok(summary.passed > 100, JSON.stringify(summary));
    // The checks that matter here ran and passed.
    const passed = new Set(results.passed_checks.map((c) => c.check_id));
    for (const id of [
      'CKV_K8S_16',
      'CKV_K8S_20',
      'CKV_K8S_22',
      'CKV_K8S_23',
      'CKV_K8S_28',
      'CKV_K8S_31',
      'CKV_K8S_37',
      'CKV_K8S_38',
      'CKV_K8S_40',
      'CKV_K8S_10',
      'CKV_K8S_11',
      'CKV_K8S_12',
      'CKV_K8S_13',
      'CKV_K8S_21',
      'CKV2_K8S_6',
    ])
      assert.ok(passed.has(id), `${id} passed`);
    // Every skip carries its reason, in the manifest (an annotation checkov reads).
    for (const s of results.skipped_checks)
      assert.ok((s.check_result.suppress_comment || '').length > 20, `${s.check_id} on ${s.resource}: a reason`);
    const stack = readFileSync(files[0], 'utf8');
    assert.match(stack, /checkov\.io\/skip1: "CKV_K8S_8=a load test measures the server as it is/);
    // A privileged container fails it.
    const bad = join(dir, 'privileged.yaml');
    writeFileSync(bad, stack.replace('privileged: false', 'privileged: true'));
    const p = runCheckov(['-f', bad]);
    assert.notEqual(p.status, 0, p.stdout);
    assert.match(p.stdout, /CKV_K8S_16[^\n]*\n\s*FAILED for resource: Deployment\.lab-test-1\.burst-/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('every image in docker-compose.yml (and so in the manifests) is pinned: a version, a digest unless a comment says none could be had', () => {
  const text = readFileSync(join(root, 'docker-compose.yml'), 'utf8');
  const lines = text.split('\n');
  const images = [];
  lines.forEach((line, i) => {
    const m = /^\s*image:\s*(\S+)/.exec(line);
    if (!m) return;
    images.push(m[1]);
    const [ref, digest] = m[1].split('@');
    assert.match(ref, /:[^:]*\d+\.\d+/, `${m[1]}: an exact version tag`);
    if (digest) assert.match(digest, /^sha256:[0-9a-f]{64}$/, m[1]);
    else assert.match(lines[i - 1], /# No digest: /, `${m[1]} has no digest and no comment saying why`);
  });
  assert.ok(images.length >= 10);
  assert.ok(images.filter((i) => i.includes('@sha256:')).length >= 7, 'most images by digest');
  // The manifests run those images: the stack's and k6's.
  const doc = YAML.parse(text, { merge: true });
  const objects = manifests(['spike/burst', '--quick'], 1);
  const used = [
    ...podsOf(objects).flatMap(({ spec }) => [...(spec.initContainers || []), ...spec.containers].map((c) => c.image)),
    objects.find((o) => o.kind === 'TestRun').spec.runner.image,
  ];
  for (const image of used) assert.ok(images.includes(image), `${image} is one of docker-compose.yml's`);
  assert.equal(objects.find((o) => o.kind === 'TestRun').spec.runner.image, doc.services.k6.image);
});

test('a stack that names 127.0.0.1 for a neighbour is refused, with where', () => {
  assert.throws(() => manifests(['breakpoint/json-filter']), /json-filter-node: its command .*127\.0\.0\.1/);
});
