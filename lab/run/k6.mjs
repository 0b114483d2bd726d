/*
 * The k6 stage of a phase: k6 on the phase's plan, as one process or as `segments` processes
 * with an execution segment each (lab/run/segments.mjs), whose summaries are merged into the
 * plan's; a stack process that dies meanwhile stops k6 and is reported by name.
 */
import { spawn } from 'node:child_process';
import { writeFileSync, readFileSync, existsSync, openSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { logTail } from '../stack/procs.mjs';
import { segmentArgs, mergeSummaries } from './segments.mjs';
import { refusedWrites, refusalProblems } from '../stores/refusals.mjs';

/** A plan's file names: suite.experiment, and the phase of a plan that runs in phases. */
export const runName = (plan) => `${plan.suite}.${plan.experiment}${plan.phase ? `.${plan.phase}` : ''}`;

/** The k6 script of a plan's experiment: k6/<experiment>.js, runnable with k6 alone too. */
export const scriptOf = (root, plan) => join(root, 'k6', `${plan.experiment}.js`);

/**
 * Runs k6; resolves to {refused} (a store refused some of k6's writes: each said) or {problem}
 * (k6 itself failed, or a stack process died).
 */
export async function runK6({ root, env, plan, planFile, dir, logDir, stack, say, setChild, outputs, segments = 1 }) {
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
    const args = ['run', '--no-color', ...(outputs?.args || []), ...(seg ? segmentArgs(i, segments) : []), scriptOf(root, plan)];
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
  // A refused write loses samples: the run fails saying why, not only by its counts.
  return { refused: procs.flatMap(({ logFile }) => refusalProblems(refusedWrites(readFileSync(logFile, 'utf8')), `k6 ${name}`)) };
}
