/*
 * Processes the lab starts: each in its own process group (so nginx's workers, Envoy's threads
 * and anything they fork go down with it), logged to a file, recorded in a state file (written
 * atomically) so that a runner that was killed outright still gets its processes reaped by the
 * next lab command. A pid read from a file is signalled only while it is still the process that
 * was recorded (sameProcess: same start ticks), never one the kernel gave out again.
 */
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  openSync,
  closeSync,
  readFileSync,
  writeFileSync,
  renameSync,
  linkSync,
  readdirSync,
  readlinkSync,
  rmSync,
  mkdirSync,
  existsSync,
  accessSync,
  constants,
} from 'node:fs';
import { createServer } from 'node:net';
import { basename, dirname, join } from 'node:path';
import { removeWhenEmpty } from './cgroups.mjs';

/** Start time of a pid in clock ticks since boot (field 22 of /proc/PID/stat), or null. */
export function startTicks(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return null;
  }
}
const alive = (pid) => startTicks(pid) !== null;

/**
 * Is `pid` still the process that was recorded with start ticks `start`? A pid that is gone, or
 * that the kernel has since given to another process (its start ticks differ), is not: the one
 * rule for trusting a pid read from a file before signalling it (reaping, `down`, the run lock).
 */
export const sameProcess = (pid, start) =>
  Number.isInteger(pid) && pid > 0 && start != null && startTicks(pid) === start;

/** Is the runner or keeper that wrote a state file (readStates' `st`) still running? */
export const ownerAlive = (st) => sameProcess(st.owner, st.ownerStart);

/**
 * Writes a file whole or not at all, for a reader in another process: into a temp file in the same
 * folder (same filesystem), then renamed over `path` (atomic). A reader never sees it half
 * written (readStates removes a file it cannot parse: that was a live run's). `exclusive`: linked
 * to `path` instead, which fails (EEXIST) when `path` is there already, so it also creates the
 * file at most once, as open(2)'s O_EXCL ('wx') would, but never half written.
 */
export function writeAtomic(path, text, { exclusive = false } = {}) {
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  writeFileSync(tmp, text);
  try {
    if (exclusive) linkSync(tmp, path);
    else renameSync(tmp, path);
  } finally {
    rmSync(tmp, { force: true });
  }
}

export function spawnLogged(name, argv, { cwd, env, logFile }) {
  const fd = openSync(logFile, 'a');
  const child = spawn(argv[0], argv.slice(1), { cwd, env, detached: true, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  const proc = { name, child, pid: child.pid, logFile, exited: null, expectedExit: false };
  proc.exitPromise = new Promise((resolve) => {
    child.on('exit', (code, signal) => resolve((proc.exited = { code, signal })));
    child.on('error', (err) => resolve((proc.exited = { code: null, signal: null, error: err.message })));
  });
  return proc;
}

/** SIGTERM to the whole group, SIGKILL after `graceMs`; resolves once the leader is reaped. */
export async function stopProcess(proc, graceMs = 5000) {
  proc.expectedExit = true;
  if (!proc.exited && proc.pid) {
    try {
      process.kill(-proc.pid, 'SIGTERM');
    } catch {
      /* already gone */
    }
    // The grace timer is cleared once the leader exits: a pending one kept the caller's event
    // loop (a test's) alive for the whole grace after everything had stopped.
    let timer;
    const done = await Promise.race([
      proc.exitPromise.then(() => true),
      new Promise((r) => {
        timer = setTimeout(r, graceMs, false);
      }),
    ]);
    clearTimeout(timer);
    if (!done) {
      try {
        process.kill(-proc.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
      await proc.exitPromise;
    }
  }
  // Stragglers of the group (a worker whose master died first).
  try {
    process.kill(-proc.pid, 'SIGKILL');
  } catch {
    /* none left */
  }
}

export function logTail(file, lines = 20) {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** Which process listens on a TCP port, from /proc (no ss or lsof needed). */
export function portOwner(port) {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length > 9 && f[1].endsWith(`:${hex}`) && f[3] === '0A') inodes.add(f[9]);
    }
  }
  if (inodes.size === 0) return null;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let fds;
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let link;
      try {
        link = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const m = /^socket:\[(\d+)\]$/.exec(link);
      if (m && inodes.has(m[1])) {
        let cmd = '';
        try {
          cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
        } catch {
          /* gone */
        }
        return { pid: Number(pid), cmd };
      }
    }
  }
  return { pid: null, cmd: 'another user or namespace' };
}

/**
 * Is the process listening on `port` one of `procs` ({pid, start} as a state file records them),
 * and still the process recorded? A store that answers on the lab's port is the lab's only so:
 * something else there (Debian's own prometheus, a docker compose one, a fake) is not, however
 * it answers.
 */
export function listenerIsRecorded(port, procs) {
  const who = portOwner(port);
  return Boolean(who?.pid) && (procs || []).some((p) => p.pid === who.pid && sameProcess(p.pid, p.start));
}

/** A port on 127.0.0.1 that nothing listens on now (the system picks it). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Throws naming the first port on 127.0.0.1 that cannot be bound, and who holds it. */
export async function assertPortsFree(ports) {
  for (const { port, service } of ports) {
    const err = await new Promise((resolve) => {
      const srv = createServer();
      srv.once('error', resolve);
      srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(null)));
    });
    if (err) {
      const who = portOwner(port);
      const by = who ? ` by pid ${who.pid ?? '?'} (${who.cmd})` : '';
      throw new Error(`port ${port} (${service}) is in use${by}; stop it or run './labw down'`);
    }
  }
}

