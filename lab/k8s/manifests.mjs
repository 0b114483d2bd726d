/*
 * Kubernetes manifests from the one topology (docker-compose.yml), for teams that run a stack
 * and its load on a cluster (seed 003 ran burst on kind): per run a Namespace of its own, and
 * in it per service its configs, Deployment and Services, the repository files the pods read,
 * NetworkPolicies that let only the lab's own traffic through, and a k6-operator TestRun for
 * the load. Fit for a shared cluster: every pod meets the `restricted` Pod Security Standard
 * (the Namespace enforces it), every container has requests and limits, every object's name
 * carries the testid.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import YAML from 'yaml';
import { stackServices, portsByService } from '../stack/topology.mjs';
import { serviceView, renderedConfigs, renderArgs, renderText } from '../stack/render.mjs';
import { parseCaps } from '../stack/cgroups.mjs';
import { topologyView } from '../stack/start-stop.mjs';
import { plan as makePlan, kindOfPlan } from '../../thresholds/plan.js';
import { k6Plan } from '../../thresholds/k6-options.js';
import { exportScript, urlVariable } from '../export/script.mjs';

const PART_OF = { 'app.kubernetes.io/part-of': 'proxy-policy-lab' };
// The namespace k6-operator's bundle installs itself in: its controller asks the runner pods
// for their status on k6's REST port.
const K6_OPERATOR_NAMESPACE = 'k6-operator-system';
const K6_API_PORT = 6565;
// The Pod Security Standard every pod meets, and the Kubernetes version whose rules it means.
const POD_SECURITY = { level: 'restricted', version: 'v1.33' };
// Non-root users with high UIDs (checkov CKV_K8S_40: no clash with a host's users): the
// servers run as 10001, which owns nothing in their images (they read ConfigMaps, world-
// readable, and write only to their emptyDirs); k6 as its image's own user (k6, 12345).
const SERVER_UID = 10001;
const K6_UID = 12345;

/**
 * Requests and limits of a service without caps: a lab server at the suites' loads takes a
 * fraction of a core (the whole stack shares 2 cores with k6 natively, docs/knobs.md), so it
 * asks for little and may use up to a core; a capped level (cdn) uses its caps instead.
 */
const SERVER_RESOURCES = { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '1', memory: '256Mi' } };
// `npm ci` of the lockfile's dependencies (50 MiB of node_modules) in the Node pods' init container.
const NPM_CI_RESOURCES = { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '1', memory: '512Mi' } };
// A plain copy of the repository files (the Erlang pods' init container).
const COPY_RESOURCES = { requests: { cpu: '50m', memory: '32Mi' }, limits: { cpu: '200m', memory: '64Mi' } };
// k6-operator's starter pod: one HTTP call per runner.
const STARTER_RESOURCES = { requests: { cpu: '50m', memory: '32Mi' }, limits: { cpu: '200m', memory: '64Mi' } };

// Inside a pod every service has its own interfaces: it listens on all of them, and the
// others are reached by their Service's DNS name, which carries the testid.
const podNetwork = (testid) => ({ bind: '0.0.0.0', at: (name) => `${name}-${testid}` });

const DNS_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

/**
 * The run's namespace: `lab-<testid>`, a DNS label (lowercase letters, digits and '-', at most
 * 63 characters), refused with the reason otherwise.
 */
export function namespaceOf(testid) {
  if (typeof testid !== 'string' || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(testid)) {
    throw new Error(
      `testid '${String(testid).slice(0, 80)}' cannot name Kubernetes objects: only lowercase letters, digits and '-' inside (like 20261123-091050-spike-k8s)`,
    );
  }
  const ns = `lab-${testid}`;
  if (ns.length > 63)
    throw new Error(
      `namespace '${ns}' is ${ns.length} characters: a namespace name is a DNS label of at most 63; use a shorter run name`,
    );
  return ns;
}

/** An object's name with the testid, refused when it is no DNS label of at most `max` characters. */
function nameWith(base, testid, max = 63) {
  const name = `${base}-${testid}`;
  if (name.length > max || !DNS_LABEL.test(name))
    throw new Error(
      `Kubernetes name '${name}' is not a DNS label of at most ${max} characters (lowercase letters, digits, '-'; a letter first): use a shorter run name`,
    );
  return name;
}

