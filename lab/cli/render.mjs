/*
 * `render <experiment> [knobs]`: an experiment's configs in .lab/rendered/ for
 * `docker compose --profile <experiment> up`. `render --k8s <suite>/<experiment> [--quick[=N]]
 * [--parallelism N] [--prometheus URL] [knobs]`: the stack and its load as Kubernetes manifests
 * and a k6-operator TestRun, in .lab/rendered/k8s/.
 */
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import { parseRunArgs, flagValue } from './args.mjs';
import { policyFor } from './context.mjs';
import { plan as makePlan, stackTargets, stackOf } from '../../thresholds/plan.js';
import { stamp } from '../run/suite.mjs';
import { stackServices, portsByService } from '../stack/topology.mjs';
import { topologyView } from '../stack/start-stop.mjs';
import { serviceView, renderConfigs } from '../stack/render.mjs';
import { METRICS_PROFILE } from '../stores/stores.mjs';
import { k8sManifests, writeManifests } from '../k8s/manifests.mjs';

/** render --k8s's own flags, each as --flag=value or --flag value; the other words go to parseRunArgs. */
export function k8sFlags(words) {
  let parallelism = 1;
  let prometheus = 'http://prometheus:9090';
  const rest = [];
  for (let i = 0; i < words.length; i += 1) {
    const par = flagValue(words, i, '--parallelism', 'N');
    const prom = par ? null : flagValue(words, i, '--prometheus', 'URL');
    if (!par && !prom) {
      rest.push(words[i]);
      continue;
    }
    const [value, took] = par || prom;
    i += took - 1;
    if (par) {
      if (!/^[0-9]{1,3}$/.test(value) || Number(value) < 1)
        throw new Error(`--parallelism takes a whole number of runner pods 1..999, got '${value}'`);
      parallelism = Number(value);
    } else {
      if (!/^https?:\/\/[^\s]+$/.test(value))
        throw new Error(`--prometheus takes the base URL of a Prometheus (http://host:9090), got '${value}'`);
      prometheus = value;
    }
  }
  return { parallelism, prometheus, rest };
}

/** `render --k8s suite/experiment ...`: the stack and its load as Kubernetes objects. */
function renderK8s(words, { root, say, topology }) {
  const { parallelism, prometheus, rest } = k8sFlags(words);
  if (!rest[0] || !rest[0].includes('/'))
    throw new Error('render --k8s takes suite/experiment (like spike/burst): the TestRun runs that plan');
  const req = parseRunArgs(rest, { target: 'suite' });
  const experiment = req.experiments[0];
  const p = makePlan({ experiment, suite: req.name, factor: req.factor, overrides: req.overrides[experiment] });
  const testid = `${stamp()}-${req.name}-k8s`;
  const { objects } = k8sManifests({
    root,
    topology: topology(),
    request: req,
    experiment,
    profile: stackOf(experiment),
    policy: p.policy,
    targets: stackTargets(experiment, p.knobs, p.policy),
    parallelism,
    prometheus,
    testid,
  });
  for (const f of writeManifests(join(root, '.lab', 'rendered', 'k8s'), experiment, objects)) say(f);
  say(`testid ${testid}: kubectl apply -f the stack, wait for its pods, then the TestRun (k6-operator)`);
  return 0;
}

export default async function render(words, ctx) {
  if (words[0] === '--k8s') return renderK8s(words.slice(1), ctx);
  const { root, say, topology } = ctx;
  const req = parseRunArgs(words, { target: 'experiment' });
  const { policy, targets } = policyFor(req);
  const t = topology();
  const ports = portsByService(t);
  const services = [...stackServices(t, stackOf(req.name)), ...stackServices(t, METRICS_PROFILE)];
  for (const s of services) {
    if (!Object.keys(s.configs).length) continue;
    const dir = join(root, '.lab', 'rendered', s.name);
    mkdirSync(dir, { recursive: true });
    const view = serviceView({
      policy,
      targets,
      ports,
      service: s,
      prefix: '/tmp',
      extra: { ...topologyView(t), data: '/lab-data' },
    });
    for (const f of Object.values(renderConfigs(root, s, view, dir))) say(f);
  }
  // Caps are compose's cpus and mem_limit, set from the environment (docker-compose.yml).
  const levels = policy.levels?.map(
    (l) =>
      `  ${l.id}: LAB_CPUS=${l.cpu / 100} LAB_MEM=${l.mem ? `${l.mem}m` : 0} docker compose --profile ${req.name} up`,
  );
  if (levels) say(`caps per level:\n${levels.join('\n')}`);
  return 0;
}
