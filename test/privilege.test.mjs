// Least privilege natively (issue 17): a root runner starts every service as the system user
// `lab` (lab/stack/privilege.mjs), after joining it to its cgroup as root; what a service writes
// (its folder of the run, its data) is handed to it, the rest stays root's; a runner that is not
// root changes nothing. And lab/install.sh masks Debian's own services of the stores, nginx and
// epmd, idempotently (`lab/install.sh units` on a scratch tree: LAB_SYSROOT).
// Unit-level parts run anywhere; the parts that start a real process need root, the `lab` user
// (`./labw setup`) and, for the cgroup, a machine that lets root make cgroups: skipped locally
// without them, failed under CI (test/lib/needs.mjs).
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dropTo, giveTree, passwdEntry, serviceLaunch, serviceUser, SERVICE_USER } from '../lab/stack/privilege.mjs';
import { cgroupVersion, createCgroup, removeWhenEmpty } from '../lab/stack/cgroups.mjs';
import { freePort, listenerIsRecorded, spawnLogged, startTicks, stopProcess } from '../lab/stack/procs.mjs';
import { needs } from './lib/needs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const isRoot = process.getuid?.() === 0;
const labUser = (() => {
  try {
    return serviceUser({ uid: 0 });
  } catch {
    return null;
  }
})();
const NOT_ROOT = 'privileges: only a root runner drops them, and this is not root';
const NO_USER = `privileges: no user '${SERVICE_USER}' here`;
const HINT = "run as root after './labw setup' (lab/install.sh makes the user; CI runs as root)";

