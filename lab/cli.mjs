#!/usr/bin/env node
/*
 * The lab's command line, called by the Justfile:
 *   test <suite> [--quick[=N]] [knobs]     run a suite, print the table, exit non-zero on failure
 *   expect <suite> [--quick[=N]] [knobs]   the model's plan as JSON, nothing started
 *     --sensitivity                        instead: the smallest policy change each case catches
 *   docs [--check]                         rewrite (or check) the README figures from the model
 *   up <experiment> [--quick[=N]] [knobs]  start a stack and leave it up; prints `name url`
 *   keep <experiment> [knobs]              (internal) own an `up` stack until SIGTERM
 *   down                                   stop whatever `up` started (and any orphans)
 *   bench json-filter [--quick] [knobs]    wrk and k6 against each filter, nginx and the backend
 *   render <experiment> [knobs]            write configs to .lab/rendered/ for docker compose
 *   knobs [experiment]                     list knobs with their defaults
 */
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { mkdirSync, existsSync, rmSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { parseRunArgs } from './args.mjs';
import { runSuite, labEnv, plansFor } from './run.mjs';
import { bench } from './bench.mjs';
import { plan as makePlan, experiments, experimentNamed, stackTargets } from '../thresholds/plan.js';
import { describeKnobs } from '../thresholds/knobs.js';
import { loadTopology, stackServices, portsByService } from './topology.mjs';
import { startStack, stopStack } from './stack.mjs';
import { StateFile, reapStale, readStates } from './procs.mjs';
import { serviceView, renderConfigs } from './render.mjs';
import { sensitivity } from '../thresholds/sensitivity.js';
import { docs, formatSensitivity } from './docs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stateDir = join(root, '.lab', 'state');
const say = (m) => console.log(m);

function policyFor(req) {
  // `up` and `render` serve a stack, not a suite: the knobs (and --quick scaling) of any plan of it.
  const exp = experiments[req.name];
  const suite = Object.keys(exp.suites)[0];
  const p = makePlan({ experiment: req.name, suite, factor: req.factor, overrides: req.overrides[req.name] });
  return { policy: p.policy, targets: stackTargets(req.name, p.knobs, p.policy) };
}

const commands = {
  async test(words) {
    return runSuite(root, parseRunArgs(words), { say });
  },
  async bench(words) {
    return bench(root, parseRunArgs(words, { target: 'experiment' }), { say });
  },
  async expect(words) {
    const sens = words.filter((w) => w === '--sensitivity').length;
    if (sens > 1) throw new Error('--sensitivity given twice');
    const req = parseRunArgs(words.filter((w) => w !== '--sensitivity'));
    if (!sens) {
      console.log(JSON.stringify(plansFor(req), null, 1));
      return 0;
    }
    for (const experiment of req.experiments) {
      const s = sensitivity({ experiment, suite: req.name, factor: req.factor, overrides: req.overrides[experiment] });
      say(`${formatSensitivity(s, { perCase: true })}\n`);
    }
    return 0;
  },
  async docs(words) {
    const check = words.includes('--check');
    const stale = docs(root, { check });
    if (check && stale.length) {
      console.error(`stale generated figures in: ${stale.join(', ')}; run 'just docs'`);
      return 1;
    }
    say(stale.length ? `rewrote ${stale.join(', ')}` : 'generated figures are up to date');
    return 0;
  },
  async up(words) {
    // Envoy ends itself when its parent exits, so a stack cannot outlive the command that
    // started it: a detached keeper (`keep`) owns the stack until `down` sends it SIGTERM.
    const req = parseRunArgs(words, { target: 'experiment' });
    await reapStale(stateDir, { log: say });
    const dir = join(root, '.lab', 'tmp', `up-${req.name}`);
    if (existsSync(join(stateDir, `up-${req.name}.json`))) throw new Error(`${req.name} is already up; 'just down' first`);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const log = join(dir, 'keeper.log');
    const fd = openSync(log, 'a');
    const keeper = spawn(process.execPath, [fileURLToPath(import.meta.url), 'keep', ...words], { cwd: root, detached: true, stdio: ['ignore', fd, fd] });
    const exited = new Promise((resolve) => keeper.on('exit', resolve));
    const endpoints = join(dir, 'endpoints.txt');
    for (;;) {
      if (existsSync(endpoints)) break;
      if (keeper.exitCode !== null) {
        await exited;
        throw new Error(readFileSync(log, 'utf8').trim());
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    keeper.unref();
    process.stdout.write(readFileSync(endpoints, 'utf8'));
    say(`# logs in ${join(dir, 'logs')}; stop with: just down`);
    return 0;
  },
  async keep(words) {
    const req = parseRunArgs(words, { target: 'experiment' });
    const { policy, targets } = policyFor(req);
    const dir = join(root, '.lab', 'tmp', `up-${req.name}`);
    const state = new StateFile(stateDir, `up-${req.name}`, { kind: 'up', tmp: dir });
    const topology = loadTopology(join(root, 'docker-compose.yml'));
    let stack;
    try {
      stack = await startStack({ root, env: labEnv(root), topology, experiment: req.name, policy, targets, tmpDir: dir, logDir: join(dir, 'logs'), state });
    } catch (e) {
      state.remove();
      throw e;
    }
    const lines = [
      ...targets.map((t) => `${req.name}/${t.id} ${stack.baseUrls[t.service]}${t.path}`),
      ...Object.entries(stack.baseUrls).map(([svc, url]) => `${svc} ${url}`),
    ];
    writeFileSync(join(dir, 'endpoints.txt'), `${lines.join('\n')}\n`);
    stack.died.then((p) => say(`${p.name} exited (code ${p.exited.code}, signal ${p.exited.signal}); see ${p.logFile}`));
    await new Promise((resolve) => ['SIGTERM', 'SIGINT', 'SIGHUP'].forEach((sig) => process.once(sig, resolve)));
    await stopStack(stack);
    state.remove();
    rmSync(dir, { recursive: true, force: true });
    process.exit(0); // the signal listeners would keep it alive
  },
  async down() {
    let n = 0;
    for (const { id, path, st } of readStates(stateDir)) {
      if (st.kind !== 'up') continue;
      try {
        process.kill(st.owner, 'SIGTERM');
        say(`stopping ${id}`);
        n += 1;
      } catch { /* keeper gone: reaped below */ }
      for (let i = 0; i < 150 && existsSync(path); i += 1) await new Promise((r) => setTimeout(r, 100));
    }
    n += await reapStale(stateDir, { all: true, log: say });
    say(n ? 'stopped' : 'nothing was running');
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
