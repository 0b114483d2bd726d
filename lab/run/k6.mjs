/*
 * The k6 stage of a phase: k6 on the phase's plan, as one process or as `segments` processes
 * with an execution segment each (lab/run/segments.mjs), started paused and resumed together
 * (starter.mjs), whose summaries are merged into the plan's, with the skew between their
 * schedules measured; a stack process that dies meanwhile stops k6 and is reported by name.
 */
import { spawn } from 'node:child_process';
import { writeFileSync, readFileSync, existsSync, openSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { totalmem } from 'node:os';
import { logTail, freePort } from '../stack/procs.mjs';
import { createCgroup, parseCaps, wrapInCgroup, removeWhenEmpty } from '../stack/cgroups.mjs';
import { segmentArgs, mergeSummaries } from './segments.mjs';
import { pausedArgs, waitPaused, shareSetup, resumeAll } from './starter.mjs';
import { refusedWrites, refusalProblems } from '../stores/refusals.mjs';
import { sentByK6 } from '../../thresholds/generator.js';
import { k6Run } from '../../thresholds/k6-options.js';
import { runName } from '../lib/run-names.mjs';

/**
 * The measured skew between the segments' schedules, said; a problem when it exceeds what the
 * plan's model allows (plan.model.segmentSkewMs), or cannot be measured where the model needs it.
 */
function skewProblem(plan, schedule, say, replays) {
  const allowed = plan.model?.segmentSkewMs;
  // Judged on the sends each process really made, the skew is in what the replay replays: shown.
  if (replays) {
    if (schedule)
      say(
        `${plan.experiment}: the segments' schedules started ${schedule.skewMs.toFixed(1)} ms apart (shown: the cases are judged on what each process sent)`,
      );
    return null;
  }
  if (!schedule)
    return allowed === undefined
      ? null
      : `${plan.experiment}: the segments' schedule skew could not be measured (a summary lacks lab_schedule_origin); the model assumes at most ${allowed} ms`;
  say(
    `${plan.experiment}: the segments' schedules started ${schedule.skewMs.toFixed(1)} ms apart${allowed === undefined ? '' : ` (the model allows ${allowed} ms)`}`,
  );
  if (allowed !== undefined && schedule.skewMs > allowed)
    return `${plan.experiment}: the segments' schedules started ${schedule.skewMs.toFixed(1)} ms apart, more than the ${allowed} ms the model allows: the counts cannot be judged against it`;
  return null;
}

/*
 * k6 runs ahead of what it loads: at nice K6_NICE when the runner may raise a priority (root),
 * else at the runner's own. On cores shared with the stack, k6 at the capacity experiments'
 * rates needs most of a core, and beside busy services it started its arrivals late and dropped
 * some; ahead of them it kept its schedule (README.md, the suites, has the runs): the nearest one
 * machine gets to a load generator on a machine of its own. The services' CPU per request is
 * their own CPU time, which the priority does not move.
 */
export const K6_NICE = -10;
export const k6Priority = (uid = process.getuid?.()) => (uid === 0 ? K6_NICE : null);
export const atPriority = (nice, argv) => (nice === null ? argv : ['nice', '-n', String(nice), ...argv]);

// The runner's k6 entry: the experiment's script, with its k6Run computed once per phase (runK6Processes).
const PREPARED_SCRIPT = join('k6', 'lib', 'prepared.js');

/**
 * k6's Go collector, given room: it marks every VU's heap (0.6-0.8 GB at 1000 VUs) in a burst of
 * about 2 CPU seconds, which in a 4 s case at 2000 r/s on a full machine held k6's VUs and the
 * stack's CPU until k6 dropped arrivals. At GOGC 400 a quick breakpoint phase allocates less than
 * four times what its VUs hold and collects only while the VUs start; a longer run collects a
 * quarter as often. GOMEMLIMIT, a quarter of the machine's memory, makes it collect sooner where
 * a plan's VUs hold more. A GOGC or GOMEMLIMIT in the environment wins. Measured:
 * docs/journal/json-filter.md, "k6's collector".
 */
export const withCollectorRoom = (env) => ({
  GOGC: '400',
  GOMEMLIMIT: `${Math.floor(totalmem() / 4 / 2 ** 20)}MiB`,
  ...env,
});

/**
 * Runs k6; resolves to {problems} (the run fails, the cases are still judged: a store refused
 * some of k6's writes, or the segments started further apart than the model allows) or
 * {problem} (k6 itself failed, or a stack process died: the cases fail).
 */
export async function runK6({ k6Cpu = null, run = null, ...stage }) {
  const { plan, say } = stage;
  // --k6-cpu: k6 in a cgroup capped at N % of a core (a perturbation: a load generator that
  // cannot keep its schedule), joined before it execs, like a slowed service.
  const cgroup = k6Cpu ? createCgroup(`lab-${process.pid}-k6-${plan.experiment}`, parseCaps(`cpu=${k6Cpu}%`)) : null;
  if (cgroup) {
    run?.state.addCgroups(cgroup.paths);
    say(`${plan.experiment}: PERTURBED load generator, the model is not told: k6 at ${k6Cpu} % of a core`);
  }
  try {
    return await runK6Processes({ ...stage, segments: stage.segments ?? 1, replays: stage.replays ?? false, cgroup });
  } finally {
    if (cgroup) await removeWhenEmpty(cgroup.paths);
  }
}

/**
 * One k6 process of a phase (segment `i` of `segments`): its environment, its log, its own
 * process group, and its priority and cgroup. Returns {k6, exited, logFile, seg}.
 */
function spawnK6(
  i,
  { root, env, plan, planFile, prepared, dir, logDir, stack, setChild, outputs, segments, cgroup, nice, addresses },
) {
  const name = runName(plan);
  const seg = segments > 1 ? `.seg${i}` : '';
  const k6env = {
    ...withCollectorRoom(env),
    LAB_PLAN: planFile,
    LAB_PREPARED: prepared,
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
  const args = [
    'run',
    '--no-color',
    ...(outputs?.args || []),
    ...(seg ? [...segmentArgs(i, segments), ...pausedArgs(addresses[i], i)] : []),
    join(root, PREPARED_SCRIPT),
  ];
  const k6argv = atPriority(nice, ['k6', ...args]);
  const [cmd, ...argv] = cgroup ? wrapInCgroup(k6argv, cgroup.procsFiles) : k6argv;
  const k6 = spawn(cmd, argv, { cwd: root, env: k6env, stdio: ['ignore', fd, fd], detached: true });
  closeSync(fd);
  setChild(k6, `k6${seg}`);
  const exited = new Promise((resolve) => {
    k6.on('exit', (code, signal) => resolve({ code, signal }));
    k6.on('error', (err) => resolve({ code: -1, signal: err.message }));
  });
  return { k6, exited, logFile, seg };
}

/** The segments, started paused, resumed together after setup() ran once; a problem if they could not be. */
async function startTogether(plan, procs, addresses, say) {
  try {
    const t = Date.now();
    await waitPaused(
      addresses,
      procs.map((p) => p.exited),
    );
    const setupMs = await shareSetup(addresses);
    const ms = await resumeAll(addresses);
    say(
      `${plan.experiment}: ${procs.length} k6 processes ready (VUs allocated, paused) after ${((Date.now() - t) / 1000).toFixed(1)} s; setup() once in the first, its data given to the others (${setupMs.toFixed(0)} ms); resumed together (the requests took ${ms.toFixed(1)} ms)`,
    );
    return null;
  } catch (e) {
    for (const { k6 } of procs) if (k6.exitCode === null) k6.kill('SIGKILL');
    await Promise.all(procs.map((p) => p.exited));
    return `${plan.experiment}: starting the segments: ${e.message}; last lines of ${procs[0].logFile}:\n${logTail(procs[0].logFile)}`;
  }
}

/**
 * A stack process that died during the run: k6 stopped (gracefully, then not), and the problem naming
 * it (and its OOM kills).
 */
async function stackDied(p, procs, all) {
  for (const { k6 } of procs) if (k6.exitCode === null) k6.kill('SIGINT');
  const t = setTimeout(() => procs.forEach(({ k6 }) => k6.exitCode === null && k6.kill('SIGKILL')), 10_000);
  await all;
  clearTimeout(t);
  // In a cgroup of its own, the kernel says whether its OOM killer did it.
  let oom = 0;
  try {
    oom = p.cgroup?.stats().oomKills ?? 0;
  } catch {
    /* the cgroup is gone */
  }
  const cause = oom
    ? `, the OOM killer of its cgroup ended ${oom} process${oom > 1 ? 'es' : ''} (memory cap ${p.caps})`
    : '';
  return `${p.name} exited during the run (code ${p.exited.code}, signal ${p.exited.signal}${cause}); last lines of ${p.logFile}:\n${logTail(p.logFile)}`;
}

/**
 * k6's exits: a problem for the first that is neither 0 nor 99 (thresholds failed, which the table
 * shows case by case).
 */
function k6ExitProblem(name, procs, exits) {
  // With segments, each process judged its share only: its verdict is not the run's.
  for (const [i, { code, signal }] of exits.entries())
    if (code !== 0 && code !== 99)
      return `k6 ${name}${procs[i].seg} ended with ${signal || `code ${code}`}; last lines of ${procs[i].logFile}:\n${logTail(procs[i].logFile)}`;
  return null;
}

/** The segments' summaries merged into the plan's, and the skew between their schedules judged. */
function mergeSegments(plan, procs, dir, say, replays) {
  const name = runName(plan);
  const parts = procs
    .map(({ seg }) => join(dir, `${name}${seg}.summary.json`))
    .filter((f) => existsSync(f))
    .map((f) => JSON.parse(readFileSync(f, 'utf8')));
  const merged = mergeSummaries(parts);
  writeFileSync(join(dir, `${name}.summary.json`), JSON.stringify(merged, null, 1));
  return skewProblem(plan, merged.schedule, say, replays);
}

/** Says what k6 runs: its cases, its processes, the phase's length, its priority and its log. */
function sayStarted(plan, { segments, nice, logFile }, say) {
  const n = plan.cases.filter(sentByK6).length;
  say(
    `${plan.experiment}: k6 running ${n} case${n > 1 ? 's' : ''}${segments > 1 ? ` in ${segments} processes (execution segments)` : ''}, the phase about ${Math.ceil(plan.durationS)} s, ${nice === null ? "at the runner's priority (not root: it cannot run ahead of the stack)" : `at nice ${nice}, ahead of the stack`} (log: ${logFile})`,
  );
}

/** k6's processes started, run to their end or to a stack process's death, and their summaries and logs read. */
async function runK6Processes(opts) {
  const { plan, dir, stack, say, segments, replays } = opts;
  // Segments start paused, each with its own REST API, and are resumed together.
  const nice = k6Priority();
  const addresses =
    segments > 1
      ? await Promise.all(Array.from({ length: segments }, async () => `127.0.0.1:${await freePort()}`))
      : [];
  // What the experiment's script computes in each VU, computed once for the phase's processes,
  // from the plan as they read it (its file).
  const prepared = join(dir, `${runName(plan)}.k6.json`);
  const whole = JSON.parse(readFileSync(opts.planFile, 'utf8'));
  writeFileSync(prepared, JSON.stringify(k6Run(whole, stack.baseUrls, opts.env)));
  const procs = Array.from({ length: segments }, (_, i) => spawnK6(i, { ...opts, prepared, nice, addresses }));
  sayStarted(plan, { segments, nice, logFile: procs[0].logFile }, say);
  if (segments > 1) {
    const problem = await startTogether(plan, procs, addresses, say);
    if (problem) return { problem };
  }
  const started = Date.now();
  const ticker = setInterval(() => say(`  ${plan.experiment}: ${Math.round((Date.now() - started) / 1000)} s`), 15_000);
  const all = Promise.all(procs.map((p) => p.exited));
  const first = await Promise.race([all.then((x) => ({ k6: x })), stack.died.then((p) => ({ died: p }))]);
  clearInterval(ticker);
  if (first.died) return { problem: await stackDied(first.died, procs, all) };
  const name = runName(plan);
  const exitProblem = k6ExitProblem(name, procs, first.k6);
  if (exitProblem) return { problem: exitProblem };
  const problems = [];
  const skew = segments > 1 ? mergeSegments(plan, procs, dir, say, replays) : null;
  if (skew) problems.push(skew);
  // A refused write loses samples: the run fails saying why, not only by its counts.
  problems.push(
    ...procs.flatMap(({ logFile }) => refusalProblems(refusedWrites(readFileSync(logFile, 'utf8')), `k6 ${name}`)),
  );
  return { problems };
}
