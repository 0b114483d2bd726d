/*
 * `just test <suite>`: for each experiment of the suite, bring its stack up, let k6 run the
 * plan, take the stack down, and judge. Everything a run makes goes to results/<run-id>/;
 * scratch space (nginx prefixes) lives in .lab/tmp/<run-id>/ and is gone when the run ends.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync, readFileSync, rmSync, symlinkSync, existsSync, openSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { plan as makePlan, stackTargets } from '../../thresholds/plan.js';
import { loadTopology } from '../stack/topology.mjs';
import { startStack, stopStack } from '../stack/start-stop.mjs';
import { StateFile, reapStale, logTail, requireTools } from '../stack/procs.mjs';
import { limiterOutcomes, formatTable } from '../kinds/limiter.mjs';
import { capacityOutcomes } from '../kinds/capacity.mjs';
import { closedOutcomes } from '../kinds/closed-loop.mjs';
import { cappedOutcomes, costsFrom } from '../kinds/capped.mjs';
import { resourceRows } from '../stack/resources.mjs';
import { parseCaps } from '../stack/cgroups.mjs';
import { withCosts } from '../../thresholds/kinds/capped.js';
import { sampleCpu } from '../stack/cpu.mjs';
import { storesForRun, k6Outputs, streamsFor } from '../stores/stores.mjs';
import { proxyCounts, k6Counts, storeCounts, countsTable } from '../judge/nothing-lost.mjs';
import { segmentArgs, mergeSummaries } from './segments.mjs';

export function labEnv(root) {
  const env = { ...process.env, K6_NO_USAGE_REPORT: 'true' };
  env.PATH = [join(root, '.lab', 'bin'), '/usr/sbin', '/sbin', env.PATH].join(':');
  return env;
}

export const stamp = () => new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);

/** The plans of a request (a suite, or one experiment of it), as `expect` prints and `test` runs. */
export const plansFor = (request) =>
  request.experiments.map((experiment) => makePlan({ experiment, suite: request.name, factor: request.factor, overrides: request.overrides[experiment], segments: request.segments || 1 }));

/**
 * A run's folders and state file, after reaping what dead runs left: results/<run-id>/ (kept,
 * and results/latest points at it) and .lab/tmp/<run-id>/ (removed by close(), with the state).
 */
export async function openRun(root, name, { kind, say, latest = true }) {
  const stateDir = join(root, '.lab', 'state');
  await reapStale(stateDir, { log: say });
  const id = `${stamp()}-${name}`;
  const dir = join(root, 'results', id);
  const tmp = join(root, '.lab', 'tmp', id);
  mkdirSync(dir, { recursive: true });
  mkdirSync(tmp, { recursive: true });
  const state = new StateFile(stateDir, id, { kind, tmp });
  if (latest) {
    rmSync(join(root, 'results', 'latest'), { force: true });
    symlinkSync(id, join(root, 'results', 'latest'));
  }
  return {
    id, dir, tmp, state,
    close() {
      rmSync(tmp, { recursive: true, force: true });
      state.remove();
    },
  };
}