/** ConfigMap keys cannot hold '/': a repository path becomes dots, and goes back by `items`. */
const keyOf = (path) => path.replace(/[^-._a-zA-Z0-9]/g, '.');

/** The services whose command runs the Erlang filter from the checkout. */
const runsErlang = (s) => String((s.docker.command || [])[0] || '').startsWith('servers/erlang/');

/**
 * The repository files a pod mounting the checkout at /lab reads, in one ConfigMap: lua modules,
 * the Node servers and the lockfile (the Node pods run `npm ci` into a scratch folder first),
 * and the Erlang filter's sources where the stack runs it (compiled in the pod).
 */
function labFiles(root, profile, services) {
  const list = (dir, re) =>
    existsSync(join(root, dir))
      ? readdirSync(join(root, dir), { recursive: true })
          .map(String)
          .filter((f) => re.test(f))
          .map((f) => join(dir, f))
      : [];
  return [
    ...list('stacks/lib', /\.lua$/),
    ...list(`stacks/${profile}`, /\.lua$/),
    ...list('servers/node', /\.js$/),
    ...(services.some(runsErlang) ? list('servers/erlang', /\.(erl|app\.src|sh)$/) : []),
    'package.json',
    'package-lock.json',
  ];
}

/**
 * Refuses a rendered text that names 127.0.0.1 other than with the service's own ports: such a
 * service cannot run in a pod of its own, and the error names the place that says so. A comment
 * line (# in nginx's and Envoy's configs) says nothing the service does.
 */
