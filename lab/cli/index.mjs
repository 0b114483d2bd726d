#!/usr/bin/env node
/*
 * The lab's command line, called by the Justfile:
 *   test <suite> [--quick[=N]] [--no-metrics] [knobs]   run a suite, print the tables, exit non-zero on failure
 *   expect <suite> [--quick[=N]] [knobs]   the model's plan as JSON, nothing started
 *     --sensitivity                        instead: the smallest policy change each case catches
 *   up <experiment> [--quick[=N]] [knobs]  start a stack and leave it up; prints `name url`
 *   down                                   stop whatever `up` started (and any orphans)
 *   metrics up|down|status                 the metrics stores, kept running between runs
 *   clean                                  delete the stores' data, results and rendered configs
 *   keep <experiment|metrics> [knobs]      (internal) own an `up` stack until SIGTERM
 *   bench json-filter [--quick] [knobs]    wrk and k6 against each filter, nginx and the backend
 *   bench cdn [--quick] [knobs]            wrk with the seed's flags per cap level, beside the model
 *   bench k6 [--quick]                     k6's own CPU per request and memory per VU (sizing)
 *   render <experiment> [knobs]            write configs to .lab/rendered/ for docker compose
 *   render --k8s <suite>/<experiment> [--quick[=N]] [--parallelism=N] [--prometheus=URL] [knobs]
 *                                          Kubernetes manifests and a k6-operator TestRun, in .lab/rendered/k8s/
 *   docs [--check]                         rewrite (or check) the README figures from the model
 *   verdict <testid> [suite/experiment ...] the limiter cases of a run judged from Prometheus alone
 *   knobs [experiment]                     list knobs with their defaults
 */
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { mkdirSync, existsSync, rmSync, openSync, readFileSync, writeFileSync, readdirSync, lstatSync } from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { parseRunArgs } from './args.mjs';
import { runSuite, labEnv, plansFor, stamp } from '../run/suite.mjs';
import { bench } from '../bench/index.mjs';
import { plan as makePlan, experiments, experimentNamed, stackTargets } from '../../thresholds/plan.js';
import { describeKnobs } from '../../thresholds/knobs.js';
import { sensitivity } from '../../thresholds/sensitivity.js';
import { loadTopology, stackServices, portsByService } from '../stack/topology.mjs';
import { startStack, stopStack, topologyView } from '../stack/start-stop.mjs';
import { StateFile, reapStale, readStates } from '../stack/procs.mjs';
import { serviceView, renderConfigs } from '../stack/render.mjs';
import { docs, formatSensitivity } from './docs.mjs';
import { METRICS_PROFILE, storesUp, storeUrls, storesForRun } from '../stores/stores.mjs';
import { checkPanels } from '../stores/panels.mjs';
import { openRun } from '../run/suite.mjs';
import { k8sManifests, writeManifests } from '../k8s/manifests.mjs';
import { verdict } from '../run/segments.mjs';
import { formatTable } from '../kinds/limiter.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const stateDir = join(root, '.lab', 'state');
const say = (m) => console.log(m);
const topology = () => loadTopology(join(root, 'docker-compose.yml'));

function policyFor(req) {
  // `up` and `render` serve a stack, not a suite: the knobs (and --quick scaling) of any plan of it.
  const exp = experiments[req.name];
  const suite = Object.keys(exp.suites)[0];
  const p = makePlan({ experiment: req.name, suite, factor: req.factor, overrides: req.overrides[req.name] });
  return { policy: p.policy, targets: stackTargets(req.name, p.knobs, p.policy) };
}

/** What `keep` serves: an experiment's stack with its knobs, or the metrics stores. */
function keptStack(words) {
  if (words[0] === METRICS_PROFILE) return { name: METRICS_PROFILE, kind: METRICS_PROFILE, policy: {}, targets: [] };
  const req = parseRunArgs(words, { target: 'experiment' });
  return { name: req.name, kind: 'up', ...policyFor(req) };
}

