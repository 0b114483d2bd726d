/*
 * The wrk stage of a phase, after k6 (whose cases warmed the server): each case the plan gives
 * to wrk (`generator: 'wrk'`, a closed load as the seed measured it) with the references beside
 * it, as one group: after a pause for what came before to settle, the group's members take
 * turns in `slices` slices each (case, references; then references, case; and so on), so that a
 * slow spell of the machine falls on all of them alike. The backend's count per path is read
 * before the group and after it, and twice in each slice, where its connections are open and
 * wrk has not stopped (`steady`): the rate and the CPU per request are the steady parts', not the
 * opening of 2500 connections per slice. Each window is kept for the CPU samples.
 * The figures, summed over the slices, go to <run>.wrk.json beside k6's summary; the kind's judge
 * reads them from there.
 */
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { writeFileSync, readFileSync, existsSync, openSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { parseWrk, wrkArgs } from '../lib/wrk.mjs';
import { runName } from '../lib/run-names.mjs';
import { sentBy } from '../../thresholds/generator.js';

/** The cases wrk sends, in plan order. */
export const wrkCases = (plan) => plan.cases.filter(sentBy('wrk'));

async function backendPaths(url) {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  if (!res.ok) throw new Error(`the backend's ${url} answered ${res.status}`);
  return (await res.json()).paths;
}

/** wrk once, in its own process group (tracked like k6: Ctrl-C and a dying stack stop it). */
function runOne(args, { env, logFile, setChild }) {
  return new Promise((resolve, reject) => {
    const fd = openSync(logFile, 'a');
    const child = spawn('wrk', args, { env, stdio: ['ignore', 'pipe', fd], detached: true });
    closeSync(fd);
    setChild(child, 'wrk');
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      writeFileSync(logFile, out, { flag: 'a' });
      if (code === 0) resolve(out);
      else
        reject(
          new Error(
            `wrk ${args.at(-1)} ended with ${signal || `code ${code}`}${out ? `: ${out.trim().split('\n').at(-1)}` : ''}`,
          ),
        );
    });
  });
}

/** The wrk cases as groups that take turns: each case that is beside none, then the ones beside it. */
export function wrkGroups(plan) {
  const cases = wrkCases(plan);
  return cases.filter((c) => !c.beside).map((c) => [c, ...cases.filter((x) => x.beside === c.id)]);
}

/**
 * One case's figures from its slices' wrk reports ({...parseWrk(out), fromMs, toMs, steady} each):
 * the counts summed, the rate over wrk's own running time, each latency percentile the worst
 * slice's (slices' percentiles cannot be merged: shown, not judged), every window, and the
 * steady parts' (`steady`: {fromMs, toMs, received}, the backend's count between them).
 */
export function mergeSlices(slices) {
  const sum = (f) => slices.reduce((a, x) => a + f(x), 0);
  const requests = sum((x) => x.requests);
  const seconds = sum((x) => (x.rps > 0 ? x.requests / x.rps : 0));
  const socket = {};
  for (const x of slices) for (const [k, v] of Object.entries(x.socket || {})) socket[k] = (socket[k] || 0) + v;
  const latencyMs = {};
  for (const x of slices)
    for (const [p, v] of Object.entries(x.latencyMs || {})) latencyMs[p] = Math.max(latencyMs[p] ?? 0, v);
  return {
    rps: seconds > 0 ? requests / seconds : 0,
    requests,
    non2xx: sum((x) => x.non2xx),
    socket,
    socketErrors: sum((x) => x.socketErrors),
    latencyMs,
    fromMs: slices[0].fromMs,
    toMs: slices.at(-1).toMs,
    // Each slice's window and steady part (what the backend received in it), once: the judge
    // takes the windows from here (lab/kinds/capacity.mjs).
    slices: slices.map((x) => ({ rps: x.rps, requests: x.requests, fromMs: x.fromMs, toMs: x.toMs, steady: x.steady })),
  };
}

/**
 * One slice of a case: wrk against its server for `sliceS`, and, where the case has a steady part,
 * the backend's count for it read twice while wrk runs (once its connections are open and before
 * wrk stops). Returns wrk's report with the slice's window and its steady part.
 */