export async function runSuite(root, request, { say = console.log } = {}) {
  const plans = plansFor(request);
  const topology = loadTopology(join(root, 'docker-compose.yml'));
  const env = labEnv(root);
  requireTools(['k6'], env);
  const run = await openRun(root, `${request.name}${request.factor > 1 ? `-quick${request.factor}` : ''}`, { kind: 'test', say });
  const { dir, tmp, state } = run;

  let interrupted = null;
  const running = new Set(); // the k6 processes of the plans under way
  const onSignal = (sig) => {
    if (interrupted) return;
    interrupted = sig;
    say(`\n${sig}: stopping k6 and the stacks...`);
    for (const k6 of running) {
      if (k6.exitCode !== null) continue;
      k6.kill('SIGINT');
      setTimeout(() => k6.exitCode === null && k6.kill('SIGKILL'), 15_000).unref();
    }
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  let stores = null;
  const startedMs = Date.now();
  const judged = [];
  const problems = [];
  try {
    stores = await storesForRun({ root, env, topology, tmp, dir, state, say, wanted: request.metrics !== false });
    // One experiment after another: run together, they took CPU from each other's bursts (a
    // 800 r/s Envoy burst beside burst's 1700 VUs dropped 6 iterations for want of a free VU).
    // Within an experiment, the cases that can share the machine already run together.
    const ctx = { root, env, topology, run, stores, say, running, isInterrupted: () => interrupted, segments: request.segments || 1 };
    for (const plan of plans) judged.push(await (plan.kind === 'capped' ? runCapped(plan, ctx) : runPlan(plan, ctx)));
  } catch (e) {
    problems.push(e.message);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await stores?.close();
    run.close();
  }
  const outcomes = judged.flatMap((j) => j.outcomes);
  // One table per shape of row (a closed-loop plan also shows the model's own range).
  const tables = new Map(); // head (or the default one) -> rows
  for (const j of judged) {
    for (const t of [{ head: j.head, rows: j.rows }, ...(j.more || [])]) if (t.rows.length) tables.set(t.head, [...(tables.get(t.head) || []), ...t.rows]);
  }
  const counts = judged.flatMap((j) => j.counts);
  problems.push(...judged.flatMap((j) => j.problems));

  writeFileSync(join(dir, 'outcomes.json'), JSON.stringify(outcomes, null, 1));
  // What `just panels` needs to find this run in the stores.
  const runInfo = {
    testid: run.id, suite: request.name, experiments: request.experiments, fromMs: startedMs, toMs: Date.now(), metrics: Boolean(stores),
    influx: Boolean(stores) && plans.some((p) => streamsFor(p).includes('influx')),
  };
  writeFileSync(join(dir, 'run.json'), JSON.stringify(runInfo, null, 1));
  for (const [head, rows] of tables) say(`\n${formatTable(rows, head)}`);
  if (counts.length) {
    const head = ['case', 'status', 'k6', 'Prometheus', 'InfluxDB', 'proxy', 'agree'];
    writeFileSync(join(dir, 'counts.json'), JSON.stringify(counts.map((r) => Object.fromEntries(head.map((h, i) => [h, r[i]]))), null, 1));
    say(`\nnothing lost (testid ${run.id}):\n${formatTable(counts, head)}`);
  }
  for (const p of problems) say(`\nERROR: ${p}`);
  const passed = outcomes.filter((o) => o.pass).length;
  say(`\nresults: ${dir}`);
  say(`cases: ${passed} passed, ${outcomes.length - passed} failed`);
  if (interrupted) return 130;
  return problems.length === 0 && passed === outcomes.length && outcomes.length > 0 ? 0 : 1;
}

/**
 * One experiment of a run: its stack up, k6 on its plan (with the stack's CPU sampled), the
 * proxy's own counts, the stack down, then the judging and the counts against the stores.
 * Never throws: what went wrong is in `problems`.
 */
/** What a plan's run yields: outcomes, table rows (more tables in `more`), counts, problems. */
const nothingJudged = () => ({ outcomes: [], rows: [], head: undefined, more: [], counts: [], problems: [] });

async function runPlan(plan, { root, env, topology, run, stores, say, running, isInterrupted, segments = 1 }) {
  const { dir, tmp, state } = run;
  const out = nothingJudged();
  if (isInterrupted()) return out;
  const logDir = join(dir, 'logs');
  const planStartedMs = Date.now();
  const name = runName(plan);
  const planFile = join(dir, `${name}.plan.json`);
  writeFileSync(planFile, JSON.stringify(plan, null, 1));
  const capped = plan.factor < plan.requestedFactor ? ` (--quick capped at x${plan.factor} for this experiment)` : '';
  say(`${plan.experiment}: starting stack${capped}${plan.phase ? ` for ${plan.phase}${plan.policy.caps ? ` (caps ${plan.policy.caps})` : ''}` : ''}`);
  let stack;
  let cpu = {};
  let cgroupSamples = {};
  let caps = {};
  let proxy = null;
  try {
    const targets = stackTargets(plan.experiment, plan.knobs, plan.policy);
    // A phase (a capped plan's level) starts from empty folders: no edge cache carried over.
    stack = await startStack({ root, env, topology, experiment: plan.experiment, policy: plan.policy, targets, tmpDir: plan.phase ? join(tmp, plan.phase) : tmp, logDir, state, log: (m) => say(`  ${m}`) });
    const sampler = sampleCpu(stack.procs);
    caps = Object.fromEntries(stack.procs.filter((p) => p.cgroup).map((p) => [p.name, parseCaps(p.caps)]));
    const setChild = (k6, label = 'k6') => {
      running.add(k6);
      state.add({ name: `${label} ${plan.experiment}`, pid: k6.pid });
      sampler.track(label, k6.pid);
    };
    let result;
    try {
      const outputs = stores && k6Outputs(stores.urls, { testid: run.id, plan });
      result = isInterrupted() ? { problem: 'interrupted before k6 started' } : await runK6({ root, env, plan, planFile, dir, logDir, stack, say, setChild, outputs, segments });
    } finally {
      cpu = sampler.stop();
      cgroupSamples = sampler.cgroupSamples();
    }
    writeFileSync(join(dir, `${name}.cpu.json`), JSON.stringify(cpu));
    // Its last sample, once it exited, reads 0: the most it reached is what it used.
    const k6cpu = cpu.k6?.length ? Math.max(...cpu.k6.map(([, s]) => s)) : undefined;
    if (k6cpu !== undefined) say(`${plan.experiment}: k6 used ${k6cpu.toFixed(1)} CPU seconds${stores ? ' (streaming to the stores)' : ''}`);
    if (result.problem) {
      out.problems.push(result.problem);
      out.broken = true; // k6 or the stack failed: whatever the summary says, the cases fail
    }
    // The proxy's own counts, read before it stops; and a scrape more, so that Prometheus
    // holds the last of them too.
    if (stores && !result.problem) {
      proxy = await proxyCounts(plan, topology);
      await new Promise((r) => setTimeout(r, 2000));
    }
  } catch (e) {
    out.problems.push(`${plan.experiment}: ${e.message}`);
  } finally {
    if (stack) await stopStack(stack);
  }
  const summaryFile = join(dir, `${name}.summary.json`);
  const summary = existsSync(summaryFile) ? JSON.parse(readFileSync(summaryFile, 'utf8')) : null;
  try {
    if (stores && summary) {
      const app = plan.kind === 'closed-loop' && { service: plan.accounting.service, sinceMs: planStartedMs };
      const table = countsTable(plan, k6Counts(plan, summary), await storeCounts(stores.urls, run.id, plan.experiment, streamsFor(plan), app), proxy);
      out.counts.push(...table.rows);
      if (!table.agree) out.problems.push(`${plan.experiment}: counts differ between k6, the stores and the proxy (the LOST rows above)`);
    }
  } catch (e) {
    out.problems.push(`${plan.experiment}: reading the stores: ${e.message}`);
  }
  const judge = {
    capacity: () => capacityOutcomes(plan, summary, cpu),
    'closed-loop': () => closedOutcomes(plan, summary),
    capped: () => cappedOutcomes(plan, summary, caps, cgroupSamples),
  }[plan.kind] ?? (() => limiterOutcomes(plan, summary));
  const j = judge();
  if (out.broken) for (const o of j.outcomes) o.pass = false;
  // The services in cgroups: the resources table of the loaded window, saved and shown.
  for (const o of j.outcomes.filter((x) => x.measured?.resources?.length)) {
    writeFileSync(join(dir, `${name}.resources.json`), JSON.stringify(o.measured.resources, null, 1));
    out.more.push(resourceRows(o.case, o.measured.resources));
  }
  out.head = j.head;
  out.outcomes.push(...j.outcomes);
  out.rows.push(...j.rows);
  return out;
}

/**
 * A capped plan (cdn): one stack and one k6 run per cap level, one after another, each stack
 * with its level's caps. The uncapped level comes first and measures what a request costs each
 * service; the capped levels are then planned with those costs (thresholds/kinds/capped.js).
 */
async function runCapped(plan, ctx) {
  const all = nothingJudged();
  let planned = plan;
  for (const c of plan.cases) {
    const mine = planned.cases.find((x) => x.id === c.id);
    const j = await runPlan({ ...planned, phase: c.id, cases: [mine], durationS: (plan.leadInMs + mine.durationMs) / 1000, policy: { ...plan.policy, caps: c.level.caps } }, ctx);
    for (const k of ['outcomes', 'rows', 'more', 'counts', 'problems']) all[k].push(...j[k]);
    const measured = j.outcomes[0];
    // Costs only from an uncapped level that ran whole.
    if (!c.level.cpu && !c.level.mem && measured?.pass && !planned.model.costs) {
      const costs = costsFrom(plan, measured);
      if (costs) {
        planned = withCosts(plan, costs, `measured in this run (${c.id})`, { seed: c.seed?.rps ?? null, measured: measured.measured.rps });
        ctx.say(`${plan.experiment}: CPU per request, from ${c.id}: ${Object.entries(costs).map(([s, x]) => `${s} ${(x * 1e6).toFixed(0)} us`).join(', ')}`);
      }
    }
  }
  return all;
}

/** A plan's file names: suite.experiment, and the cap level of a capped plan's phase. */
const runName = (plan) => `${plan.suite}.${plan.experiment}${plan.phase ? `.${plan.phase}` : ''}`;

/**
 * Runs k6 on one plan, as one process or as `segments` processes with an execution segment
 * each (lab/run/segments.mjs), whose summaries are merged into the plan's; a stack process that
 * dies meanwhile stops k6 and is reported by name.
 */
async function runK6({ root, env, plan, planFile, dir, logDir, stack, say, setChild, outputs, segments = 1 }) {
  const name = runName(plan);
  const one = (i) => {
    const seg = segments > 1 ? `.seg${i}` : '';
    const k6env = {
      ...env,
      LAB_PLAN: planFile,
      LAB_RESULTS: dir,
      LAB_BASE_URLS: JSON.stringify(stack.baseUrls),
      ...(seg ? { LAB_SEGMENT: String(i) } : {}),
      K6_WEB_DASHBOARD: 'true',
      K6_WEB_DASHBOARD_PORT: '-1',
      K6_WEB_DASHBOARD_PERIOD: '1s',
      K6_WEB_DASHBOARD_EXPORT: join(dir, `${name}${seg}.report.html`),
      ...outputs?.env,
    };
    const logFile = join(logDir, `k6.${name}${seg}.log`);
    const fd = openSync(logFile, 'a');
    // Its own process group: a terminal's Ctrl-C reaches the runner only, which passes k6 exactly
    // one SIGINT (k6 stops gracefully and still writes its summary; a second one would abort it).
    const args = ['run', '--no-color', ...(outputs?.args || []), ...(seg ? segmentArgs(i, segments) : []), join(root, 'k6', `${plan.experiment}.js`)];
    const k6 = spawn('k6', args, { cwd: root, env: k6env, stdio: ['ignore', fd, fd], detached: true });
    closeSync(fd);
    setChild(k6, `k6${seg}`);
    const exited = new Promise((resolve) => {
      k6.on('exit', (code, signal) => resolve({ code, signal }));
      k6.on('error', (err) => resolve({ code: -1, signal: err.message }));
    });
    return { k6, exited, logFile, seg };
  };
  const procs = Array.from({ length: segments }, (_, i) => one(i));
  say(`${plan.experiment}: k6 running ${plan.cases.length} case${plan.cases.length > 1 ? 's' : ''}${segments > 1 ? ` in ${segments} processes (execution segments)` : ''}, about ${Math.ceil(plan.durationS)} s (log: ${procs[0].logFile})`);
  const started = Date.now();
  const ticker = setInterval(() => say(`  ${plan.experiment}: ${Math.round((Date.now() - started) / 1000)} s`), 15_000);
  const all = Promise.all(procs.map((p) => p.exited));
  const first = await Promise.race([all.then((x) => ({ k6: x })), stack.died.then((p) => ({ died: p }))]);
  clearInterval(ticker);
  if (first.died) {
    const p = first.died;
    for (const { k6 } of procs) if (k6.exitCode === null) k6.kill('SIGINT');
    const t = setTimeout(() => procs.forEach(({ k6 }) => k6.exitCode === null && k6.kill('SIGKILL')), 10_000);
    await all;
    clearTimeout(t);
    return { problem: `${p.name} exited during the run (code ${p.exited.code}, signal ${p.exited.signal}); last lines of ${p.logFile}:\n${logTail(p.logFile)}` };
  }
  for (const [i, { code, signal }] of first.k6.entries()) {
    // 99: thresholds failed, which the table shows case by case (with segments, each process
    // judged its share only: its verdict is not the run's); anything else means k6 itself failed.
    if (code !== 0 && code !== 99) return { problem: `k6 ${name}${procs[i].seg} ended with ${signal || `code ${code}`}; last lines of ${procs[i].logFile}:\n${logTail(procs[i].logFile)}` };
  }
  if (segments > 1) {
    const parts = procs.map(({ seg }) => join(dir, `${name}${seg}.summary.json`)).filter((f) => existsSync(f)).map((f) => JSON.parse(readFileSync(f, 'utf8')));
    writeFileSync(join(dir, `${name}.summary.json`), JSON.stringify(mergeSummaries(parts), null, 1));
  }
  return {};
}
