// CPU and memory caps (lab/stack/cgroups.mjs): the caps' syntax, both hierarchies' files against a
// fake /sys/fs/cgroup, and, where this machine lets the lab make cgroups (root, v1 or v2), a
// real one: a busy loop capped at 2 % of a core gets about 2 % and leaves nothing behind.
import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { parseCaps, cgroupVersion, createCgroup, wrapInCgroup, liftCaps } from '../lab/stack/cgroups.mjs';
import { needs } from './lib/needs.mjs';

test('caps are cpu=<N>% and mem=<N>[KMG], within what a kernel and a worker allow', () => {
  assert.deepEqual(parseCaps('cpu=2% mem=25M'), { cpu: 0.02, memBytes: 25 * 1024 ** 2 });
  assert.deepEqual(parseCaps('cpu=1%'), { cpu: 0.01 });
  for (const bad of ['cpu=0.5%', 'cpu=2', 'mem=25MB', 'mem=1M', 'cpu=300%', 'ram=1G'])
    assert.throws(() => parseCaps(bad), /caps: /, bad);
});

test('v1: a directory per controller, quota over period, the memory limit, and the stats read back', () => {
  const root = mkdtempSync(join(tmpdir(), 'lab-cg1-'));
  try {
    for (const c of ['cpu', 'cpuacct', 'memory', 'pids']) {
      mkdirSync(join(root, c));
      writeFileSync(join(root, c, 'cgroup.procs'), '');
    }
    assert.equal(cgroupVersion(root), 'v1');
    const cg = createCgroup('lab-x-edge1', { cpu: 0.02, memBytes: 25 * 1024 ** 2 }, { fsRoot: root });
    assert.equal(readFileSync(join(root, 'cpu/lab-x-edge1/cpu.cfs_quota_us'), 'utf8'), '2000');
    assert.equal(readFileSync(join(root, 'cpu/lab-x-edge1/cpu.cfs_period_us'), 'utf8'), '100000');
    assert.equal(readFileSync(join(root, 'memory/lab-x-edge1/memory.limit_in_bytes'), 'utf8'), String(25 * 1024 ** 2));
    assert.equal(cg.procsFiles.length, 4);
    writeFileSync(join(root, 'cpuacct/lab-x-edge1/cpuacct.usage'), '1500000000\n');
    writeFileSync(join(root, 'memory/lab-x-edge1/memory.oom_control'), 'oom_kill_disable 0\nunder_oom 0\noom_kill 2\n');
    writeFileSync(join(root, 'pids/lab-x-edge1/pids.current'), '3\n');
    const s = cg.stats();
    assert.deepEqual([s.cpuS, s.oomKills, s.pids, s.memLimitBytes], [1.5, 2, 3, 25 * 1024 ** 2]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('v2: one directory, cpu.max and memory.max, controllers delegated by the parent', () => {
  const root = mkdtempSync(join(tmpdir(), 'lab-cg2-'));
  try {
    writeFileSync(join(root, 'cgroup.controllers'), 'cpu memory pids\n');
    writeFileSync(join(root, 'cgroup.subtree_control'), '');
    assert.equal(cgroupVersion(root), 'v2');
    const cg = createCgroup('lab-x-lb', { cpu: 0.01, memBytes: 15 * 1024 ** 2 }, { fsRoot: root });
    assert.equal(readFileSync(join(root, 'cgroup.subtree_control'), 'utf8'), '+cpu +memory +pids');
    assert.equal(readFileSync(join(root, 'lab-x-lb/cpu.max'), 'utf8'), '1000 100000');
    assert.equal(readFileSync(join(root, 'lab-x-lb/memory.max'), 'utf8'), String(15 * 1024 ** 2));
    writeFileSync(join(root, 'lab-x-lb/cpu.stat'), 'usage_usec 250000\nuser_usec 1\nthrottled_usec 40000\n');
    writeFileSync(join(root, 'lab-x-lb/memory.events'), 'low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n');
    const s = cg.stats();
    assert.deepEqual([s.cpuS, s.throttledS, s.oomKills], [0.25, 0.04, 1]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('lifting the caps of a cgroup whose killed process cannot finish dying: v1 and v2', () => {
  const root = mkdtempSync(join(tmpdir(), 'lab-cgl-'));
  try {
    mkdirSync(join(root, 'one'));
    for (const c of ['cpu', 'cpuacct', 'memory', 'pids']) {
      mkdirSync(join(root, 'one', c));
      writeFileSync(join(root, 'one', c, 'cgroup.procs'), '');
    }
    const v1 = createCgroup('lab-x-lb', { cpu: 0.01, memBytes: 15 * 1024 ** 2 }, { fsRoot: join(root, 'one') });
    liftCaps(v1.paths);
    assert.equal(readFileSync(join(root, 'one/cpu/lab-x-lb/cpu.cfs_quota_us'), 'utf8'), '-1');
    assert.equal(readFileSync(join(root, 'one/memory/lab-x-lb/memory.limit_in_bytes'), 'utf8'), '-1');
    mkdirSync(join(root, 'two'));
    writeFileSync(join(root, 'two', 'cgroup.controllers'), 'cpu memory pids\n');
    writeFileSync(join(root, 'two', 'cgroup.subtree_control'), '');
    const v2 = createCgroup('lab-x-lb', { cpu: 0.01, memBytes: 15 * 1024 ** 2 }, { fsRoot: join(root, 'two') });
    liftCaps(v2.paths);
    assert.equal(readFileSync(join(root, 'two/lab-x-lb/cpu.max'), 'utf8'), 'max');
    assert.equal(readFileSync(join(root, 'two/lab-x-lb/memory.max'), 'utf8'), 'max');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

// Why this process cannot make cgroups here (the tool these tests need), or null when it can.
const real = cgroupVersion();
const cannotMake = (() => {
  if (!real) return 'cgroups: no cgroup v1 or v2 hierarchy mounted';
  if (process.getuid?.() !== 0) return 'cgroups: only root makes them, and this is not root';
  try {
    createCgroup(`lab-probe-${process.pid}`, {}).remove();
    return null;
  } catch (e) {
    return `cgroups: making one failed (${e.message})`;
  }
})();
const CGROUPS_HINT = 'run as root on a machine with cgroups (CI runs privileged)';

test('a real cgroup: 2 % of a core for a busy loop, then nothing left', async (t) => {
  if (needs(t, cannotMake, CGROUPS_HINT)) return;
  const cg = createCgroup(`lab-test-${process.pid}`, { cpu: 0.02, memBytes: 32 * 1024 ** 2 });
  const child = spawn(
    ...(([cmd, ...args]) => [cmd, args])(wrapInCgroup(['/bin/sh', '-c', 'while :; do :; done'], cg.procsFiles)),
    { stdio: 'ignore' },
  );
  await new Promise((r) => setTimeout(r, 1500));
  const s = cg.stats();
  child.kill('SIGKILL');
  await new Promise((r) => child.on('exit', r));
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(cg.remove().length, 0, 'removed once its process is gone');
  for (const p of cg.paths) assert.equal(existsSync(p), false);
  // 1.5 s at 2 ms per 100 ms is 30 ms; the first period may run a full quota before throttling.
  assert.ok(s.cpuS > 0.005 && s.cpuS < 0.1, `used ${s.cpuS} s of CPU in 1.5 s`);
  assert.equal(s.pids, 1);
});

test("a capped service of a stack runs inside its cgroup, which goes with the stack, or with a dead run's reaping", async (t) => {
  if (needs(t, cannotMake, CGROUPS_HINT)) return;
  const { loadTopology } = await import('../lab/stack/topology.mjs');
  const { startStack, stopStack } = await import('../lab/stack/start-stop.mjs');
  const { StateFile, reapStale } = await import('../lab/stack/procs.mjs');
  const dir = mkdtempSync(join(tmpdir(), 'lab-capped-'));
  try {
    const port = 18990 + (process.pid % 9);
    writeFileSync(
      join(dir, 'compose.yml'),
      `services:
  capped:
    image: node:20
    profiles: [capped]
    x-native:
      ports: { http: ${port} }
      caps: "{{caps}}"
      command: [node, -e, "require('http').createServer((q, s) => s.end('ok')).listen(${port}, '127.0.0.1')"]
      ready: "http://127.0.0.1:${port}/"
`,
    );
    const topology = loadTopology(join(dir, 'compose.yml'));
    const state = new StateFile(join(dir, 'state'), 'run');
    const args = {
      root: dir,
      env: process.env,
      topology,
      profile: 'capped',
      policy: { caps: 'cpu=5% mem=64M' },
      targets: [],
      tmpDir: join(dir, 'tmp'),
      logDir: join(dir, 'logs'),
      state,
    };
    const stack = await startStack(args);
    const [proc] = stack.procs;
    const inside = readFileSync(`/proc/${proc.pid}/cgroup`, 'utf8');
    assert.match(inside, new RegExp(`lab-${process.pid}-capped`), 'the process was born in its cgroup');
    assert.equal(proc.cgroup.stats().memLimitBytes, 64 * 1024 ** 2);
    await stopStack(stack);
    for (const p of proc.cgroup.paths) assert.equal(existsSync(p), false, `${p} removed with the stack`);

    // A run that died: its state file names cgroups; reaping removes them.
    const orphan = createCgroup(`lab-orphan-${process.pid}`, { cpu: 0.05 });
    const dead = new StateFile(join(dir, 'state'), 'dead');
    dead.data.owner = 999_999_999;
    dead.addCgroups(orphan.paths);
    await reapStale(join(dir, 'state'));
    for (const p of orphan.paths) assert.equal(existsSync(p), false, `${p} reaped`);
    state.remove();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
