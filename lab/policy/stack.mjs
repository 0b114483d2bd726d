/*
 * The stack a team's policy runs in, natively: the lab's backend (servers/node/hello.js) and
 * the team's proxy with its file as the lab renders it (lab/policy/render-<proxy>.mjs), as
 * topology services like those docker-compose.yml declares (lab/stack/topology.mjs), kept in
 * memory: the policy is known only to the command that read its file. The rendered config and
 * the original are both kept in the run's config folder.
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { renderNginx } from './nginx/render.mjs';
import { makeFiles } from './nginx/probe.mjs';
import { renderEnvoy } from './render-envoy.mjs';
import { POLICY_PORTS, placePorts } from './ports.mjs';
import { policyPlaces } from './experiment.mjs';

export { POLICY_PORTS };

// Per proxy: how it runs, is checked and is ready, and where Prometheus reads its counters.
const proxies = {
  nginx: {
    file: 'nginx.conf',
    render: (policy, view, tools, backend, placed) => {
      // The files its locations serve from disk (nginx named them: lab/policy/nginx/explore.mjs).
      makeFiles(view.prefix, policy.explored.files);
      return renderNginx(policy, {
        ports: placePorts(policyPlaces(policy)),
        metricsPort: view.self.own,
        backend,
        prefix: view.prefix,
        root: view.root,
        python: tools.python,
        version: policy.version,
        placed,
      }).text;
    },
    command: ['nginx', '-p', '{{prefix}}/', '-c', '{{config.conf}}', '-e', 'stderr', '-g', 'daemon off;'],
    validate: ['nginx', '-t', '-q', '-p', '{{prefix}}/', '-c', '{{config.conf}}', '-e', 'stderr'],
    ready: 'http://127.0.0.1:{{self.own}}/healthz',
    metrics: { port: 'own', path: '/metrics' },
  },
  envoy: {
    file: 'envoy.yaml',
    render: (policy, view, tools, backend, placed) =>
      renderEnvoy(policy, { port: view.self.http, adminPort: view.self.own, backend, prefix: view.prefix, placed }),
    // Envoy as the lab installs it (lab/install.sh, on the runner's PATH), flushing its access log
    // every 100 ms: the sightings.
    command: [
      'envoy',
      '-c',
      '{{config.conf}}',
      '--concurrency',
      '1',
      '--disable-hot-restart',
      '--log-level',
      'warn',
      '--file-flush-interval-msec',
      '100',
    ],
    validate: ['envoy', '--mode', 'validate', '-c', '{{config.conf}}', '--log-level', 'error'],
    ready: 'http://127.0.0.1:{{self.own}}/ready',
    metrics: { port: 'own', path: '/stats/prometheus' },
    // Its count per case: the lab's access log (render-envoy.mjs), its stats being per bucket.
    countsLog: 'seen.log',
  },
};

const service = (name, profile, fields) => ({
  name,
  profiles: [profile],
  dependsOn: [],
  validate: null,
  prepare: null,
  init: [],
  configs: {},
  data: false,
  caps: null,
  metrics: null,
  docker: {},
  ...fields,
});

/**
 * The services of `experiment` (a policy's, lab/policy/experiment.mjs): {<name>-backend,
 * <name>-<proxy>}. The proxy renders `policy`'s file with the stack's knob values (the view's:
 * --quick's scaling, a what-if, a --stack-knob) and keeps the original beside it.
 */
export function policyServices(experiment, policy, tools) {
  const { name } = experiment;
  const proxy = proxies[policy.proxy];
  const backendName = `${name}-backend`;
  const backend = service(backendName, name, {
    ports: { http: POLICY_PORTS.backend },
    command: ['node', 'servers/node/hello.js', '--port', '{{self.http}}', '--name', '{{service}}'],
    ready: 'http://127.0.0.1:{{self.http}}/',
    metrics: { port: 'http', path: '/metrics' },
  });
  // A port per place the file listens on: the first is the service's own http port.
  const places = Object.values(placePorts(policyPlaces(policy)));
  const first = policy.proxy === 'nginx' ? policy.explored.places[0] : null;
  const front = service(`${name}-${policy.proxy}`, name, {
    dependsOn: [backendName],
    ports: {
      http: places[0],
      own: POLICY_PORTS.own,
      ...Object.fromEntries(places.slice(1).map((p, i) => [`place${i + 1}`, p])),
    },
    scheme: first?.ssl ? 'https' : 'http',
    command: proxy.command,
    validate: proxy.validate,
    ready: proxy.ready,
    metrics: proxy.metrics,
    countsLog: proxy.countsLog ?? null,
    configs: {
      conf: {
        file: proxy.file,
        render: (view) =>
          proxy.render(policy, view, tools, `127.0.0.1:${view.svc[backendName].http}`, experiment.placed(view)),
      },
      original: { file: `original-${basename(policy.file)}`, render: () => readFileSync(policy.file, 'utf8') },
    },
  });
  return { [backend.name]: backend, [front.name]: front };
}