function checkPortable(service, where, text, ownPorts) {
  for (const m of text.matchAll(/127\.0\.0\.1(?::(\d+))?/g)) {
    if (m[1] && ownPorts.includes(Number(m[1]))) continue;
    const line = text.slice(0, m.index).split('\n').length;
    if (/^\s*#/.test(text.split('\n')[line - 1])) continue;
    throw new Error(
      `${service}: ${where} line ${line} names 127.0.0.1 ('${text.split('\n')[line - 1].trim()}'): in a pod that is the pod itself; this experiment cannot run on Kubernetes until it addresses its neighbours as {{at.<service>}}`,
    );
  }
}

/** Resources from caps (cpu=2% mem=25M): Kubernetes' millicores and bytes, requested and limited alike. */
function resourcesOf(capsText) {
  const caps = parseCaps(capsText || '');
  const capped = {};
  if (caps.cpu) capped.cpu = `${Math.round(caps.cpu * 1000)}m`;
  if (caps.memBytes) capped.memory = `${Math.round(caps.memBytes / 1024 ** 2)}Mi`;
  if (!Object.keys(capped).length) return SERVER_RESOURCES;
  return { requests: { ...SERVER_RESOURCES.requests, ...capped }, limits: { ...SERVER_RESOURCES.limits, ...capped } };
}

/** The pod-level part of the `restricted` standard, and no API token in the pod. */
const podSecurity = (uid) => ({
  automountServiceAccountToken: false,
  securityContext: {
    runAsNonRoot: true,
    runAsUser: uid,
    runAsGroup: uid,
    fsGroup: uid,
    seccompProfile: { type: 'RuntimeDefault' },
  },
});

/** The container-level part: no privilege, no escalation, no capabilities, a read-only root. */
const containerSecurity = (uid) => ({
  privileged: false,
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  runAsUser: uid,
  runAsGroup: uid,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
});

/**
 * An image pinned by digest is the image: the node's copy will do. One pinned by tag only (no
 * digest could be read for it, docker-compose.yml says so beside it) is asked of the registry
 * every time (checkov CKV_K8S_15).
 */
const pullPolicy = (image) => (image.includes('@sha256:') ? 'IfNotPresent' : 'Always');

/**
 * checkov's skips for a Deployment, each with its reason, as the annotations checkov reads
 * (checkov.io/skipN: CHECK_ID=reason):
 * - CKV_K8S_8 (a liveness probe) always: a load test measures the server as it is, and a
 *   kubelet restart in the middle of a run would hide the very failure the run must show (the
 *   readiness probe keeps traffic off a pod until it answers);
 * - CKV_K8S_43 (image by digest) where an image has no digest to pin (see pullPolicy).
 */
function checkovSkips(images) {
  const skips = [
    'CKV_K8S_8=a load test measures the server as it is: a liveness restart in the middle of a run would hide the failure the run must show; the readiness probe keeps traffic off a pod until it answers',
  ];
  const undigested = [...new Set(images.filter((i) => !i.includes('@sha256:')))];
  if (undigested.length)
    skips.push(
      `CKV_K8S_43=${undigested.join(', ')}: pinned to an exact version tag only, no registry digest could be read for it when the lab pinned its images (docker-compose.yml says so beside it); pulled Always`,
    );
  return { annotations: Object.fromEntries(skips.map((s, i) => [`checkov.io/skip${i + 1}`, s])) };
}

/** A service's command line as its pod runs it, checked to address no neighbour as 127.0.0.1. */
function podArgs(s, view, ownPorts) {
  const args = s.docker.command ? renderArgs(s.docker.command.map(String), view) : [];
  checkPortable(s.name, 'its command', args.join('\n'), ownPorts);
  // The lab's Node servers listen on 127.0.0.1 unless told otherwise (--host).
  if (args[0] === 'node') args.push('--host', '0.0.0.0');
  return args;
}

/**
 * The init container that gives a pod a writable copy of the checkout: Node pods get their
 * packages installed into it, and a service that writes into the checkout in Docker too (Erlang
 * compiles into it) gets the copy alone.
 */
function checkoutCopier(s, to, isNode) {
  const copy = 'cp -rL /lab-files/. .';
  return {
    name: isNode ? 'npm-ci' : 'copy-lab',
    image: s.docker.image,
    imagePullPolicy: pullPolicy(s.docker.image),
    workingDir: to,
    command: ['sh', '-c', isNode ? `${copy} && npm ci --omit=dev --ignore-scripts --no-audit --no-fund` : copy],
    env: [{ name: 'HOME', value: '/tmp' }, ...(isNode ? [{ name: 'npm_config_cache', value: '/tmp/.npm' }] : [])],
    resources: isNode ? NPM_CI_RESOURCES : COPY_RESOURCES,
    securityContext: containerSecurity(SERVER_UID),
    volumeMounts: [
      { name: 'lab-files', mountPath: '/lab-files', readOnly: true },
      { name: 'lab', mountPath: to },
      { name: 'tmp', mountPath: '/tmp' },
    ],
  };
}

/**
 * A service's compose volumes as a pod's: {volumes, mounts, initContainers}. The root filesystem
 * is read-only, so /tmp is an emptyDir (nginx's prefix and temp paths, Envoy's and Erlang's
 * scratch files, npm's cache); the checkout comes from the shared ConfigMap, and its rendered
 * configs from its own.
 */
function podVolumes(s, { labFilesName, labFileList, configName, isNode }) {
  const volumes = [{ name: 'tmp', emptyDir: { sizeLimit: '256Mi' } }];
  const mounts = [{ name: 'tmp', mountPath: '/tmp' }];
  const initContainers = [];
  for (const v of s.docker.volumes) {
    const [from, to, mode] = String(v).split(':');
    if (from === '.') {
      volumes.push({
        name: 'lab-files',
        configMap: {
          name: labFilesName,
          items: labFileList.map((f) => ({ key: keyOf(f), path: f, ...(f.endsWith('.sh') ? { mode: 0o755 } : {}) })),
        },
      });
      if (isNode || mode !== 'ro') {
        volumes.push({ name: 'lab', emptyDir: { sizeLimit: '512Mi' } });
        mounts.push({ name: 'lab', mountPath: to });
        initContainers.splice(0, initContainers.length, checkoutCopier(s, to, isNode));
      } else {
        mounts.push({ name: 'lab-files', mountPath: to, readOnly: true });
      }
    } else if (from.startsWith(`./.lab/rendered/${s.name}`)) {
      const file = relative(`./.lab/rendered/${s.name}`, from);
      volumes.push({ name: 'config', configMap: { name: configName } });
      mounts.push(
        file
          ? { name: 'config', mountPath: to, subPath: file, readOnly: true }
          : { name: 'config', mountPath: to, readOnly: true },
      );
    }
  }
  return { volumes, mounts, initContainers };
}

/**
 * The service's container: the compose image and command, ready when its readiness URL answers, capped
 * where it declares caps.
 */
function serviceContainer(s, { view, args, mounts, capsText }) {
  const http = new URL(renderText(s.ready, view));
  return {
    name: s.name,
    image: s.docker.image,
    imagePullPolicy: pullPolicy(s.docker.image),
    ...(args.length ? { args } : {}),
    ...(s.docker.workingDir ? { workingDir: s.docker.workingDir } : {}),
    env: [{ name: 'HOME', value: '/tmp' }],
    ports: Object.entries(s.ports).map(([port, number]) => ({ name: port, containerPort: number })),
    readinessProbe: { httpGet: { path: http.pathname, port: Number(http.port) }, periodSeconds: 2 },
    resources: s.caps ? resourcesOf(capsText) : SERVER_RESOURCES,
    securityContext: containerSecurity(SERVER_UID),
    volumeMounts: mounts,
  };
}

/**
 * The Service for a service's ports but the admin one (Envoy's is the pod's own business), and the
 * NetworkPolicy letting only the lab's pods reach them.
 */
function serviceReach(s, { meta, name, testid }) {
  const served = Object.entries(s.ports).filter(([port]) => port !== 'admin');
  const selector = { 'app.kubernetes.io/name': s.name, 'lab/testid': testid };
  return [
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta(name),
      spec: { selector, ports: served.map(([port, number]) => ({ name: port, port: number, targetPort: number })) },
    },
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: meta(name),
      spec: {
        podSelector: { matchLabels: selector },
        policyTypes: ['Ingress'],
        ingress: [
          {
            from: [{ podSelector: { matchLabels: { ...PART_OF, 'lab/testid': testid } } }],
            ports: served.map(([, number]) => ({ protocol: 'TCP', port: number })),
          },
        ],
      },
    },
  ];
}