async function wrkSlice(c, { root, env, plan, stack, logDir, setChild, body, accounting, sliceS, steady }) {
  const args = wrkArgs(stack.baseUrls[c.service] + c.path, c.vus, sliceS, {
    threads: c.threads,
    timeoutS: c.timeoutS,
    script: join(root, plan.wrk.script),
    latency: true,
  });
  const fromMs = Date.now();
  const count = async (atS) => {
    await sleep(Math.max(0, fromMs + atS * 1000 - Date.now()));
    const t0 = Date.now();
    const paths = await backendPaths(accounting);
    return { atMs: (t0 + Date.now()) / 2, n: paths[c.path] || 0 };
  };
  const marks = steady ? Promise.all([count(steady.fromS), count(steady.toS)]).catch((e) => e) : null;
  const out = await runOne(args, {
    env: { ...env, LAB_BODY: body },
    logFile: join(logDir, `wrk.${runName(plan)}.${c.id}.log`),
    setChild,
  });
  const toMs = Date.now();
  const seen = marks ? await marks : null;
  if (seen instanceof Error) throw seen;
  const [a, b] = seen || [];
  return {
    ...parseWrk(out),
    fromMs,
    toMs,
    ...(marks ? { steady: { fromMs: a.atMs, toMs: b.atMs, received: b.n - a.n } } : {}),
  };
}

/**
 * A group of cases that take turns on one machine: after its pause, each case's slices in turn
 * (the order swapped every slice), then the backend's count once what was in flight has settled.
 * Adds each case's figures to `figures`; returns false when interrupted.
 */
async function wrkGroup(group, figures, ctx) {
  const { plan, say, isInterrupted, accounting } = ctx;
  const [lead] = group;
  await sleep(lead.pauseMs);
  const { slices = 1, sliceS = lead.seconds, steady = null } = lead;
  say(
    `${plan.experiment}: ${group.map((c) => `${c.id} (${c.service})`).join(', ')}: wrk -t ${lead.threads} -c ${lead.vus}, ${slices} slice(s) of ${sliceS} s each, taking turns`,
  );
  const before = await backendPaths(accounting);
  const reports = new Map(group.map((c) => [c.id, []]));
  for (let i = 0; i < slices; i += 1) {
    for (const c of i % 2 ? [...group].reverse() : group) {
      if (isInterrupted()) return false;
      reports.get(c.id).push(await wrkSlice(c, { ...ctx, sliceS, steady }));
    }
  }
  // Whatever was still in flight when wrk stopped reaches the backend within its timeout.
  await sleep(Math.max(...group.map((c) => c.settleMs)));
  const after = await backendPaths(accounting);
  for (const c of group)
    figures[c.id] = {
      ...mergeSlices(reports.get(c.id)),
      backendReceived: (after[c.path] || 0) - (before[c.path] || 0),
    };
  return true;
}

/**
 * Runs the plan's wrk cases; resolves to {figures} (by case id) or {problem}. `plan.wrk`: the
 * Lua script (relative to the root), the document it posts and the fields set in it.
 */
export async function runWrk({ root, env, plan, dir, logDir, tmp, stack, setChild, say, isInterrupted }) {
  const figures = {};
  const body = join(tmp, `${runName(plan)}.wrk-body.json`);
  writeFileSync(
    body,
    JSON.stringify({ ...JSON.parse(readFileSync(join(root, plan.wrk.body), 'utf8')), ...plan.wrk.set }),
  );
  const accounting = `${stack.baseUrls[plan.accounting.service]}${plan.accounting.path}`;
  const ctx = { root, env, plan, stack, logDir, setChild, say, isInterrupted, body, accounting };
  try {
    for (const group of wrkGroups(plan))
      if (!(await wrkGroup(group, figures, ctx))) return { problem: 'interrupted during wrk', figures };
    return { figures };
  } catch (e) {
    return { problem: `${plan.experiment}: ${e.message}`, figures };
  } finally {
    writeFileSync(join(dir, `${runName(plan)}.wrk.json`), JSON.stringify(figures));
  }
}

export function readWrk(plan, { run }) {
  const file = join(run.dir, `${runName(plan)}.wrk.json`);
  return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : null;
}
