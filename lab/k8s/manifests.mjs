/*
 * Kubernetes manifests from the one topology (docker-compose.yml), for teams that run a stack
 * and its load on a cluster (seed 003 ran burst on kind): per service its configs, Deployment
 * and Services, the repository files the pods read, and a k6-operator TestRun for the load.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { tmpdir } from 'node:os';
import YAML from 'yaml';
import { stackServices, portsByService } from '../stack/topology.mjs';
import { serviceView, renderedConfigs, renderArgs, renderText } from '../stack/render.mjs';
import { parseCaps } from '../stack/cgroups.mjs';
import { topologyView } from '../stack/start-stop.mjs';

const LABELS = { 'app.kubernetes.io/part-of': 'proxy-policy-lab' };
const K6_IMAGE = 'grafana/k6:1.8.1';
// Inside a pod every service has its own interfaces: it listens on all of them, and the
// others are reached by their Service's DNS name.
const POD_NETWORK = { bind: '0.0.0.0', at: (name) => name };

/** ConfigMap keys cannot hold '/': a repository path becomes dots, and goes back by `items`. */
const keyOf = (path) => path.replace(/[^-._a-zA-Z0-9]/g, '.');

/**
 * The repository files a pod mounting the checkout at /lab reads, in one ConfigMap: lua modules,
 * the Node servers and the lockfile (the Node pods run `npm ci` into a scratch folder first).
 */
function labFiles(root, profile) {
  const list = (dir, re) => (existsSync(join(root, dir)) ? readdirSync(join(root, dir), { recursive: true }).map(String).filter((f) => re.test(f)).map((f) => join(dir, f)) : []);
  return [
    ...list('stacks/lib', /\.lua$/),
    ...list(`stacks/${profile}`, /\.lua$/),
    ...list('servers/node', /\.js$/),
    'package.json',
    'package-lock.json',
  ];
}

/**
 * Refuses a rendered text that names 127.0.0.1 other than with the service's own ports: such a
 * service cannot run in a pod of its own, and the error names the place that says so.
 */
function checkPortable(service, where, text, ownPorts) {
  for (const m of text.matchAll(/127\.0\.0\.1(?::(\d+))?/g)) {
    if (m[1] && ownPorts.includes(Number(m[1]))) continue;
    const line = text.slice(0, m.index).split('\n').length;
    throw new Error(`${service}: ${where} line ${line} names 127.0.0.1 ('${text.split('\n')[line - 1].trim()}'): in a pod that is the pod itself; this experiment cannot run on Kubernetes until it addresses its neighbours as {{at.<service>}}`);
  }
}

/** Resource limits from caps (cpu=2% mem=25M): Kubernetes' millicores and bytes. */
function limitsOf(capsText) {
  const caps = parseCaps(capsText || '');
  const limits = {};
  if (caps.cpu) limits.cpu = `${Math.round(caps.cpu * 1000)}m`;
  if (caps.memBytes) limits.memory = `${Math.round(caps.memBytes / 1024 ** 2)}Mi`;
  return Object.keys(limits).length ? { limits, requests: limits } : undefined;
}

/**
 * Per service: a ConfigMap of its configs, rendered as Docker renders them but listening on the
 * pod's interfaces and reaching the others by their Service names; a Deployment running the
 * compose image and command, with the level's caps as resource limits where the service declares
 * caps; a Service per declared port.
 */