/**
 * Per service: a ConfigMap of its configs, rendered as Docker renders them but listening on the
 * pod's interfaces and reaching the others by their Service names; a Deployment running the
 * compose image and command under the restricted standard, with requests and limits (the
 * level's caps where the service declares caps); a Service for its ports but the admin one;
 * and a NetworkPolicy letting the lab's pods reach those ports only.
 */
function serviceObjects({
  root,
  s,
  view,
  labFilesName,
  capsText,
  testid,
  namespace,
  labels: runLabels,
  files: labFileList,
}) {
  const labels = { ...runLabels, 'app.kubernetes.io/name': s.name, 'app.kubernetes.io/component': s.profiles[0] };
  const meta = (name, extra = {}) => ({ name, namespace, labels, ...extra });
  const files = Object.fromEntries(Object.values(renderedConfigs(root, s, view)).map(({ file, text }) => [file, text]));
  const ownPorts = Object.values(s.ports);
  for (const [name, text] of Object.entries(files)) checkPortable(s.name, name, text, ownPorts);
  const args = podArgs(s, view, ownPorts);
  const isNode = args[0] === 'node';
  const name = nameWith(s.name, testid);
  const configName = `${name}-config`;
  const { volumes, mounts, initContainers } = podVolumes(s, { labFilesName, labFileList, configName, isNode });
  const objects = [];
  if (Object.keys(files).length)
    objects.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: meta(configName), data: files });
  const container = serviceContainer(s, { view, args, mounts, capsText });
  const images = [container.image, ...initContainers.map((c) => c.image)];
  objects.push({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta(name, checkovSkips(images)),
    spec: {
      replicas: 1,
      selector: { matchLabels: { 'app.kubernetes.io/name': s.name, 'lab/testid': testid } },
      template: {
        metadata: { labels: { ...labels, ...(isNode ? { 'lab/egress': 'npm-registry' } : {}) } },
        spec: {
          ...podSecurity(SERVER_UID),
          ...(initContainers.length ? { initContainers } : {}),
          containers: [container],
          volumes,
        },
      },
    },
  });
  objects.push(...serviceReach(s, { meta, name, testid }));
  return objects;
}

