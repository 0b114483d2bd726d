/*
 * `render <experiment> [knobs]`: an experiment's configs in .lab/rendered/ for
 * `docker compose --profile <experiment> up`. `render --k8s <suite>/<experiment> [--quick[=N]]
 * [--parallelism N] [--prometheus URL] [knobs]`: the stack and its load as Kubernetes manifests
 * and a k6-operator TestRun, in .lab/rendered/k8s/.
 */
import { dirname, join, relative } from 'node:path';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { parseRunArgs, flagValue, policyFlags } from './args.mjs';
import { policyFor } from './context.mjs';
import { plan as makePlan, stackTargets, stackOf } from '../../thresholds/plan.js';
import { stamp } from '../run/suite.mjs';
import { stackServices, portsByService } from '../stack/topology.mjs';
import { topologyView } from '../stack/start-stop.mjs';
import { serviceView, renderConfigs, renderArgs } from '../stack/render.mjs';
import { usePolicy } from '../policy/use.mjs';
import { policyCompose, nodeImageOf, imageOf } from '../policy/compose.mjs';
import { experiments } from '../../thresholds/experiments/index.js';
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

/** The compose file of a team's policy's stack, beside its rendered configs; its path. */
function writePolicyCompose(root, name, rendered) {
  const nodeImage = nodeImageOf(readFileSync(join(root, 'docker-compose.yml'), 'utf8'));
  const user = `${process.getuid()}:${process.getgid()}`;
  const text = policyCompose(name, rendered, { root, nodeImage, user });
  const file = join(root, '.lab', 'rendered', name, 'docker-compose.yml');
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  return file;
}

export default async function render(words, ctx) {
  if (words[0] === '--k8s') return renderK8s(words.slice(1), ctx);
  const { root, say, topology } = ctx;
  // A team's policy: its file (--policy=FILE), or an experiment of the list made by `./labw new`.
  const flags = policyFlags(words);
  const named = flags.policy ? usePolicy(flags, root).experiment.name : null;
  const req = parseRunArgs(named ? [named, ...flags.rest] : words, { target: 'experiment' });
  const { policy, targets } = policyFor(req);
  const t = topology();
  const own = experiments[req.name].services ?? null;
  if (own) {
    Object.assign(t.services, own);
    // Refused before anything is written where its proxy has no image to run in.
    for (const s of Object.values(own)) imageOf(s, null);
  }
  const ports = portsByService(t);
  const services = [...stackServices(t, stackOf(req.name)), ...stackServices(t, METRICS_PROFILE)];
  const rendered = [];
  for (const s of services) {
    const dir = join(root, '.lab', 'rendered', s.name);
    // A team's proxy writes beside its config (the lab's certificate, files it serves, its logs)
    // and names them by path: its folder is where it runs, in a container as natively.
    const mine = Boolean(own?.[s.name]);
    const view = serviceView({
      policy,
      targets,
      ports,
      service: s,
      prefix: mine ? dir : '/tmp',
      ...(mine ? { root } : {}),
      extra: { ...topologyView(t), data: '/lab-data' },
    });
    const hasConfigs = Object.keys(s.configs).length > 0;
    if (hasConfigs) mkdirSync(dir, { recursive: true });
    const configs = hasConfigs ? renderConfigs(root, s, view, dir) : {};
    for (const f of Object.values(configs)) say(f);
    if (mine)
      rendered.push({
        service: s,
        argv: renderArgs(s.command, { ...view, config: configs }),
        dir: hasConfigs ? dir : null,
      });
  }
  if (own) {
    const file = writePolicyCompose(root, req.name, rendered);
    say(`${file}: docker compose -f ${relative(root, file)} up (host networking, the ports above)`);
  }
  // Caps are compose's cpus and mem_limit, set from the environment (docker-compose.yml).
  const levels = policy.levels?.map(
    (l) =>
      `  ${l.id}: LAB_CPUS=${l.cpu / 100} LAB_MEM=${l.mem ? `${l.mem}m` : 0} docker compose --profile ${req.name} up`,
  );
  if (levels) say(`caps per level:\n${levels.join('\n')}`);
  return 0;
}
