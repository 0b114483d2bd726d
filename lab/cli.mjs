#!/usr/bin/env node
/*
 * The lab's command line, called by the Justfile:
 *   test <suite> [--quick[=N]] [knobs]     run a suite, print the table, exit non-zero on failure
 *   expect <suite> [--quick[=N]] [knobs]   the model's plan as JSON, nothing started
 *   up <experiment> [--quick[=N]] [knobs]  start a stack and leave it up; prints `name url`
 *   down                                   stop whatever `up` started (and any orphans)
 *   render <experiment> [knobs]            write configs to .lab/rendered/ for docker compose
 *   knobs [experiment]                     list knobs with their defaults
 */
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { mkdirSync } from 'node:fs';
import { parseRunArgs } from './args.mjs';
import { runSuite, labEnv } from './run.mjs';
import { plan as makePlan, experiments, experimentNamed } from '../thresholds/plan.js';
import { describeKnobs } from '../thresholds/knobs.js';
import { loadTopology, stackServices, portsByService } from './topology.mjs';
import { startStack } from './stack.mjs';
import { StateFile, reapStale } from './procs.mjs';
import { serviceView, renderConfigs } from './render.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stateDir = join(root, '.lab', 'state');
const say = (m) => console.log(m);

const plansFor = (req) =>
  req.experiments.map((experiment) => makePlan({ experiment, suite: req.name, factor: req.factor, overrides: req.overrides[experiment] }));

function policyFor(req) {
  // `up` and `render` serve a stack, not a suite: the knobs (and --quick scaling) of any plan of it.
  const exp = experiments[req.name];
  const suite = Object.keys(exp.suites)[0];
  const p = makePlan({ experiment: req.name, suite, factor: req.factor, overrides: req.overrides[req.name] });
  return { policy: p.policy, targets: exp.targets(p.policy) };
}

const commands = {
  async test(words) {
    return runSuite(root, parseRunArgs(words), { say });
  },
  async expect(words) {
    console.log(JSON.stringify(plansFor(parseRunArgs(words)), null, 1));
    return 0;
  },
  async up(words) {
    const req = parseRunArgs(words, { target: 'experiment' });
    const { policy, targets } = policyFor(req);
    await reapStale(stateDir, { log: say });
    const id = `up-${req.name}`;
    const tmp = join(root, '.lab', 'tmp', id);
    const state = new StateFile(stateDir, id, { kind: 'up', tmp, owner: 0 });
    const topology = loadTopology(join(root, 'docker-compose.yml'));
    let stack;
    try {
      stack = await startStack({ root, env: labEnv(root), topology, experiment: req.name, policy, targets, tmpDir: tmp, logDir: join(tmp, 'logs'), state });
    } catch (e) {
      state.remove();
      throw e;
    }
    for (const p of stack.procs) p.child.unref();
    for (const t of targets) say(`${req.name}/${t.id} ${stack.baseUrls[t.service]}${t.path}`);
    for (const [s, url] of Object.entries(stack.baseUrls)) say(`${s} ${url}`);
    say(`# logs in ${join(tmp, 'logs')}; stop with: just down`);
    return 0;
  },
  async down() {
    const n = await reapStale(stateDir, { all: true, log: say });
    say(n ? `stopped ${n} process group(s)` : 'nothing was running');
    return 0;
  },
  async render(words) {
    const req = parseRunArgs(words, { target: 'experiment' });
    const { policy, targets } = policyFor(req);
    const topology = loadTopology(join(root, 'docker-compose.yml'));
    const ports = portsByService(topology);
    for (const s of stackServices(topology, req.name)) {
      if (!Object.keys(s.configs).length) continue;
      const dir = join(root, '.lab', 'rendered', s.name);
      mkdirSync(dir, { recursive: true });
      const out = renderConfigs(root, s, serviceView({ policy, targets, ports, service: s, prefix: '/tmp' }), dir);
      for (const f of Object.values(out)) say(f);
    }
    return 0;
  },
  async knobs([name]) {
    const list = name ? [experimentNamed(name)] : Object.values(experiments);
    for (const e of list) {
      say(`${e.name} (seed ${e.seed}):`);
      for (const k of describeKnobs(e)) say(`  ${e.name}.${k.name}=${k.default}    ${k.doc}; ${k.kind}`);
    }
    return 0;
  },
};

const [cmd, ...words] = process.argv.slice(2);
if (!commands[cmd]) {
  console.error(`usage: lab <${Object.keys(commands).join('|')}> ...; unknown command '${cmd ?? ''}'`);
  process.exit(2);
}
try {
  process.exitCode = await commands[cmd](words);
} catch (e) {
  console.error(`error: ${e.message}`);
  process.exitCode = 2;
}
