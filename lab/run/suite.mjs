/*
 * `just test <suite>`: for each experiment of the suite, each phase of its plan (one, or one per
 * cap level) goes through its stages (lab/run/phase.mjs), one experiment after another; then
 * the tables, the nothing-lost table and the exit code. Everything a run makes goes to
 * results/<run-id>/; scratch space lives in .lab/tmp/<run-id>/ and is gone when the run ends.
 */
import { writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { loadTopology, stackServices } from '../stack/topology.mjs';
import { requireTools } from '../stack/procs.mjs';
import { formatTable, failedLines } from '../judge/table.mjs';
import { COUNTS_HEAD, judgedFiguresRow } from '../judge/nothing-lost.mjs';
import { storesForRun } from '../stores/stores.mjs';
import { checkPanels } from '../stores/panels.mjs';
import { writeOutcomes, outcomeCounts } from '../stores/outcomes.mjs';
import { buildSite, siteIndex } from '../results/build.mjs';
import { experiments, stackOf, experimentNamed } from '../../thresholds/plan.js';
import { kindFor } from '../kinds/index.mjs';
import { labEnv, openRun, plansFor } from './open.mjs';
import { runPhase, nothingJudged } from './phase.mjs';
import { walkPhases } from '../kinds/phases.mjs';

/** A plan's phases (lab/kinds/phases.mjs), each run and judged, their tables and counts joined. */
async function runPlan(plan, ctx) {
  const all = nothingJudged();
  for (const j of await walkPhases(plan, (p, kind) => runPhase(p, kind, ctx), ctx)) {
    for (const k of ['outcomes', 'rows', 'more', 'counts', 'problems']) all[k].push(...j[k]);
    all.head = j.head;
  }
  return all;
}

/** The commit a run was made from, and whether the tree had changes. */
export function gitState(root) {
  const git = (...args) => spawnSync('git', args, { cwd: root, encoding: 'utf8' });
  const head = git('rev-parse', '--short=12', 'HEAD');
  if (head.status !== 0) return null;
  return {
    commit: head.stdout.trim(),
    dirty: git('status', '--porcelain', '--untracked-files=no').stdout.trim() !== '',
  };
}

/**
 * What every dashboard panel of the run's experiments returns, at the run's resolution, saved
 * in the run folder (panels.json): the results pages draw the same boards from it, without the
 * stores. A panel that returns nothing is said there; `just panels` judges it.
 */
async function keepPanels(root, urls, run, dir, say) {
  try {
    const results = await checkPanels(root, urls, { ...run, allExperiments: Object.keys(experiments) });
    writeFileSync(join(dir, 'panels.json'), JSON.stringify(results));
  } catch (e) {
    say(`panels: could not save the boards' data (${e.message}); the results page will say so`);
  }
}

/**
 * Every judged figure into both stores, and read back: a nothing-lost row (the figures in
 * outcomes.json against what each store holds), and a problem naming a store that refused them.
 */
async function keepOutcomes(urls, testid, outcomes) {
  const out = nothingJudged();
  const figures = outcomes.reduce((n, o) => n + (o.figures?.length ?? 0), 0);
  try {
    await writeOutcomes(urls, testid, outcomes);
    let held = { prometheus: 0, influx: 0 };
    for (let i = 0; i < 20 && (held.prometheus !== figures || held.influx !== figures); i += 1) {
      if (i) await new Promise((r) => setTimeout(r, 250));
      held = await outcomeCounts(urls, testid);
    }
    const { same, row } = judgedFiguresRow(figures, held);
    out.counts.push(row);
    if (!same)
      out.problems.push(
        `the stores hold ${held.prometheus} (Prometheus) and ${held.influx} (InfluxDB) of the run's ${figures} judged figures`,
      );
  } catch (e) {
    out.problems.push(e.message);
  }
  return out;
}

/**
 * `--stack-cpu service=N`: each slowed service onto the plan of the stack it is in (`slowed`),
 * before anything starts; a service in none of the run's stacks is an error naming them.
 */
function placeSlowed(plans, slowed, topology) {
  const placed = new Set();
  for (const p of plans) {
    const members = stackServices(topology, stackOf(p.experiment)).map((s) => s.name);
    const mine = Object.entries(slowed).filter(([s]) => members.includes(s));
    if (mine.length) p.slowed = Object.fromEntries(mine);
    for (const [s] of mine) placed.add(s);
  }
  const lost = Object.keys(slowed).filter((s) => !placed.has(s));
  if (lost.length)
    throw new Error(
      `--stack-cpu: no service ${lost.join(', ')} in this run's stacks; they have: ${plans.flatMap((p) => stackServices(topology, stackOf(p.experiment)).map((s) => s.name)).join(', ')}`,
    );
}

/** The run's plans, its topology (with the stacks experiments bring), and where each slowed service goes. */
function preparePlans(root, request) {
  const plans = plansFor(request);
  const topology = loadTopology(join(root, 'docker-compose.yml'));
  // An experiment may bring its stack with it (a team's policy: lab/policy/stack.mjs).
  for (const p of plans) Object.assign(topology.services, experimentNamed(p.experiment).services ?? {});
  if (request.slowed) placeSlowed(plans, request.slowed, topology);
  return { plans, topology };
}

/** A team's policy as the model read it, for the run page (lab/results/policy.mjs). */
function keepPoliciesAsRead(plans, dir) {
  for (const p of plans) {
    const asRead = experimentNamed(p.experiment).asRead;
    if (asRead) writeFileSync(join(dir, `${p.experiment}.policy.json`), JSON.stringify(asRead, null, 1));
  }
}

/**
 * SIGINT and SIGTERM stop the k6 processes under way (`running`), which ends their phases and so
 * the stacks; `interrupted()` names the signal, `release()` hands the signals back.
 */
function interruptGuard(say) {
  let interrupted = null;
  const running = new Set();
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
  return {
    running,
    interrupted: () => interrupted,
    release: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

/**
 * The experiments' plans, one after another, then their judged figures into the stores and the boards'
 * data into the run.
 */
async function runPlans(request, plans, startedMs, ctx) {
  const { stores, run } = ctx;
  const judged = [];
  for (const plan of plans) judged.push(await runPlan(plan, ctx));
  if (stores)
    judged.push(
      await keepOutcomes(
        stores.urls,
        run.id,
        judged.flatMap((j) => j.outcomes),
      ),
    );
  if (stores && !ctx.isInterrupted()) {
    const window = {
      testid: run.id,
      suite: request.name,
      experiments: request.experiments,
      fromMs: startedMs,
      toMs: Date.now(),
      influx: plans.some((p) => kindFor(p).streams.includes('influx')),
    };
    await keepPanels(ctx.root, stores.urls, window, run.dir, ctx.say);
  }
  return judged;
}

/** The stores, then every plan with them, then the stores and the run's scratch space closed: {judged, problems}. */
async function runWithStores(root, request, plans, { topology, run, env, guard, startedMs, say }) {
  let stores = null;
  const judged = [];
  const problems = [];
  try {
    stores = await storesForRun({
      root,
      env,
      topology,
      tmp: run.tmp,
      dir: run.dir,
      state: run.state,
      say,
      wanted: request.metrics !== false,
    });
    // One experiment after another: run together, they took CPU from each other's bursts
    // (measured: README.md, Suites). Within an experiment, the cases that can share the machine
    // already run together.
    const ctx = {
      root,
      env,
      topology,
      run,
      stores,
      say,
      running: guard.running,
      isInterrupted: guard.interrupted,
      segments: request.segments || 1,
      k6Cpu: request.k6Cpu ?? null,
    };
    judged.push(...(await runPlans(request, plans, startedMs, ctx)));
  } catch (e) {
    problems.push(e.message);
  } finally {
    guard.release();
    await stores?.close();
    run.close();
  }
  return { judged, problems, metrics: Boolean(stores) };
}

/** The phases' judgements joined: outcomes, one table per shape of row, the nothing-lost rows and the problems. */
function joinJudged(judged) {
  // One table per shape of row (a closed-loop plan also shows the model's own range).
  const tables = new Map(); // head (or the default one) -> rows
  for (const j of judged) {
    for (const t of [{ head: j.head, rows: j.rows }, ...(j.more || [])])
      if (t.rows.length) tables.set(t.head, [...(tables.get(t.head) || []), ...t.rows]);
  }
  return {
    outcomes: judged.flatMap((j) => j.outcomes),
    tables,
    counts: judged.flatMap((j) => j.counts),
    problems: judged.flatMap((j) => j.problems),
  };
}

/**
 * What the run was asked to differ by from what the model was told (--stack-knob, --stack-cpu,
 * --k6-cpu, --stack-policy).
 */
function perturbationOf(request) {
  if (!(request.untold || request.slowed || request.stackPolicy)) return {};
  return {
    perturbed: {
      knobs: request.untold,
      cpu: request.slowed,
      ...(request.k6Cpu ? { k6Cpu: request.k6Cpu } : {}),
      ...(request.stackPolicy ? { policy: request.stackPolicy } : {}),
    },
  };
}

/** run.json: what `just panels` needs to find this run in the stores, and what the results pages say it was. */
function runInfoOf(root, request, plans, { run, startedMs, metrics, outcomes, problems, interrupted }) {
  const passedCount = outcomes.filter((o) => o.pass).length;
  return {
    testid: run.id,
    suite: request.name,
    experiments: request.experiments,
    fromMs: startedMs,
    toMs: Date.now(),
    metrics,
    influx: metrics && plans.some((p) => kindFor(p).streams.includes('influx')),
    factor: request.factor,
    factors: Object.fromEntries(plans.map((p) => [p.experiment, p.factor])),
    segments: request.segments || 1,
    knobs: request.overrides,
    git: gitState(root),
    ...perturbationOf(request),
    cases: { passed: passedCount, failed: outcomes.length - passedCount },
    problems,
    interrupted,
  };
}

/** The run's own files: outcomes.json, counts.json and run.json, all before the pages are built. */
function writeRunFiles(dir, { outcomes, counts }, runInfo) {
  writeFileSync(join(dir, 'outcomes.json'), JSON.stringify(outcomes, null, 1));
  // Every file the pages read is written before they are built (they said counts.json was missing).
  if (counts.length)
    writeFileSync(
      join(dir, 'counts.json'),
      JSON.stringify(
        counts.map((r) => Object.fromEntries(COUNTS_HEAD.map((h, i) => [h, r[i]]))),
        null,
        1,
      ),
    );
  writeFileSync(join(dir, 'run.json'), JSON.stringify(runInfo, null, 1));
}

/** The tables, the nothing-lost table, the failed cases' explanations and problems, and where the results are. */
function report(root, run, { tables, counts, outcomes, problems }, say) {
  for (const [head, rows] of tables) say(`\n${formatTable(rows, head)}`);
  if (counts.length) say(`\nnothing lost (testid ${run.id}):\n${formatTable(counts, COUNTS_HEAD)}`);
  const explained = outcomes.filter((o) => o.explanation);
  if (explained.length)
    say(
      `\nwhat the failed cases measured fits, by the model (one knob at a time; the plan's values are in its plan.json):\n${explained.map((o) => `  ${o.case}: ${o.explanation}`).join('\n')}`,
    );
  for (const p of problems) say(`\nERROR: ${p}`);
  const passed = outcomes.filter((o) => o.pass).length;
  if (passed < outcomes.length) say(`\nfailed:\n${failedLines(outcomes).join('\n')}`);
  say(`\nresults: ${run.dir}; pages: ${siteIndex(root)}`);
  say(`cases: ${passed} passed, ${outcomes.length - passed} failed`);
  return passed;
}

/**
 * A suite's run: its plans, the stores and stacks, the judgements, the run's files and pages, the
 * report; the exit code.
 */
export async function runSuite(root, request, { say = console.log } = {}) {
  const { plans, topology } = preparePlans(root, request);
  const env = labEnv(root);
  requireTools(['k6'], env);
  const run = await openRun(root, `${request.name}${request.factor > 1 ? `-quick${request.factor}` : ''}`, {
    kind: 'test',
    say,
  });
  keepPoliciesAsRead(plans, run.dir);
  const guard = interruptGuard(say);
  const startedMs = Date.now();
  const ran = await runWithStores(root, request, plans, { topology, run, env, guard, startedMs, say });
  const joined = joinJudged(ran.judged);
  const problems = [...ran.problems, ...joined.problems];
  const interrupted = Boolean(guard.interrupted());
  writeRunFiles(
    run.dir,
    joined,
    runInfoOf(root, request, plans, {
      run,
      startedMs,
      metrics: ran.metrics,
      outcomes: joined.outcomes,
      problems,
      interrupted,
    }),
  );
  // Its pages in the results site (results/site/), with the runs list and the histories it is in.
  try {
    buildSite(root, { only: run.id });
  } catch (e) {
    problems.push(`the results pages could not be built: ${e.message}`);
  }
  const passed = report(root, run, { ...joined, problems }, say);
  if (interrupted) return 130;
  return problems.length === 0 && passed === joined.outcomes.length && joined.outcomes.length > 0 ? 0 : 1;
}

// The commands that only need a run's folders import them from here too.
export { labEnv, openRun, plansFor, stamp } from './open.mjs';
