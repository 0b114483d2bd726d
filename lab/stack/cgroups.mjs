/*
 * CPU and memory caps for a service, natively: one cgroup per capped service, made before its
 * process starts and removed once the process is reaped. Docker's `--cpus 0.02 --memory 25m` is
 * the same thing: a CFS quota over a period, and a memory limit.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const PERIOD_US = 100_000;
const V1_CONTROLLERS = ['cpu', 'cpuacct', 'memory', 'pids'];

/**
 * 'v1', 'v2' or null, from what is mounted under `fsRoot`. Both hierarchies are supported:
 * - v1 (these machines): a directory per controller, each mounted on its own
 *   (/sys/fs/cgroup/{cpu,cpuacct,memory,pids}); quota in cpu.cfs_quota_us, usage in
 *   cpuacct.usage (ns), limit in memory.limit_in_bytes, OOM kills in memory.oom_control;
 * - v2 (most hosts): one directory; cpu.max "quota period", cpu.stat usage_usec, memory.max,
 *   memory.events oom_kill, pids.current. The parent must delegate the controllers
 *   (cgroup.subtree_control), which the lab asks for and reports if refused.
 */
export function cgroupVersion(fsRoot = '/sys/fs/cgroup') {
  if (existsSync(join(fsRoot, 'cgroup.controllers'))) return 'v2';
  if (V1_CONTROLLERS.every((c) => existsSync(join(fsRoot, c, 'cgroup.procs')))) return 'v1';
  return null;
}

/** Parses `cpu=2% mem=25M` style caps: {cpu: fraction of one core, memBytes}. */
export function parseCaps(text) {
  const out = {};
  for (const part of String(text).trim().split(/\s+/).filter(Boolean)) {
    let m;
    if ((m = /^cpu=([0-9]{1,3}(?:\.[0-9]{1,2})?)%$/.exec(part))) {
      out.cpu = Number(m[1]) / 100;
      if (!(out.cpu >= 0.01 && out.cpu <= 2))
        throw new Error(
          `caps: '${part}': cpu from 1% (the kernel's 1 ms minimum quota per 100 ms) to 200% (2 cores here)`,
        );
    } else if ((m = /^mem=([0-9]{1,6})([KMG])$/.exec(part))) {
      out.memBytes = Number(m[1]) * { K: 1024, M: 1024 ** 2, G: 1024 ** 3 }[m[2]];
      if (out.memBytes < 4 * 1024 ** 2)
        throw new Error(`caps: '${part}': at least 4M (an nginx worker alone needs a few MiB)`);
    } else {
      throw new Error(`caps: '${part}' is not cpu=<N>% or mem=<N>[KMG] (like cpu=2% mem=25M)`);
    }
  }
  return out;
}

const read = (path) => readFileSync(path, 'utf8').trim();
const readNumber = (path) => {
  try {
    return Number(read(path));
  } catch {
    return null;
  }
};
const fieldOf = (path, key) => {
  try {
    const line = read(path)
      .split('\n')
      .find((l) => l.startsWith(`${key} `));
    return line ? Number(line.split(/\s+/)[1]) : null;
  } catch {
    return null;
  }
};

/** The v1 cgroups of a service, one per controller, capped. */
function createV1(name, caps, fsRoot, quotaUs) {
  const paths = Object.fromEntries(V1_CONTROLLERS.map((c) => [c, join(fsRoot, c, name)]));
  // Where cpu and cpuacct are mounted together (cpu,cpuacct with two links to it), both names
  // are one directory: made once, removed once.
  const unique = [
    ...new Set(
      Object.values(paths).map((p) => {
        mkdirSync(p, { recursive: true });
        return realpathSync(p);
      }),
    ),
  ];
  if (quotaUs) {
    writeFileSync(join(paths.cpu, 'cpu.cfs_period_us'), String(PERIOD_US));
    writeFileSync(join(paths.cpu, 'cpu.cfs_quota_us'), String(quotaUs));
  }
  if (caps.memBytes) writeFileSync(join(paths.memory, 'memory.limit_in_bytes'), String(caps.memBytes));
  return {
    version: 'v1',
    paths: unique,
    procsFiles: unique.map((p) => join(p, 'cgroup.procs')),
    stats: () => ({ ...statsOf('v1', paths), memLimitBytes: caps.memBytes ?? null }),
    remove: () => removeAll(unique),
  };
}