/**
 * The namespace-wide NetworkPolicies: nothing in or out unless allowed; the lab's pods may
 * reach each other (each service's own policy then says on which ports) and the cluster's
 * DNS; the Node pods the npm registry (their init container's `npm ci`); the k6 runners the
 * team's Prometheus (remote write), and they answer k6-operator on k6's REST port.
 */
function networkPolicies({ namespace, testid, labels, prometheus, hasNode }) {
  const meta = (base) => ({ name: nameWith(base, testid), namespace, labels });
  const lab = { podSelector: { matchLabels: { ...PART_OF, 'lab/testid': testid } } };
  const promUrl = new URL(prometheus);
  const promPort = Number(promUrl.port || (promUrl.protocol === 'https:' ? 443 : 80));
  const dns = {
    to: [{ namespaceSelector: {}, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }],
    ports: [
      { protocol: 'UDP', port: 53 },
      { protocol: 'TCP', port: 53 },
    ],
  };
  const out = [
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: meta('default-deny'),
      spec: { podSelector: {}, policyTypes: ['Ingress', 'Egress'] },
    },
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: meta('lab-egress'),
      spec: { podSelector: lab.podSelector, policyTypes: ['Egress'], egress: [{ to: [lab] }, dns] },
    },
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: meta('k6-runners'),
      spec: {
        podSelector: { matchLabels: { 'lab/testid': testid, 'lab/role': 'k6' } },
        policyTypes: ['Ingress', 'Egress'],
        ingress: [
          {
            from: [
              lab,
              { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': K6_OPERATOR_NAMESPACE } } },
            ],
            ports: [{ protocol: 'TCP', port: K6_API_PORT }],
          },
        ],
        egress: [{ ports: [{ protocol: 'TCP', port: promPort }] }],
      },
    },
  ];
  if (hasNode) {
    out.push({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: meta('npm-registry'),
      spec: {
        podSelector: { matchLabels: { 'lab/testid': testid, 'lab/egress': 'npm-registry' } },
        policyTypes: ['Egress'],
        egress: [{ ports: [{ protocol: 'TCP', port: 443 }] }],
      },
    });
  }
  return out;
}

/** The k6 image docker-compose.yml pins (its `k6` service), the one the runner pods run too. */
function k6Image(root) {
  const image = YAML.parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), { merge: true })?.services?.k6
    ?.image;
  if (!image) throw new Error('docker-compose.yml has no k6 service with an image: the runner pods run that image');
  return image;
}

// A runner pod's sizing, as `./labw bench k6` measured k6 with the lab's outputs
// (docs/beyond-one-machine.md, "How many runner pods", has the figures and the run): the rate
// one core sends at 70 % busy, and k6's memory as a base and a share per VU held.
const K6_SIZING = { rpsPerCore: 5000, baseMiB: 41, kibPerVu: 153 };

/**
 * A runner pod's requests and limits from K6_SIZING. A pod gets whole cores for its share of the
 * plan's highest rate (at least one, the unit the doc sizes pods in), and memory for the plan's
 * most VUs (each pod holds the whole VU count, lab/run/segments.mjs), doubled for what the bench
 * leaves out (the outputs' buffers, a warm-up scenario beside its case), in steps of 64 MiB.
 * Requests equal limits: a runner short of CPU falls behind its schedule, and that would be
 * measured.
 */
export function runnerResources(p, parallelism) {
  const scenarios = Object.values(kindOfPlan(p).scenarios(p, {}));
  const vus = Math.max(1, ...scenarios.map((s) => Math.max(s.vus || 0, s.maxVUs || 0, s.preAllocatedVUs || 0)));
  const rate = Math.max(0, ...p.cases.map((c) => c.rate ?? Math.max(0, ...(c.steps || [0]))));
  const cores = Math.max(1, Math.ceil(rate / parallelism / K6_SIZING.rpsPerCore));
  const mib = Math.max(128, Math.ceil((2 * (K6_SIZING.baseMiB + (vus * K6_SIZING.kibPerVu) / 1024)) / 64) * 64);
  const r = { cpu: String(cores), memory: `${mib}Mi` };
  return { requests: r, limits: { ...r } };
}

