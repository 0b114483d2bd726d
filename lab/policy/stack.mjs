/*
 * The stack a team's policy runs in, natively: the lab's backend (servers/node/hello.js) and
 * the team's proxy with its file as the lab renders it (its service: lab/policy/proxies/), as
 * topology services like those docker-compose.yml declares (lab/stack/topology.mjs), kept in
 * memory: the policy is known only to the command that read its file. The rendered config and
 * the original are both kept in the run's config folder.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { renderConfigs, renderArgs, serviceView } from '../stack/render.mjs';
import { resolveKnobs } from '../../thresholds/knobs.js';
import { POLICY_PORTS, placePorts } from './ports.mjs';
import { proxyOf } from './proxies/index.mjs';

export { POLICY_PORTS };

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
  const proxy = proxyOf(policy).service;
  const backendName = `${name}-backend`;
  const backend = service(backendName, name, {
    ports: { http: POLICY_PORTS.backend },
    command: ['node', 'servers/node/hello.js', '--port', '{{self.http}}', '--name', '{{service}}'],
    ready: 'http://127.0.0.1:{{self.http}}/',
    metrics: { port: 'http', path: '/metrics' },
  });
  // A port per place the file listens on: the first is the service's own http port.
  const places = Object.values(placePorts(proxyOf(policy).places(policy)));
  const front = service(`${name}-${policy.proxy}`, name, {
    dependsOn: [backendName],
    ports: {
      http: places[0],
      own: POLICY_PORTS.own,
      ...Object.fromEntries(places.slice(1).map((p, i) => [`place${i + 1}`, p])),
    },
    scheme: proxyOf(policy).scheme(policy),
    // Who refuses a config the lab renders, in words (its command may be a shell's).
    proxyTitle: proxyOf(policy).title,
    command: proxy.command,
    validate: proxy.validate,
    ready: proxy.ready,
    metrics: proxy.metrics,
    countsLog: proxy.countsLog,
    sightings: policy.proxy,
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

/**
 * The proxy's config rendered with the file's own numbers and checked by the proxy itself (nginx
 * -t, Envoy's validate mode), and for what could leave the machine (lab/policy/outbound.mjs),
 * before anything starts: a config the run would be refused is refused here, naming why.
 */
export function preflight(experiment, root) {
  const front = Object.values(experiment.services).find((s) => s.configs.conf);
  // A proxy with no check of its own would say what it refuses only when it starts.
  if (!front.validate) return;
  const ports = Object.fromEntries(Object.values(experiment.services).map((s) => [s.name, s.ports]));
  const dir = mkdtempSync(join(tmpdir(), 'lab-policy-preflight-'));
  try {
    const base = serviceView({
      policy: resolveKnobs(experiment),
      targets: [],
      ports,
      service: front,
      prefix: dir,
      root,
      native: true,
    });
    const view = { ...base, config: renderConfigs(root, front, base, dir) };
    const argv = renderArgs(front.validate, view);
    // The lab's own tools first, as the runner finds them (Envoy in its venv).
    const PATH = [join(root, '.lab', 'venv', 'bin'), join(root, '.lab', 'bin'), process.env.PATH].join(':');
    const r = spawnSync(argv[0], argv.slice(1), {
      cwd: root,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, PATH },
    });
    if (r.error) throw new Error(`${front.name}: cannot run '${argv[0]}' to check its config: ${r.error.message}`);
    if (r.status !== 0)
      throw new Error(
        `${experiment.policyFile}: as the lab runs it, ${front.proxyTitle ?? front.command[0]} refuses it:\n${(r.stderr + r.stdout).trim()}`,
      );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
