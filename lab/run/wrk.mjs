/*
 * The wrk stage of a phase, after k6 (whose cases warmed the server): each case the plan gives
 * to wrk (`generator: 'wrk'`, a closed load as the seed measured it), one after another, each
 * after a pause for what came before to settle, with the backend's count per path read before
 * and after and the wall-clock window kept for the CPU samples. Its figures go to
 * <run>.wrk.json beside k6's summary; the kind's judge reads them from there.
 */
import { spawn } from 'node:child_process';
import { writeFileSync, readFileSync, existsSync, openSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { parseWrk, wrkArgs } from '../bench/tools.mjs';
import { runName } from './k6.mjs';
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
    child.stdout.on('data', (d) => { out += d; });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      writeFileSync(logFile, out, { flag: 'a' });
      if (code === 0) resolve(out);
      else reject(new Error(`wrk ${args.at(-1)} ended with ${signal || `code ${code}`}${out ? `: ${out.trim().split('\n').at(-1)}` : ''}`));
    });
  });
}

/**
 * Runs the plan's wrk cases; resolves to {figures} (by case id) or {problem}. `plan.wrk`: the
 * Lua script (relative to the root), the document it posts and the fields set in it.
 */
export async function runWrk({ root, env, plan, dir, logDir, tmp, stack, setChild, say, isInterrupted }) {
  const figures = {};
  const body = join(tmp, `${runName(plan)}.wrk-body.json`);
  writeFileSync(body, JSON.stringify({ ...JSON.parse(readFileSync(join(root, plan.wrk.body), 'utf8')), ...plan.wrk.set }));
  const accounting = `${stack.baseUrls[plan.accounting.service]}${plan.accounting.path}`;
  try {
    for (const c of wrkCases(plan)) {
      if (isInterrupted()) return { problem: 'interrupted during wrk', figures };
      const url = stack.baseUrls[c.service] + c.path;
      await new Promise((r) => setTimeout(r, c.pauseMs));
      say(`${plan.experiment}: ${c.id}: wrk -t ${c.threads} -c ${c.vus} -d ${c.seconds}s against ${c.service}`);
      const before = await backendPaths(accounting);
      const fromMs = Date.now();
      const args = wrkArgs(url, c.vus, c.seconds, { threads: c.threads, timeoutS: c.timeoutS, script: join(root, plan.wrk.script), latency: true });
      const out = await runOne(args, { env: { ...env, LAB_BODY: body }, logFile: join(logDir, `wrk.${runName(plan)}.${c.id}.log`), setChild });
      const toMs = Date.now();
      // Whatever was still in flight when wrk stopped reaches the backend within its timeout.
      await new Promise((r) => setTimeout(r, c.settleMs));
      const after = await backendPaths(accounting);
      figures[c.id] = { ...parseWrk(out), fromMs, toMs, backendReceived: (after[c.path] || 0) - (before[c.path] || 0) };
    }
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