/** The run's namespace, under the restricted Pod Security standard (enforced and warned). */
const namespaceObject = (namespace, labels) => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: {
    name: namespace,
    labels: {
      ...labels,
      'pod-security.kubernetes.io/enforce': POD_SECURITY.level,
      'pod-security.kubernetes.io/enforce-version': POD_SECURITY.version,
      'pod-security.kubernetes.io/warn': POD_SECURITY.level,
      'pod-security.kubernetes.io/warn-version': POD_SECURITY.version,
    },
  },
});

/** Every service of the stack as its objects (serviceObjects), its configs rendered for the pod network. */
function stackObjects({ root, topology, services, policy, targets, testid, namespace, labels, labFilesName, files }) {
  const ports = portsByService(topology);
  return services.flatMap((s) => {
    const view = serviceView({
      policy,
      targets,
      ports,
      service: s,
      prefix: '/tmp',
      root: '/lab',
      network: podNetwork(testid),
      extra: { ...topologyView(topology), data: '/lab-data' },
    });
    const capsText = s.caps ? renderText(s.caps, view).trim() : '';
    return serviceObjects({ root, s, view, labFilesName, capsText, testid, namespace, labels, files });
  });
}

/**
 * A k6-operator pod's part of a TestRun: the restricted standard too. The k6 ones write only to
 * /tmp; the starter (`k6 = false`) runs the operator's own image (one HTTP call per runner) and
 * writes nothing.
 */
function k6Pod({ image, labels }, resources, k6 = true) {
  return {
    ...(k6 ? { image, imagePullPolicy: pullPolicy(image) } : {}),
    metadata: { labels: { ...labels, 'lab/role': 'k6' } },
    automountServiceAccountToken: 'false',
    securityContext: podSecurity(K6_UID).securityContext,
    containerSecurityContext: containerSecurity(K6_UID),
    resources,
    ...(k6
      ? {
          volumes: [{ name: 'tmp', emptyDir: { sizeLimit: '256Mi' } }],
          volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
        }
      : {}),
  };
}

/** The test as one standalone script (./labw export), every service at its Service's address. */
function loadScript(root, { request, experiment, services, parallelism }) {
  // The plan as `parallelism` pods share it: each gets the whole VU count (lab/run/segments.mjs).
  const p = makePlan({
    experiment,
    suite: request.name,
    factor: request.factor,
    overrides: request.overrides[experiment],
    segments: parallelism,
  });
  return exportScript(root, k6Plan(p), {
    ports: Object.fromEntries(services.map((s) => [s.name, s.ports.http])),
    about: [
      `${experiment}, ${request.name} suite, for k6-operator: rendered by \`./labw render --k8s\` (./labw export writes the same test).`,
      '',
    ],
  });
}

/**
 * The load: the script's ConfigMap and one TestRun per run (and namespace), k6-<testid>, the
 * experiment in its labels, each service's <SERVICE>_URL in the runners' environment.
 */
function loadObjects(root, { request, experiment, services, parallelism, prometheus, testid, namespace, labels }) {
  // k6-operator names its jobs <name>-initializer and <name>-starter: 51 characters leave them a DNS label.
  const name = nameWith('k6', testid, 51);
  const loadLabels = { ...labels, 'app.kubernetes.io/component': experiment };
  const script = loadScript(root, { request, experiment, services, parallelism });
  const tags = ['--tag', `testid=${testid}`, '--tag', `experiment=${experiment}`, '--tag', `suite=${request.name}`];
  const pods = { image: k6Image(root), labels };
  // A pod's share: the plan as one process runs it (each pod gets its VUs, lab/run/segments.mjs).
  const runner = runnerResources(
    makePlan({ experiment, suite: request.name, factor: request.factor, overrides: request.overrides[experiment] }),
    parallelism,
  );
  const urls = services.map((s) => ({
    name: urlVariable(s.name),
    value: `http://${podNetwork(testid).at(s.name)}:${s.ports.http}`,
  }));
  const testRun = {
    apiVersion: 'k6.io/v1alpha1',
    kind: 'TestRun',
    metadata: { name, namespace, labels: loadLabels },
    spec: {
      parallelism,
      script: { configMap: { name: `${name}-script`, file: 'script.js' } },
      // Each runner pod judges thresholds on its share of the plan only, and a count threshold
      // on a share is wrong: with more than one pod they are off, and the whole run is judged
      // from Prometheus by its testid.
      arguments: [...(parallelism > 1 ? ['--no-thresholds'] : []), '--out', 'experimental-prometheus-rw', ...tags].join(
        ' ',
      ),
      runner: {
        ...k6Pod(pods, runner),
        env: [
          ...urls,
          { name: 'K6_PROMETHEUS_RW_SERVER_URL', value: `${prometheus.replace(/\/+$/, '')}/api/v1/write` },
          { name: 'K6_PROMETHEUS_RW_TREND_STATS', value: 'p(95),p(99),min,max,avg,med,count' },
          { name: 'K6_NO_USAGE_REPORT', value: 'true' },
        ],
      },
      // The initializer runs `k6 archive` and `k6 inspect` on the script: a runner's share.
      initializer: k6Pod(pods, runner),
      starter: k6Pod(pods, STARTER_RESOURCES, false),
    },
  };
  const scriptMap = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: `${name}-script`, namespace, labels: loadLabels },
    data: { 'script.js': script },
  };
  return [scriptMap, testRun];
}