/**
 * Envoy ends itself when its parent exits, so a stack cannot outlive the command that started
 * it: a detached keeper (`keep`) owns the stack until a stop sends it SIGTERM.
 */
async function keepUp(name, words, stopWith) {
  await reapStale(stateDir, { log: say });
  const dir = join(root, '.lab', 'tmp', `up-${name}`);
  if (existsSync(join(stateDir, `up-${name}.json`))) throw new Error(`${name} is already up; '${stopWith}' first`);
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
  say(`# logs in ${join(dir, 'logs')}; stop with: ${stopWith}`);
  return 0;
}

/** Stops the keepers whose state matches, then reaps whatever they left; returns how many. */
async function stopKept(which, { all = false } = {}) {
  let n = 0;
  for (const { id, path, st } of readStates(stateDir)) {
    if (!which(st)) continue;
    try {
      process.kill(st.owner, 'SIGTERM');
      say(`stopping ${id}`);
      n += 1;
    } catch { /* keeper gone: reaped below */ }
    for (let i = 0; i < 150 && existsSync(path); i += 1) await new Promise((r) => setTimeout(r, 100));
  }
  return n + (await reapStale(stateDir, { all, log: say }));
}

const isSymlink = (path) => { try { return lstatSync(path).isSymbolicLink(); } catch { return false; } };
const duSize = (path) => (existsSync(path) ? spawnSync('du', ['-sh', path], { encoding: 'utf8' }).stdout.split('\t')[0] : '0');

/** `render --k8s suite/experiment ...`: the stack and its load as Kubernetes objects. */
function renderK8s(words) {
  let parallelism = 1;
  let prometheus = 'http://prometheus:9090';
  const rest = [];
  for (const w of words) {
    const m = /^--(parallelism|prometheus)=(.+)$/.exec(w);
    if (!m) { rest.push(w); continue; }
    if (m[1] === 'parallelism') {
      if (!/^[0-9]{1,3}$/.test(m[2]) || Number(m[2]) < 1) throw new Error(`--parallelism takes a whole number of runner pods 1..999, got '${m[2]}'`);
      parallelism = Number(m[2]);
    } else {
      if (!/^https?:\/\/[^\s]+$/.test(m[2])) throw new Error(`--prometheus takes the base URL of a Prometheus (http://host:9090), got '${m[2]}'`);
      prometheus = m[2];
    }
  }
  if (!rest[0] || !rest[0].includes('/')) throw new Error('render --k8s takes suite/experiment (like spike/burst): the TestRun runs that plan');
  const req = parseRunArgs(rest, { target: 'suite' });
  const experiment = req.experiments[0];
  const p = makePlan({ experiment, suite: req.name, factor: req.factor, overrides: req.overrides[experiment] });
  const testid = `${stamp()}-${req.name}-k8s`;
  const { objects } = k8sManifests({ root, env: labEnv(root), topology: topology(), request: req, experiment, policy: p.policy, targets: stackTargets(experiment, p.knobs, p.policy), parallelism, prometheus, testid });
  for (const f of writeManifests(join(root, '.lab', 'rendered', 'k8s'), experiment, objects)) say(f);
  say(`testid ${testid}: kubectl apply -f the stack, wait for its pods, then the TestRun (k6-operator)`);
  return 0;
}