/** v2: the parent hands cpu, memory and pids down to its children; an error says when it cannot. */
function delegateV2(fsRoot) {
  const wanted = ['cpu', 'memory', 'pids'];
  const control = join(fsRoot, 'cgroup.subtree_control');
  const enabled = existsSync(control) ? read(control).split(/\s+/) : [];
  const missing = wanted.filter((c) => !enabled.includes(c));
  if (!missing.length) return;
  try {
    writeFileSync(control, missing.map((c) => `+${c}`).join(' '));
  } catch (e) {
    throw new Error(
      `cgroup v2 at ${fsRoot} does not delegate ${missing.join(', ')} (${e.code || e.message}): run as root or under a delegated slice`,
      { cause: e },
    );
  }
}

/** The v2 cgroup of a service, capped. */
function createV2(name, caps, fsRoot, quotaUs) {
  delegateV2(fsRoot);
  const path = join(fsRoot, name);
  mkdirSync(path);
  if (quotaUs) writeFileSync(join(path, 'cpu.max'), `${quotaUs} ${PERIOD_US}`);
  if (caps.memBytes) {
    writeFileSync(join(path, 'memory.max'), String(caps.memBytes));
    // Docker's --memory without --memory-swap allows as much swap again; the seed's caps are
    // what the process gets, so none.
    if (existsSync(join(path, 'memory.swap.max'))) writeFileSync(join(path, 'memory.swap.max'), '0');
  }
  return {
    version: 'v2',
    paths: [path],
    procsFiles: [join(path, 'cgroup.procs')],
    stats: () => ({ ...statsOf('v2', path), memLimitBytes: caps.memBytes ?? null }),
    remove: () => removeAll([path]),
  };
}

/**
 * Makes the cgroup(s) of one capped service: {version, paths, procsFiles, stats(), remove()}.
 * `name` must be unique on the machine (the run's id and the service).
 */
export function createCgroup(name, caps, { fsRoot = '/sys/fs/cgroup', version = cgroupVersion(fsRoot) } = {}) {
  if (!version)
    throw new Error(`no cgroup hierarchy at ${fsRoot}: caps need cgroup v1 (cpu, cpuacct, memory, pids) or v2`);
  const quotaUs = caps.cpu ? Math.round(caps.cpu * PERIOD_US) : null;
  return version === 'v1' ? createV1(name, caps, fsRoot, quotaUs) : createV2(name, caps, fsRoot, quotaUs);
}

/**
 * What a cgroup has used: CPU seconds, memory now and its peak, OOM kills, PIDs, time throttled
 * by the quota; and its caps as the kernel holds them (cpuQuota in cores, memLimitBytes; null
 * where none). `where` is {cpu, cpuacct, memory, pids} directories (v1) or one directory (v2).
 */
export function statsOf(version, where) {
  if (version === 'v1') {
    const quota = readNumber(join(where.cpu, 'cpu.cfs_quota_us'));
    const period = readNumber(join(where.cpu, 'cpu.cfs_period_us'));
    const limit = readNumber(join(where.memory, 'memory.limit_in_bytes'));
    return {
      cpuS: (readNumber(join(where.cpuacct, 'cpuacct.usage')) ?? 0) / 1e9,
      memBytes: readNumber(join(where.memory, 'memory.usage_in_bytes')),
      memMaxBytes: readNumber(join(where.memory, 'memory.max_usage_in_bytes')),
      // An unlimited v1 memory cgroup reads the largest page-aligned number there is.
      memLimitBytes: limit !== null && limit < 2 ** 60 ? limit : null,
      cpuQuota: quota > 0 && period > 0 ? quota / period : null,
      oomKills: fieldOf(join(where.memory, 'memory.oom_control'), 'oom_kill') ?? 0,
      pids: readNumber(join(where.pids, 'pids.current')),
      throttledS: (fieldOf(join(where.cpu, 'cpu.stat'), 'throttled_time') ?? 0) / 1e9,
    };
  }
  let cpuMax = [];
  try {
    cpuMax = read(join(where, 'cpu.max')).split(/\s+/);
  } catch {
    /* no cpu controller */
  }
  const limit = readNumber(join(where, 'memory.max')); // 'max' reads NaN
  return {
    cpuS: (fieldOf(join(where, 'cpu.stat'), 'usage_usec') ?? 0) / 1e6,
    memBytes: readNumber(join(where, 'memory.current')),
    memMaxBytes: readNumber(join(where, 'memory.peak')),
    memLimitBytes: Number.isFinite(limit) ? limit : null,
    cpuQuota: cpuMax[0] && cpuMax[0] !== 'max' ? Number(cpuMax[0]) / Number(cpuMax[1]) : null,
    oomKills: fieldOf(join(where, 'memory.events'), 'oom_kill') ?? 0,
    pids: readNumber(join(where, 'pids.current')),
    throttledS: (fieldOf(join(where, 'cpu.stat'), 'throttled_usec') ?? 0) / 1e6,
  };
}

