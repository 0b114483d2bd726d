/*
 * One phase of a plan, stage by stage: start (lab/run/start.mjs), load (k6.mjs, then wrk.mjs for
 * the cases the plan gives to wrk), collect (CPU,
 * the proxy's counts, the summary, nothing lost; collect.mjs), stop the stack (always), judge
 * (judge.mjs). Never throws: what went wrong is in `problems`.
 */
import { join } from 'node:path';
import { stopStack } from '../stack/start-stop.mjs';
import { k6Outputs } from '../stores/stores.mjs';
import { startPhase } from './start.mjs';
import { runK6 } from './k6.mjs';
import { runWrk, wrkCases, readWrk } from './wrk.mjs';
import { stopSampling, readProxy, readSummary, countRows } from './collect.mjs';
import { judgePhase } from './judge.mjs';
import { clockOffsetMs, saveSends, addSeenLags } from '../judge/sends.mjs';

/** What a phase yields: outcomes, table rows (more tables in `more`), counts, problems. */
export const nothingJudged = () => ({ outcomes: [], rows: [], head: undefined, more: [], counts: [], problems: [] });

/**
 * The load stage: k6 on the plan (streaming to the stores), then wrk for the cases it sends.
 * Sampling stops whatever happened, and `keep` gets what it measured even when a stage throws.
 */
async function loadPhase(plan, kind, started, ctx, { replays, keep }) {
  try {
    const outputs = ctx.stores && k6Outputs(ctx.stores.urls, { testid: ctx.run.id, plan, streams: kind.streams });
    const stage = {
      ...ctx,
      dir: ctx.run.dir,
      logDir: join(ctx.run.dir, 'logs'),
      tmp: ctx.run.tmp,
      plan,
      stack: started.stack,
      setChild: started.setChild,
    };
    if (ctx.isInterrupted()) return { problem: 'interrupted before k6 started' };
    const result = await runK6({ ...stage, planFile: started.planFile, outputs, segments: ctx.segments, replays });
    if (result.problem || !wrkCases(plan).length) return result;
    const wrk = await runWrk(stage);
    return wrk.problem ? { ...result, problem: wrk.problem } : result;
  } finally {
    keep(stopSampling(plan, started, ctx));
  }
}

/**
 * After the load: the sends k6 made (where the kind replays them) and the proxy's own counts (where
 * the stores are).
 */
async function afterLoad(plan, kind, started, ctx, { result, measured, replays, clockBefore }) {
  if (replays && !result.problem) {
    const sends = await saveSends(plan, clockBefore, ctx);
    if (sends.problem) ctx.say(sends.problem);
    measured.sends = sends.record ?? null;
  }
  return !result.problem && ctx.stores ? readProxy(plan, kind, ctx, started.stack) : null;
}

/** One phase: started, loaded, collected, stopped (always) and judged; never throws. */
export async function runPhase(plan, kind, ctx) {
  const out = nothingJudged();
  if (ctx.isInterrupted()) return out;
  const sinceMs = Date.now();
  let started;
  let measured = { cpu: {}, cgroupSamples: {}, caps: {} };
  let proxy = null;
  let broken = false;
  try {
    started = await startPhase(plan, ctx);
    const replays = Boolean(kind.replaysSends && ctx.stores);
    const clockBefore = replays ? clockOffsetMs() : null;
    const result = await loadPhase(plan, kind, started, ctx, { replays, keep: (m) => (measured = m) });
    out.problems.push(...(result.problems || []));
    proxy = await afterLoad(plan, kind, started, ctx, { result, measured, replays, clockBefore });
    if (result.problem) {
      out.problems.push(result.problem);
      broken = true; // k6 or the stack failed: whatever the summary says, the cases fail
    }
  } catch (e) {
    out.problems.push(`${plan.experiment}: ${e.message}`);
  } finally {
    if (started) await stopStack(started.stack);
  }
  // The proxies flushed their logs as they stopped: when each saw each request.
  if (measured.sends && started)
    addSeenLags(
      plan,
      measured.sends,
      started.stack.procs
        .filter((p) => p.prefix)
        .map((p) => ({ dir: p.prefix, sightings: ctx.topology.services[p.name]?.sightings ?? null })),
      ctx,
    );
  measured.summary = readSummary(plan, ctx);
  measured.sends ??= null;
  measured.wrk = readWrk(plan, ctx);
  const counts = await countRows(plan, kind, measured.summary, proxy, sinceMs, ctx);
  out.counts.push(...counts.rows);
  out.problems.push(...counts.problems);
  return { ...out, ...judgePhase(plan, kind, measured, { broken }, ctx), counts: out.counts, problems: out.problems };
}