const commands = {
  async test(words) {
    return runSuite(root, parseRunArgs(words), { say });
  },
  async bench(words) {
    // `bench k6` measures k6 itself (on cdn's stack): only --quick applies.
    if (words[0] === 'k6') {
      const extra = words.slice(1).filter((w) => w !== '--quick');
      if (extra.length) throw new Error(`bench k6 takes only --quick; got '${extra.join(' ')}'`);
      return bench(root, { name: 'k6', factor: words.includes('--quick') ? 5 : 1, overrides: {} }, { say });
    }
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
    return keepUp(parseRunArgs(words, { target: 'experiment' }).name, words, 'just down');
  },
  async metrics([sub, ...rest]) {
    if (rest.length || !['up', 'down', 'status'].includes(sub)) throw new Error(`usage: just metrics up|down|status; got '${[sub, ...rest].join(' ')}'`);
    if (sub === 'up') {
      if (await storesUp(topology())) throw new Error('the metrics stores are already up');
      return keepUp(METRICS_PROFILE, [METRICS_PROFILE], 'just metrics down');
    }
    if (sub === 'down') {
      const n = await stopKept((st) => st.kind === METRICS_PROFILE);
      say(n ? 'metrics stores stopped; their data stays in .lab/data/ (just clean deletes it)' : 'the metrics stores were not up');
      return 0;
    }
    const urls = storeUrls(topology());
    say(`metrics stores: ${(await storesUp(topology())) ? 'up' : 'down'}; InfluxDB ${urls.influx} (database ${urls.database}), Prometheus ${urls.prometheus}`);
    say(`data: ${join(root, '.lab', 'data')} (${duSize(join(root, '.lab', 'data'))})`);
    return 0;
  },
  async panels([testid, ...rest]) {
    if (rest.length) throw new Error(`usage: just panels [testid]; got '${[testid, ...rest].join(' ')}'`);
    const dir = join(root, 'results', testid || 'latest');
    if (!existsSync(join(dir, 'run.json'))) throw new Error(`no run ${testid || '(latest)'} with metrics under results/: run 'just test smoke' first`);
    const info = JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8'));
    if (!info.metrics) throw new Error(`run ${info.testid} ran with --no-metrics: nothing in the stores to check`);
    const t = topology();
    const check = await openRun(root, `panels-${info.testid}`, { kind: 'panels', say, latest: false });
    let stores;
    let results = [];
    try {
      stores = await storesForRun({ root, env: labEnv(root), topology: t, tmp: check.tmp, dir: check.dir, state: check.state, say, wanted: true });
      results = await checkPanels(root, stores.urls, { ...info, allExperiments: Object.keys(experiments) });
    } finally {
      await stores?.close();
      check.close();
    }
    const rows = results.map((r) => [r.board, r.panel, r.refId ?? '', r.skipped ? `skipped: ${r.skipped}` : r.error ? `error: ${r.error}` : `${r.series} series, ${r.points} points`, r.skipped ? '-' : r.ok ? 'ok' : 'FAIL']);
    say(formatTable(rows, ['dashboard', 'panel', 'query', 'returned', 'pass']));
    for (const r of results.filter((x) => x.query && !x.ok)) say(`\nFAIL ${r.board} / ${r.panel} ${r.refId}:\n  ${r.query}`);
    const failed = results.filter((r) => !r.skipped && !r.ok).length;
    writeFileSync(join(check.dir, 'panels.json'), JSON.stringify(results, null, 1));
    say(`\npanels of run ${info.testid}: ${results.filter((r) => r.ok).length} queries returned data, ${failed} returned none, ${results.filter((r) => r.skipped).length} skipped`);
    return failed ? 1 : 0;
  },
  async verdict(words) {
    // The run's plans: its results folder; or, for a run made elsewhere (k6-operator), the
    // suite/experiment, --quick and knobs it ran with.
    const [testid, ...spec] = words;
    if (!testid || testid.startsWith('-')) throw new Error('usage: just verdict <testid> [suite/experiment [--quick[=N]] [knobs]] (the plan, for a run made elsewhere)');
    let plans;
    const dir = join(root, 'results', testid);
    if (spec.length) {
      plans = plansFor(parseRunArgs(spec, { target: 'suite' }));
    } else {
      if (!existsSync(join(dir, 'run.json'))) throw new Error(`no results/${testid}: name the plan it ran (suite/experiment, --quick, knobs) after the testid`);
      const info = JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8'));
      plans = info.experiments.map((e) => JSON.parse(readFileSync(join(dir, `${info.suite}.${e}.plan.json`), 'utf8')));
    }
    const check = await openRun(root, `verdict-${testid}`, { kind: 'verdict', say, latest: false });
    let stores;
    let judged;
    try {
      stores = await storesForRun({ root, env: labEnv(root), topology: topology(), tmp: check.tmp, dir: check.dir, state: check.state, say, wanted: true });
      judged = await verdict(stores.urls.prometheus, testid, plans);
    } finally {
      await stores?.close();
      check.close();
    }
    writeFileSync(join(check.dir, 'outcomes.json'), JSON.stringify(judged.outcomes, null, 1));
    say(`\nverdict of ${testid}, from Prometheus:\n${formatTable(judged.rows)}`);
    const passed = judged.outcomes.filter((o) => o.pass).length;
    say(`cases: ${passed} passed, ${judged.outcomes.length - passed} failed`);
    return passed === judged.outcomes.length && passed > 0 ? 0 : 1;
  },
  async clean(words) {
    if (words.length) throw new Error(`just clean takes no arguments; got '${words.join(' ')}'`);
    if (await storesUp(topology())) throw new Error("the metrics stores are up and use .lab/data: 'just metrics down' first");
    // results/ itself stays (with its README): k6 scripts run by hand write their summaries there.
    const results = join(root, 'results');
    const runs = existsSync(results) ? readdirSync(results).filter((f) => f !== 'README.md').map((f) => join(results, f)) : [];
    for (const d of [join(root, '.lab', 'data'), ...runs, join(root, '.lab', 'rendered')]) {
      if (!existsSync(d) && !isSymlink(d)) continue;
      say(`deleting ${d} (${duSize(d)})`);
      rmSync(d, { recursive: true, force: true });
    }
    say('kept: the toolchain (.lab/bin, .lab/venv) and node_modules');
    return 0;
  },
  async keep(words) {
    const { name, kind, policy, targets } = keptStack(words);
    const dir = join(root, '.lab', 'tmp', `up-${name}`);
    const state = new StateFile(stateDir, `up-${name}`, { kind, tmp: dir });
    let stack;
    try {
      stack = await startStack({ root, env: labEnv(root), topology: topology(), experiment: name, policy, targets, tmpDir: dir, logDir: join(dir, 'logs'), state });
    } catch (e) {
      state.remove();
      throw e;
    }
    const lines = [
      ...targets.map((t) => `${name}/${t.id} ${stack.baseUrls[t.service]}${t.path}`),
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
    // The metrics stores are left running: `just metrics down` stops them.
    const n = await stopKept((st) => st.kind === 'up');
    say(n ? 'stopped' : 'nothing was running');
    return 0;
  },
  async render(words) {
    if (words[0] === '--k8s') return renderK8s(words.slice(1));
    const req = parseRunArgs(words, { target: 'experiment' });
    const { policy, targets } = policyFor(req);
    const t = topology();
    const ports = portsByService(t);
    const services = [...stackServices(t, req.name), ...stackServices(t, METRICS_PROFILE)];
    for (const s of services) {
      if (!Object.keys(s.configs).length) continue;
      const dir = join(root, '.lab', 'rendered', s.name);
      mkdirSync(dir, { recursive: true });
      const view = serviceView({ policy, targets, ports, service: s, prefix: '/tmp', extra: { ...topologyView(t), data: '/lab-data' } });
      for (const f of Object.values(renderConfigs(root, s, view, dir))) say(f);
    }
    // Caps are compose's cpus and mem_limit, set from the environment (docker-compose.yml).
    const levels = policy.levels?.map((l) => `  ${l.id}: LAB_CPUS=${l.cpu / 100} LAB_MEM=${l.mem ? `${l.mem}m` : 0} docker compose --profile ${req.name} up`);
    if (levels) say(`caps per level:\n${levels.join('\n')}`);
    return 0;
  },
  async knobs([name]) {
    const list = name ? [experimentNamed(name)] : Object.values(experiments);
    for (const e of list) {
      say(`${e.name} (seed ${e.seed}):`);
      for (const k of describeKnobs(e)) say(`  ${e.name}.${k.name}=${k.default}    ${k.doc}; ${k.kind}${k.min !== undefined ? `, at least ${k.min} (${k.minWhy})` : ''}${k.max !== undefined ? `, at most ${k.max} (${k.why})` : ''}`);
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