/* ---- state files: what this runner started, for `just down` and for reaping orphans ---- */

export class StateFile {
  constructor(dir, id, meta = {}) {
    mkdirSync(dir, { recursive: true });
    this.path = join(dir, `${id}.json`);
    this.data = { owner: process.pid, ownerStart: startTicks(process.pid), ...meta, procs: [] };
    this.save();
  }
  add(proc) {
    this.data.procs.push({ name: proc.name, pid: proc.pid, start: startTicks(proc.pid) });
    this.save();
  }
  /** Cgroups the run made: removed by whoever reaps the run if it dies before it could. */
  addCgroups(paths) {
    (this.data.cgroups ||= []).push(...paths);
    this.save();
  }
  save() {
    writeAtomic(this.path, JSON.stringify(this.data, null, 1));
  }
  remove() {
    rmSync(this.path, { force: true });
  }
}

/** The state files in `dir` as {id, path, st}; an unreadable one is removed. */
export function readStates(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .flatMap((f) => {
      const path = join(dir, f);
      try {
        return [{ id: f.slice(0, -5), path, st: JSON.parse(readFileSync(path, 'utf8')) }];
      } catch {
        rmSync(path, { force: true });
        return [];
      }
    });
}

/** Kills the process groups recorded in state files; only those whose owner is gone, unless `all`. */
export async function reapStale(dir, { all = false, log = () => {} } = {}) {
  let reaped = 0;
  for (const { id, path, st } of readStates(dir)) {
    if (ownerAlive(st) && !all) continue;
    for (const p of st.procs || []) {
      if (!sameProcess(p.pid, p.start)) continue; // pid reused by something else, or gone
      log(`stopping ${p.name} (pid ${p.pid}) left by ${st.kind || 'a run'} ${id}`);
      try {
        process.kill(-p.pid, 'SIGTERM');
      } catch {
        /* gone */
      }
      for (let i = 0; i < 50 && alive(p.pid); i += 1) await sleep(100);
      try {
        process.kill(-p.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
      reaped += 1;
    }
    if (st.tmp) rmSync(st.tmp, { recursive: true, force: true });
    // Its processes are gone, so their cgroups can go (the kernel refuses while one is inside).
    const left = st.cgroups?.length ? await removeWhenEmpty(st.cgroups, { tries: 20 }) : [];
    if (left.length) log(`cgroups left by ${id} could not be removed: ${left.join(', ')}`);
    rmSync(path, { force: true });
  }
  return reaped;
}

/** Throws naming every command of `names` that is not on env.PATH, and how to get it. */
export function requireTools(names, env) {
  const dirs = (env.PATH || '').split(':').filter(Boolean);
  const found = (n) =>
    n.includes('/')
      ? existsSync(n)
      : dirs.some((d) => {
          try {
            accessSync(join(d, n), constants.X_OK);
            return true;
          } catch {
            return false;
          }
        });
  const missing = [...new Set(names)].filter((n) => !found(n));
  if (missing.length)
    throw new Error(`missing tools: ${missing.join(', ')}; run './labw setup' (lab/install.sh) to install them`);
}
