/*
 * The run lock: one run at a time. A run (test, bench, verdict, panels: whatever opens a run
 * through open.mjs) owns the stack ports it binds and the metrics stores it starts for itself,
 * and stops them when it ends; a second run beside it would stream to those stores and have
 * them stopped under it, or fail on a port mid-start, and on 2 cores would skew the figures of
 * both. So a second run is refused at once (no waiting), naming the live one: its run id, pid,
 * command and since when. So are the commands that would pull the ground from under a live
 * run (`up`, `metrics up|down`, `clean`): they call refuseWhileLive.
 *
 * How: each run creates a claim, .lab/lock/<run-id>.json = {id, kind, pid, start, command,
 * since}, atomically and exclusively (procs.mjs writeAtomic: never half written, never over
 * another), and only then looks at the other claims. Another
 * live claim: it withdraws its own and refuses. Two runs claiming in the same instant may thus
 * both refuse, but never both run. A claim is a dead run's when its pid is gone or is now
 * another process (start ticks differ: procs.mjs sameProcess, the rule reaping uses): it is
 * removed and does not count, so a run killed outright (SIGKILL, a crash) never blocks the next.
 * A claim's name is its run's own id, so removing a dead one cannot remove anyone else's.
 */
import { mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import { sameProcess, startTicks, writeAtomic } from '../stack/procs.mjs';

export const lockDir = (root) => join(root, '.lab', 'lock');

/** How this process was started, as a person would type it again. */
function commandLine() {
  const [node, script, ...words] = process.argv;
  if (script?.endsWith(join('lab', 'cli', 'index.mjs'))) return ['./labw', ...words].join(' ');
  return [basename(script ?? node), ...words].join(' ');
}

/** The claims of live runs in `dir`, oldest first; a dead run's claim (or an unreadable one) is removed. */
function liveClaims(dir) {
  let names;
  try {
    names = readdirSync(dir).filter((f) => f.endsWith('.json'));
  } catch {
    return [];
  }
  const live = [];
  for (const f of names) {
    const path = join(dir, f);
    let claim = null;
    try {
      claim = JSON.parse(readFileSync(path, 'utf8'));
    } catch {
      // gone meanwhile (its run ended), or not a claim: written atomically, never half
    }
    if (claim && sameProcess(claim.pid, claim.start)) live.push({ ...claim, path });
    else rmSync(path, { force: true });
  }
  return live.sort((a, b) => String(a.since).localeCompare(String(b.since)));
}

/** A live run, for a message: who, and how to stop it. */
export const describeRun = (c) =>
  `run ${c.id} is live (pid ${c.pid}, '${c.command}', since ${c.since}); wait for it to end, or stop it with 'kill ${c.pid}' (it cleans up after itself)`;

/** The live run's claim ({id, kind, pid, start, command, since}), or null. */
export const liveRun = (root) => liveClaims(lockDir(root))[0] ?? null;

/** Throws naming the live run, if there is one: `what` cannot be done beside it. */
export function refuseWhileLive(root, what) {
  const live = liveRun(root);
  if (live) throw new Error(`${what} refused: ${describeRun(live)}`);
}

/**
 * Takes the lock for run `id`, or throws naming the live run. Returns {release()}: the run calls
 * it where it removes its scratch folder (open.mjs close()); a run that dies without it leaves a
 * claim the next one finds dead.
 */
export function takeRunLock(root, { id, kind }) {
  const dir = lockDir(root);
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${id}.json`);
  const claim = {
    id,
    kind,
    pid: process.pid,
    start: startTicks(process.pid),
    command: commandLine(),
    since: new Date().toISOString(),
  };
  try {
    writeAtomic(path, JSON.stringify(claim, null, 1), { exclusive: true });
  } catch (e) {
    throw e.code === 'EEXIST'
      ? new Error(`run ${id} has a claim already: one process opened two runs in the same millisecond`)
      : e;
  }
  const other = liveClaims(dir).find((c) => c.path !== path);
  if (other) {
    rmSync(path, { force: true });
    throw new Error(`another run cannot start: ${describeRun(other)}`);
  }
  return { release: () => rmSync(path, { force: true }) };
}