/** Uid and Gid lines of /proc/<pid>/status: [real, effective, saved, filesystem]. */
const ids = (pid) => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name) =>
    status
      .match(new RegExp(`^${name}:\\s+(.*)$`, 'm'))[1]
      .trim()
      .split(/\s+/)
      .map(Number);
  return {
    uid: field('Uid'),
    gid: field('Gid'),
    capEff: status.match(/^CapEff:\s+(\S+)/m)[1],
    noNewPrivs: status.match(/^NoNewPrivs:\s+(\d)/m)[1],
  };
};
async function answers(url, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      return res.status;
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

test('who the services run as: nobody else when not root; the lab user when root, or a refusal naming setup', () => {
  assert.equal(
    serviceUser({ uid: 1000, lookup: () => assert.fail('not looked up') }),
    null,
    'a developer: services run as the invoking user',
  );
  assert.deepEqual(serviceUser({ uid: 0, lookup: () => ({ name: 'lab', uid: 999, gid: 995, home: '/nonexistent' }) }), {
    name: 'lab',
    uid: 999,
    gid: 995,
    home: '/nonexistent',
  });
  assert.throws(
    () => serviceUser({ uid: 0, lookup: () => null }),
    /system user 'lab', which does not exist: run '\.\/labw setup'/,
  );
  assert.throws(
    () => serviceUser({ uid: 0, lookup: () => ({ name: 'lab', uid: 0, gid: 0 }) }),
    /uid 0: it must be an unprivileged user/,
  );
  assert.deepEqual(
    passwdEntry('root:x:0:0:root:/root:/bin/bash\nlab:x:999:995::/nonexistent:/usr/sbin/nologin\n', 'lab'),
    { name: 'lab', uid: 999, gid: 995, home: '/nonexistent' },
  );
  assert.equal(passwdEntry('labx:x:1:1::/:/bin/sh\n', 'lab'), null);
});

test("a service's argv and env: cgroup join as root first, then setpriv to the user, then the service; unchanged when not root", () => {
  const user = { name: 'lab', uid: 999, gid: 995 };
  const argv = ['node', 'servers/node/hello.js', '--port', '18081'];
  const env = { PATH: '/usr/bin', HOME: '/root', USER: 'root' };

  const plain = serviceLaunch({ argv, env, user: null, procsFiles: null, home: '/tmp/x' });
  assert.deepEqual(plain.argv, argv, 'not root: the command as it is');
  assert.equal(plain.env, env, 'not root: the environment as it is');

  const dropped = serviceLaunch({ argv, env, user, home: '/run/x/burst-hello' });
  assert.deepEqual(dropped.argv, [
    'setpriv',
    '--reuid=999',
    '--regid=995',
    '--clear-groups',
    '--inh-caps=-all',
    '--bounding-set=-all',
    '--no-new-privs',
    '--',
    ...argv,
  ]);
  assert.deepEqual(dropped.env, { PATH: '/usr/bin', HOME: '/run/x/burst-hello', USER: 'lab', LOGNAME: 'lab' });

  const capped = serviceLaunch({
    argv,
    env,
    user,
    procsFiles: ['/sys/fs/cgroup/cpu/lab-1-edge1/cgroup.procs', '/sys/fs/cgroup/memory/lab-1-edge1/cgroup.procs'],
    home: '/h',
  });
  const [sh, c, script, name, ...rest] = capped.argv;
  assert.deepEqual([sh, c, name], ['/bin/sh', '-c', 'lab-cgroup']);
  assert.match(
    script,
    /^echo \$\$ > '\/sys\/fs\/cgroup\/cpu\/lab-1-edge1\/cgroup\.procs' && echo \$\$ > '\/sys\/fs\/cgroup\/memory\/lab-1-edge1\/cgroup\.procs' && exec "\$@"$/,
    'the shell joins (as root), then execs',
  );
  assert.deepEqual(
    rest,
    dropTo(user, argv),
    'what it execs drops to the user, then execs the service: one pid throughout',
  );
});

test("giving a store's data to the service user chowns links themselves, never what they point at", (t) => {
  if (needs(t, isRoot ? null : NOT_ROOT, HINT)) return;
  const dir = mkdtempSync(join(tmpdir(), 'lab-give-'));
  try {
    const outside = join(dir, 'outside');
    writeFileSync(outside, "root's");
    mkdirSync(join(dir, 'data', 'wal'), { recursive: true });
    writeFileSync(join(dir, 'data', 'wal', '0001'), 'x');
    symlinkSync(outside, join(dir, 'data', 'planted'));
    const user = { name: 'someone', uid: 54321, gid: 54322 };
    giveTree(user, join(dir, 'data'));
    for (const p of ['data', 'data/wal', 'data/wal/0001', 'data/planted']) {
      const st = lstatSync(join(dir, p));
      assert.deepEqual([st.uid, st.gid], [54321, 54322], p);
    }
    assert.deepEqual(
      [statSync(outside).uid, statSync(outside).gid],
      [0, 0],
      "the file the link points at stays root's",
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// Why root cannot make a cgroup here, or null (as test/cgroups.test.mjs asks).
const cannotMakeCgroup = (() => {
  if (!isRoot) return 'cgroups: only root makes them';
  if (!cgroupVersion()) return 'cgroups: no cgroup v1 or v2 hierarchy mounted';
  try {
    createCgroup(`lab-probe-${process.pid}`, {}).remove();
    return null;
  } catch (e) {
    return `cgroups: making one failed (${e.message})`;
  }
})();

test('a real service (servers/node/hello.js) started as the lab starts a capped one: in its cgroup, as the lab user, with no capabilities', async (t) => {
  if (needs(t, !isRoot ? NOT_ROOT : !labUser ? NO_USER : cannotMakeCgroup, HINT)) return;
  const dir = mkdtempSync(join(tmpdir(), 'lab-priv-'));
  const cg = createCgroup(`lab-${process.pid}-privtest`, { cpu: 0.5, memBytes: 128 * 1024 ** 2 });
  let proc;
  try {
    const port = await freePort();
    const { argv, env } = serviceLaunch({
      argv: ['node', 'servers/node/hello.js', '--port', String(port), '--name', 'privtest'],
      env: process.env,
      user: labUser,
      procsFiles: cg.procsFiles,
      home: dir,
    });
    proc = spawnLogged('privtest', argv, { cwd: root, env, logFile: join(dir, 'privtest.log') });
    assert.equal(
      await answers(`http://127.0.0.1:${port}/`),
      200,
      `it serves (log: ${readFileSync(join(dir, 'privtest.log'), 'utf8')})`,
    );
    const seen = ids(proc.pid);
    assert.deepEqual(seen.uid, Array(4).fill(labUser.uid), 'real, effective, saved and filesystem uid: lab');
    assert.deepEqual(seen.gid, Array(4).fill(labUser.gid), 'and its gid');
    assert.equal(Number.parseInt(seen.capEff, 16), 0, 'no effective capability');
    assert.equal(seen.noNewPrivs, '1', 'no setuid program gets root back');
    assert.match(
      readFileSync(`/proc/${proc.pid}/cmdline`, 'utf8'),
      /^node\0servers\/node\/hello\.js\0/,
      'the spawned pid is the service itself (sh and setpriv exec)',
    );
    const inside = readFileSync(`/proc/${proc.pid}/cgroup`, 'utf8');
    assert.match(inside, new RegExp(`lab-${process.pid}-privtest`), `in its cgroup:\n${inside}`);
    for (const f of cg.procsFiles)
      assert.ok(readFileSync(f, 'utf8').split('\n').includes(String(proc.pid)), `${f} lists it`);
    // The user cannot leave it: the cgroup's files are root's.
    const escape = spawnSync(
      'setpriv',
      [
        ...dropTo(labUser, ['sh', '-c', `echo $$ > '${join(dirname(cg.procsFiles[0]), '..', 'cgroup.procs')}'`]).slice(
          1,
        ),
      ],
      { encoding: 'utf8' },
    );
    assert.notEqual(escape.status, 0, 'the lab user may not move itself out of its cgroup');
  } finally {
    if (proc) await stopProcess(proc, 2000);
    await removeWhenEmpty(cg.paths);
    rmSync(dir, { recursive: true, force: true });
  }
});

test("startStack as root: the service, its validation and its writes are the lab user's; its configs and everything else stay root's", async (t) => {
  if (needs(t, !isRoot ? NOT_ROOT : !labUser ? NO_USER : null, HINT)) return;
  const { loadTopology } = await import('../lab/stack/topology.mjs');
  const { startStack, stopStack } = await import('../lab/stack/start-stop.mjs');
  const { StateFile } = await import('../lab/stack/procs.mjs');
  const dir = mkdtempSync(join(tmpdir(), 'lab-privstack-'));
  chmodSync(dir, 0o755); // the checkout must be readable to the user (a real one is)
  let stack;
  try {
    const port = await freePort();
    mkdirSync(join(dir, 'conf'));
    writeFileSync(join(dir, 'conf', 'svc.conf'), 'port {{self.http}}\n');
    // A store's data left by root before the lab dropped privileges.
    mkdirSync(join(dir, '.lab', 'data', 'svc', 'old'), { recursive: true });
    writeFileSync(join(dir, '.lab', 'data', 'svc', 'old', 'chunk'), 'x');
    // The service writes a file in its folder and one in its data, and serves.
    const serve = `const fs = require('fs'); fs.writeFileSync(process.argv[1] + '/svc.pid', String(process.pid)); fs.writeFileSync(process.argv[2] + '/new', 'y'); require('http').createServer((q, s) => s.end('ok')).listen(${port}, '127.0.0.1')`;
    writeFileSync(
      join(dir, 'compose.yml'),
      `services:
  svc:
    image: node:20
    profiles: [privtest]
    x-native:
      ports: { http: ${port} }
      data: true
      configs: { conf: conf/svc.conf }
      prepare: [sh, -c, 'id -u > prepared-by']
      validate: [sh, -c, 'id -u > "{{prefix}}/validated-by"']
      command: [node, -e, ${JSON.stringify(serve)}, "{{prefix}}", "{{data}}"]
      ready: "http://127.0.0.1:${port}/"
`,
    );
    const topology = loadTopology(join(dir, 'compose.yml'));
    const state = new StateFile(join(dir, 'state'), 'run');
    const tmp = join(dir, '.lab', 'tmp', 'run');
    stack = await startStack({
      root: dir,
      env: process.env,
      topology,
      profile: 'privtest',
      policy: {},
      targets: [],
      tmpDir: tmp,
      logDir: join(dir, 'logs'),
      state,
    });
    const [proc] = stack.procs;
    assert.deepEqual(ids(proc.pid).uid, Array(4).fill(labUser.uid), 'the service runs as lab');
    const prefix = join(tmp, 'svc');
    const owner = (p) => statSync(join(dir, p)).uid;
    assert.equal(owner('.lab/tmp/run/svc'), labUser.uid, 'its own folder is its');
    assert.equal(owner('.lab/tmp/run/svc/svc.conf'), 0, "its rendered config stays root's, read-only to it");
    assert.equal(readFileSync(join(prefix, 'svc.conf'), 'utf8'), `port ${port}\n`);
    assert.equal(
      readFileSync(join(prefix, 'validated-by'), 'utf8').trim(),
      String(labUser.uid),
      'its validation ran as lab too',
    );
    assert.equal(
      readFileSync(join(dir, 'prepared-by'), 'utf8').trim(),
      '0',
      'its prepare step ran as the runner (root), in the checkout',
    );
    assert.equal(readFileSync(join(prefix, 'svc.pid'), 'utf8'), String(proc.pid), 'it wrote in its folder');
    for (const p of ['.lab/data/svc', '.lab/data/svc/old', '.lab/data/svc/old/chunk', '.lab/data/svc/new'])
      assert.equal(owner(p), labUser.uid, `${p} is its`);
    for (const p of ['.lab', '.lab/data', '.lab/tmp/run', 'logs', 'logs/svc.log', 'conf/svc.conf'])
      assert.equal(owner(p), 0, `${p} stays root's`);
    assert.equal(
      readdirSync(join(dir, 'config', 'svc')).join(),
      'svc.conf',
      'the config copied for the run is the rendered one alone',
    );
  } finally {
    if (stack) await stopStack(stack);
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a listener on a store's port is the lab's only if it is a process a state file recorded, still the same process", async () => {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'lab-listener-'));
  const proc = spawnLogged(
    'listener',
    ['node', '-e', `require('http').createServer((q, s) => s.end()).listen(${port}, '127.0.0.1')`],
    { cwd: root, env: process.env, logFile: join(dir, 'log') },
  );
  const foreign = createServer();
  try {
    await answers(`http://127.0.0.1:${port}/`);
    const recorded = [{ name: 'prometheus', pid: proc.pid, start: startTicks(proc.pid) }];
    assert.equal(listenerIsRecorded(port, recorded), true, 'the recorded process');
    assert.equal(
      listenerIsRecorded(port, [{ ...recorded[0], start: '1' }]),
      false,
      'a pid recorded for another process (other start ticks)',
    );
    assert.equal(listenerIsRecorded(port, []), false, 'recorded by no one');
    const other = await freePort();
    await new Promise((r) => foreign.listen(other, '127.0.0.1', r));
    assert.equal(listenerIsRecorded(other, recorded), false, 'a foreign listener (this test process) on another port');
    assert.equal(listenerIsRecorded(await freePort(), recorded), false, 'no listener at all');
  } finally {
    foreign.close();
    await stopProcess(proc, 2000);
    rmSync(dir, { recursive: true, force: true });
  }
});

// --- lab/install.sh units: Debian's units masked, on a scratch tree -----------------------
const UNITS = {
  'influxdb.service': '[Install]\nWantedBy=multi-user.target\nAlias=influxd.service\n',
  'prometheus.service': '[Install]\nWantedBy=multi-user.target\n',
  'prometheus-process-exporter.service': '[Install]\nWantedBy=multi-user.target\n',
  'nginx.service': '[Install]\nWantedBy=multi-user.target\n',
  'epmd.service': '[Install]\nAlso=epmd.socket\nWantedBy=multi-user.target\n',
  'epmd.socket': '[Install]\nWantedBy=sockets.target\n',
};

/** A Debian-like tree after `apt-get install`: the units in /lib, enabled by links in /etc. */
function debianTree() {
  const sys = mkdtempSync(join(tmpdir(), 'lab-sysroot-'));
  const lib = join(sys, 'lib/systemd/system');
  const etc = join(sys, 'etc/systemd/system');
  mkdirSync(lib, { recursive: true });
  for (const w of ['multi-user.target.wants', 'sockets.target.wants']) mkdirSync(join(etc, w), { recursive: true });
  for (const [unit, text] of Object.entries(UNITS)) {
    writeFileSync(join(lib, unit), `[Unit]\nDescription=${unit}\n[Service]\nExecStart=/bin/true\n${text}`);
    symlinkSync(
      `/lib/systemd/system/${unit}`,
      join(etc, unit.endsWith('.socket') ? 'sockets.target.wants' : 'multi-user.target.wants', unit),
    );
  }
  symlinkSync('/lib/systemd/system/influxdb.service', join(etc, 'influxd.service'));
  // A unit of the machine's own, and one of a package the lab does not install: both left alone.
  writeFileSync(
    join(lib, 'postgresql.service'),
    '[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n',
  );
  symlinkSync('/lib/systemd/system/postgresql.service', join(etc, 'multi-user.target.wants', 'postgresql.service'));
  return { sys, etc };
}

/** Every link and file under `dir`, as "path -> target". */
const listing = (dir, base = dir) =>
  readdirSync(dir)
    .sort()
    .flatMap((n) => {
      const p = join(dir, n);
      const st = lstatSync(p);
      if (st.isDirectory()) return listing(p, base);
      return [`${p.slice(base.length + 1)}${st.isSymbolicLink() ? ` -> ${readlinkSync(p)}` : ''}`];
    });

/** The installer's system part only, on `sys`; with PATH from `path` (a systemctl that fails, or none). */
const units = (sys, path = process.env.PATH) =>
  spawnSync('bash', [join(root, 'lab/install.sh'), 'units'], {
    encoding: 'utf8',
    env: { ...process.env, PATH: path, LAB_SYSROOT: sys },
  });

function assertMasked(etc) {
  for (const unit of Object.keys(UNITS)) assert.equal(readlinkSync(join(etc, unit)), '/dev/null', `${unit} masked`);
  assert.equal(existsSync(join(etc, 'influxd.service')), false, 'its alias gone');
  // (systemctl removes a .wants folder it empties; the links made by hand leave it.)
  const wants = (w) => (existsSync(join(etc, w)) ? readdirSync(join(etc, w)) : []);
  assert.deepEqual(
    wants('multi-user.target.wants'),
    ['postgresql.service'],
    "only what is not the lab's stays enabled",
  );
  assert.deepEqual(wants('sockets.target.wants'), []);
}

test("lab/install.sh masks Debian's units of the stores, nginx and epmd (systemctl offline); a second run changes nothing and says nothing", (t) => {
  if (
    needs(
      t,
      spawnSync('systemctl', ['--version']).error ? 'systemctl is not installed' : null,
      'Debian has it (package systemd)',
    )
  )
    return;
  const { sys, etc } = debianTree();
  try {
    const first = units(sys);
    assert.equal(first.status, 0, first.stderr);
    for (const unit of Object.keys(UNITS))
      assert.match(first.stderr, new RegExp(`masking Debian's ${unit.replace('.', '\\.')}`));
    assertMasked(etc);
    const before = listing(etc);
    const second = units(sys);
    assert.equal(second.status, 0, second.stderr);
    assert.equal(second.stderr, '', 'nothing to do the second time');
    assert.deepEqual(listing(etc), before, 'and nothing changed');
  } finally {
    rmSync(sys, { recursive: true, force: true });
  }
});

test("lab/install.sh masks them without systemctl too (links made by hand), idempotently; a unit file of the machine's own is left", () => {
  const { sys, etc } = debianTree();
  const bin = mkdtempSync(join(tmpdir(), 'lab-nosystemctl-'));
  try {
    writeFileSync(join(bin, 'systemctl'), '#!/bin/sh\necho "System has not been booted with systemd" >&2\nexit 1\n', {
      mode: 0o755,
    });
    const path = `${bin}:${process.env.PATH}`;
    // An administrator's own nginx.service in /etc: not replaced by a mask.
    rmSync(join(etc, 'multi-user.target.wants', 'nginx.service'));
    writeFileSync(join(etc, 'nginx.service'), '[Service]\nExecStart=/usr/sbin/nginx\n');
    const first = units(sys, path);
    assert.equal(first.status, 0, first.stderr);
    assert.match(first.stderr, /not masking nginx\.service: .* a unit file of this machine's own/);
    assert.equal(readFileSync(join(etc, 'nginx.service'), 'utf8'), '[Service]\nExecStart=/usr/sbin/nginx\n');
    rmSync(join(etc, 'nginx.service'));
    symlinkSync('/dev/null', join(etc, 'nginx.service'));
    assertMasked(etc);
    const before = listing(etc);
    const second = units(sys, path);
    assert.equal(second.status, 0, second.stderr);
    assert.equal(second.stderr, '');
    assert.deepEqual(listing(etc), before);
  } finally {
    rmSync(sys, { recursive: true, force: true });
    rmSync(bin, { recursive: true, force: true });
  }
});

test('a checkout the service user cannot enter: the services run as the runner, and it is said with the folder and the fix', async () => {
  const { mkdtempSync, mkdirSync, chmodSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { stackUser } = await import('../lab/stack/privilege.mjs');
  const base = mkdtempSync(join(tmpdir(), 'lab-reach-'));
  try {
    const closed = join(base, 'home');
    mkdirSync(join(closed, 'checkout'), { recursive: true });
    chmodSync(base, 0o755);
    const user = { name: 'lab', uid: 4242, gid: 4242 };
    const said = [];
    const lookup = () => user;
    chmodSync(closed, 0o755);
    assert.equal(
      stackUser(join(closed, 'checkout'), (m) => said.push(m), { uid: 0, lookup }),
      user,
      'an open path: the services run as lab',
    );
    chmodSync(closed, 0o700);
    assert.equal(
      stackUser(join(closed, 'checkout'), (m) => said.push(m), { uid: 0, lookup }),
      null,
    );
    assert.match(
      said.join('\n'),
      new RegExp(`services run as root; user lab cannot enter ${closed} \\(mode 700\\).*chmod o\\+x`),
    );
    assert.equal(
      stackUser(join(closed, 'checkout'), () => {}, { uid: 1000, lookup }),
      null,
      'not root: as the runner, silently',
    );
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});