function serviceObjects({ root, s, view, labFilesName, capsText }) {
  const labels = { ...LABELS, 'app.kubernetes.io/name': s.name, 'app.kubernetes.io/component': s.profiles[0] };
  const files = Object.fromEntries(Object.values(renderedConfigs(root, s, view)).map(({ file, text }) => [file, text]));
  const ownPorts = Object.values(s.ports);
  for (const [name, text] of Object.entries(files)) checkPortable(s.name, name, text, ownPorts);
  const args = s.docker.command ? renderArgs(s.docker.command.map(String), view) : [];
  checkPortable(s.name, 'its command', args.join('\n'), ownPorts);
  // The lab's Node servers listen on 127.0.0.1 unless told otherwise (--host).
  const isNode = args[0] === 'node';
  if (isNode) args.push('--host', '0.0.0.0');

  const volumes = [];
  const mounts = [];
  const objects = [];
  for (const v of s.docker.volumes) {
    const [from, to] = String(v).split(':');
    if (from === '.') {
      // The checkout: the files the pod reads, from the shared ConfigMap; Node pods get a
      // writable copy with their packages installed by an init container.
      volumes.push({ name: 'lab-files', configMap: { name: labFilesName, items: labFiles(root, s.profiles[0]).map((f) => ({ key: keyOf(f), path: f })) } });
      if (isNode) {
        volumes.push({ name: 'lab', emptyDir: {} });
        mounts.push({ name: 'lab', mountPath: to });
      } else {
        mounts.push({ name: 'lab-files', mountPath: to, readOnly: true });
      }
    } else if (from.startsWith(`./.lab/rendered/${s.name}`)) {
      const file = relative(`./.lab/rendered/${s.name}`, from);
      volumes.push({ name: 'config', configMap: { name: `${s.name}-config` } });
      mounts.push(file ? { name: 'config', mountPath: to, subPath: file, readOnly: true } : { name: 'config', mountPath: to, readOnly: true });
    }
  }
  if (Object.keys(files).length) {
    objects.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${s.name}-config`, labels }, data: files });
  }
  const http = new URL(renderText(s.ready, view));
  const container = {
    name: s.name,
    image: s.docker.image,
    ...(args.length ? { args } : {}),
    ...(s.docker.workingDir ? { workingDir: s.docker.workingDir } : {}),
    ports: Object.entries(s.ports).map(([name, port]) => ({ name, containerPort: port })),
    readinessProbe: { httpGet: { path: http.pathname, port: Number(http.port) }, periodSeconds: 2 },
    ...(s.caps && limitsOf(capsText) ? { resources: limitsOf(capsText) } : {}),
    volumeMounts: mounts,
  };
  const initContainers = isNode ? [{
    name: 'npm-ci',
    image: s.docker.image,
    workingDir: s.docker.workingDir,
    command: ['sh', '-c', 'cp -rL /lab-files/. . && npm ci --omit=dev --ignore-scripts --no-audit --no-fund'],
    volumeMounts: [{ name: 'lab-files', mountPath: '/lab-files', readOnly: true }, { name: 'lab', mountPath: s.docker.workingDir }],
  }] : [];
  objects.push({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: s.name, labels },
    spec: {
      replicas: 1,
      selector: { matchLabels: { 'app.kubernetes.io/name': s.name } },
      template: { metadata: { labels }, spec: { ...(initContainers.length ? { initContainers } : {}), containers: [container], volumes } },
    },
  });
  objects.push({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: s.name, labels },
    spec: { selector: { 'app.kubernetes.io/name': s.name }, ports: Object.entries(s.ports).map(([name, port]) => ({ name, port, targetPort: port })) },
  });
  return objects;
}

/** `k6 archive` of the experiment's script with its plan's environment; returns the tar's bytes. */
function k6Archive(root, env, experiment, archiveEnv) {
  const dir = mkdtempSync(join(tmpdir(), 'lab-k6a-'));
  try {
    const out = join(dir, 'archive.tar');
    const r = spawnSync('k6', ['archive', ...Object.entries(archiveEnv).flatMap(([k, v]) => ['-e', `${k}=${v}`]), '-O', out, join('k6', `${experiment}.js`)], { cwd: root, env, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`k6 archive k6/${experiment}.js: ${(r.stderr || r.stdout).trim().split('\n').slice(-3).join('\n')}`);
    return readFileSync(out);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The manifests of one experiment's stack and its load: {objects, testid}. The load is a
 * k6-operator TestRun: the experiment's script as a `k6 archive` (plan, knobs and the services'
 * addresses inside) in a ConfigMap, `parallelism` runner pods, remote write to the team's
 * Prometheus, every sample tagged with a testid.
 * `request` is the parsed run request (suite, experiment, --quick, knobs); `policy` and
 * `targets` what the stack serves; `parallelism` the k6 runner pods; `prometheus` the base URL
 * of the team's Prometheus (remote-write receiver on).
 */
export function k8sManifests({ root, env, topology, request, experiment, profile = experiment, policy, targets, parallelism, prometheus, testid }) {
  const ports = portsByService(topology);
  const services = stackServices(topology, profile);
  const labFilesName = `${experiment}-lab-files`;
  const objects = [];
  for (const s of services) {
    const view = serviceView({ policy, targets, ports, service: s, prefix: '/tmp', root: '/lab', network: POD_NETWORK, extra: { ...topologyView(topology), data: '/lab-data' } });
    objects.push(...serviceObjects({ root, s, view, labFilesName, capsText: s.caps ? renderText(s.caps, view).trim() : '' }));
  }
  if (services.some((s) => s.docker.volumes.some((v) => String(v).startsWith('.:')))) {
    objects.unshift({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: labFilesName, labels: LABELS },
      data: Object.fromEntries(labFiles(root, profile).map((f) => [keyOf(f), readFileSync(join(root, f), 'utf8')])),
    });
  }
  // The load: the script and its plan as a k6 archive, every service at its Service's address.
  const baseUrls = Object.fromEntries(services.map((s) => [s.name, `http://${s.name}:${s.ports.http}`]));
  const archiveEnv = {
    SUITE: request.name,
    ...(request.factor > 1 ? { QUICK: String(request.factor) } : {}),
    ...(Object.keys(request.overrides[experiment] || {}).length ? { KNOBS: JSON.stringify(request.overrides[experiment]) } : {}),
    // The plan as `parallelism` pods share it: each gets the whole VU count (lab/run/segments.mjs).
    ...(parallelism > 1 ? { SEGMENTS: String(parallelism) } : {}),
    LAB_BASE_URLS: JSON.stringify(baseUrls),
    LAB_RESULTS: '/tmp',
  };
  const tar = k6Archive(root, env, experiment, archiveEnv);
  const name = `${experiment}-${request.name}`.replace(/[^a-z0-9-]/g, '-');
  objects.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${name}-k6`, labels: LABELS }, binaryData: { 'archive.tar': tar.toString('base64') } });
  const tags = ['--tag', `testid=${testid}`, '--tag', `experiment=${experiment}`, '--tag', `suite=${request.name}`];
  objects.push({
    apiVersion: 'k6.io/v1alpha1',
    kind: 'TestRun',
    metadata: { name, labels: { ...LABELS, 'lab/testid': testid } },
    spec: {
      parallelism,
      script: { configMap: { name: `${name}-k6`, file: 'archive.tar' } },
      // Each runner pod judges thresholds on its share of the plan only, and a count threshold
      // on a share is wrong: with more than one pod they are off, and the whole run is judged
      // from Prometheus by its testid.
      arguments: [...(parallelism > 1 ? ['--no-thresholds'] : []), '--out', 'experimental-prometheus-rw', ...tags].join(' '),
      runner: {
        image: K6_IMAGE,
        env: [
          { name: 'K6_PROMETHEUS_RW_SERVER_URL', value: `${prometheus.replace(/\/+$/, '')}/api/v1/write` },
          { name: 'K6_PROMETHEUS_RW_TREND_STATS', value: 'p(95),p(99),min,max,avg,med,count' },
          { name: 'K6_NO_USAGE_REPORT', value: 'true' },
        ],
      },
    },
  });
  return { objects, testid };
}

/** Writes the objects as one multi-document YAML file per kind of concern; returns the paths. */
export function writeManifests(dir, experiment, objects) {
  mkdirSync(dir, { recursive: true });
  const load = objects.filter((o) => o.kind === 'TestRun' || o.metadata.name.endsWith('-k6'));
  const stack = objects.filter((o) => !load.includes(o));
  const head = (what) => `# ${what}, written by \`just render --k8s\` from docker-compose.yml and the model; do not edit.\n`;
  const out = [[join(dir, `${experiment}.stack.yaml`), stack, `The ${experiment} stack`], [join(dir, `${experiment}.testrun.yaml`), load, `The ${experiment} load (k6-operator)`]];
  for (const [path, list, what] of out) writeFileSync(path, head(what) + list.map((o) => YAML.stringify(o, { lineWidth: 0, aliasDuplicateObjects: false })).join('---\n'));
  return out.map(([p]) => p);
}