/**
 * The manifests of one experiment's stack and its load: {objects, testid, namespace}. All in
 * the namespace `lab-<testid>`, made first. The load is a k6-operator TestRun: the test as one
 * standalone script (`./labw export`'s, plan and knobs inside) in a ConfigMap, the services'
 * addresses in the runners' environment, `parallelism` runner pods, remote write to the team's
 * Prometheus, every sample tagged with a testid.
 * `request` is the parsed run request (suite, experiment, --quick, knobs); `policy` and
 * `targets` what the stack serves; `parallelism` the k6 runner pods; `prometheus` the base URL
 * of the team's Prometheus (remote-write receiver on).
 */
export function k8sManifests({
  root,
  topology,
  request,
  experiment,
  profile = experiment,
  policy,
  targets,
  parallelism,
  prometheus,
  testid,
}) {
  const namespace = namespaceOf(testid);
  const labels = { ...PART_OF, 'lab/testid': testid };
  const services = stackServices(topology, profile);
  const labFilesName = nameWith(`${experiment}-lab-files`, testid, 253);
  const files = labFiles(root, profile, services);
  const hasNode = services.some((s) => (s.docker.command || [])[0] === 'node');
  const objects = [
    namespaceObject(namespace, labels),
    ...networkPolicies({ namespace, testid, labels, prometheus, hasNode }),
  ];
  if (services.some((s) => s.docker.volumes.some((v) => String(v).startsWith('.:'))))
    objects.push({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: labFilesName, namespace, labels },
      data: Object.fromEntries(files.map((f) => [keyOf(f), readFileSync(join(root, f), 'utf8')])),
    });
  const where = { testid, namespace, labels };
  objects.push(...stackObjects({ root, topology, services, policy, targets, labFilesName, files, ...where }));
  objects.push(...loadObjects(root, { request, experiment, services, parallelism, prometheus, ...where }));
  return { objects, testid, namespace };
}

/** Writes the objects as one multi-document YAML file per kind of concern; returns the paths. */
export function writeManifests(dir, experiment, objects) {
  mkdirSync(dir, { recursive: true });
  const scripts = objects.filter((o) => o.kind === 'TestRun').map((o) => o.spec.script.configMap?.name);
  const load = objects.filter(
    (o) => o.kind === 'TestRun' || (o.kind === 'ConfigMap' && scripts.includes(o.metadata.name)),
  );
  const stack = objects.filter((o) => !load.includes(o));
  const head = (what) =>
    `# ${what}, written by \`just render --k8s\` from docker-compose.yml and the model; do not edit.\n`;
  const out = [
    [join(dir, `${experiment}.stack.yaml`), stack, `The ${experiment} stack`],
    [join(dir, `${experiment}.testrun.yaml`), load, `The ${experiment} load (k6-operator)`],
  ];
  for (const [path, list, what] of out)
    writeFileSync(
      path,
      head(what) + list.map((o) => YAML.stringify(o, { lineWidth: 0, aliasDuplicateObjects: false })).join('---\n'),
    );
  return out.map(([p]) => p);
}