/** The lab's cgroups on this machine, {name, service, stats()}: named lab-<runner pid>-<service>. */
export function labCgroups({ fsRoot = '/sys/fs/cgroup', version = cgroupVersion(fsRoot) } = {}) {
  if (!version) return [];
  const base = version === 'v1' ? join(fsRoot, 'cpuacct') : fsRoot;
  let names = [];
  try {
    names = readdirSync(base).filter((n) => /^lab-[0-9]+-./.test(n));
  } catch {
    /* no hierarchy */
  }
  return names.map((name) => ({
    name,
    service: name.replace(/^lab-[0-9]+-/, ''),
    stats: () =>
      statsOf(
        version,
        version === 'v1'
          ? Object.fromEntries(V1_CONTROLLERS.map((c) => [c, join(fsRoot, c, name)]))
          : join(fsRoot, name),
      ),
  }));
}

/** rmdir each cgroup (the kernel refuses while a process is inside); returns those left. */
export function removeAll(paths) {
  const left = [];
  for (const p of paths) {
    try {
      if (existsSync(p)) rmdirSync(p);
    } catch (e) {
      left.push(`${p} (${e.code})`);
    }
  }
  return left;
}

/**
 * Lifts a cgroup's caps (CPU quota, memory limit), for a process already killed inside it: a
 * worker killed while it faulted against a 3 MiB limit at 1 % of a core stayed running, its
 * SIGKILL pending, throttled in every period, and its cgroup could not be removed.
 */
export function liftCaps(paths) {
  const lift = { 'cpu.cfs_quota_us': '-1', 'memory.limit_in_bytes': '-1', 'cpu.max': 'max', 'memory.max': 'max' };
  for (const p of paths) {
    for (const [file, value] of Object.entries(lift)) {
      try {
        if (existsSync(join(p, file))) writeFileSync(join(p, file), value);
      } catch {
        /* gone meanwhile */
      }
    }
  }
}

/**
 * Removes the cgroups once the processes in them are gone: the kernel refuses a cgroup with a
 * process inside, and a killed process leaves it a moment after it is reaped. If the first try
 * is refused, the caps are lifted so that a killed process can finish dying. Returns those left.
 */
export async function removeWhenEmpty(paths, { tries = 50, waitMs = 100 } = {}) {
  let left = removeAll(paths);
  if (left.length) liftCaps(paths);
  for (let i = 1; i < tries && left.length; i += 1) {
    await new Promise((r) => setTimeout(r, waitMs));
    left = removeAll(paths);
  }
  return left;
}

/**
 * The argv that starts `argv` inside the cgroups: a shell writes its own pid into each
 * cgroup.procs, then execs the command, so nothing of it runs outside (an nginx master's workers
 * are born inside).
 */
export function wrapInCgroup(argv, procsFiles) {
  const joins = procsFiles.map((f) => `echo $$ > '${f.replace(/'/g, "'\\''")}'`).join(' && ');
  return ['/bin/sh', '-c', `${joins} && exec "$@"`, 'lab-cgroup', ...argv];
}
