// Runs that cannot step on each other (issue 17): run ids unique to the millisecond and pid, one
// run at a time (the run lock, which dies with its holder), `up` and `metrics up|down` refused
// beside a live run and the stores saying who started them, `clean` only with --yes and never
// under a live run, `down` never signalling a reused pid, state files written whole.
// Everything happens in a temporary root; the only processes are this file's own (a holder run,
// `sleep`), each killed at the end of its test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import {
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
// Namespaces, not named imports: a missing export fails its test, not the whole file.
import * as open from '../lab/run/open.mjs';
import * as runs from '../lab/results/runs.mjs';
import * as procs from '../lab/stack/procs.mjs';
import * as metricsCommand from '../lab/cli/metrics.mjs';
import clean from '../lab/cli/clean.mjs';
import down from '../lab/cli/down.mjs';
import up from '../lab/cli/up.mjs';
import { loadTopology } from '../lab/stack/topology.mjs';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const quiet = () => {};
// Stores that are never up (nothing listens on port 1): `clean` and `metrics` ask.
const NO_STORES = { services: { influxdb: { ports: { http: 1 } }, prometheus: { ports: { http: 1 } } } };

/** A lab root of its own: results/ with its README, a keeper entry that starts nothing, a ctx. */
function lab(t) {
  const root = mkdtempSync(join(tmpdir(), 'lab-exclusive-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'results'));
  writeFileSync(join(root, 'results', 'README.md'), 'runs\n');
  // Were `up` or `metrics up` to reach their keeper, it would say so and start nothing.
  writeFileSync(join(root, 'entry.mjs'), "console.log('the test keeper: started nothing'); process.exit(3);\n");
  const lines = [];
  const ctx = {
    root,
    stateDir: join(root, '.lab', 'state'),
    say: (m) => lines.push(m),
    topology: () => NO_STORES,
    entry: join(root, 'entry.mjs'),
  };
  return { root, stateDir: ctx.stateDir, ctx, lines };
}

/**
 * A live run in another process (`holder.mjs test smoke --quick`), as a suite run holds one; stop()
 * ends it cleanly.
 */
async function holder(t, root) {
  const file = join(root, 'holder.mjs');
  writeFileSync(
    file,
    [
      `import { openRun } from ${JSON.stringify(pathToFileURL(join(repo, 'lab', 'run', 'open.mjs')).href)};`,
      "const run = await openRun(process.env.LAB_ROOT, 'smoke', { kind: 'test', say: () => {} });",
      "process.on('SIGTERM', () => { run.close(); process.exit(0); });",
      'console.log(run.id);',
      'setInterval(() => {}, 60_000);',
    ].join('\n'),
  );
  const child = spawn(process.execPath, [file, 'test', 'smoke', '--quick'], {
    env: { ...process.env, LAB_ROOT: root },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = once(child, 'exit');
  t.after(() => child.kill('SIGKILL'));
  const [id] = await Promise.race([
    once(createInterface({ input: child.stdout }), 'line'),
    exited.then(() => {
      throw new Error('the holder run exited');
    }),
  ]);
  return {
    child,
    id,
    stop: async (sig = 'SIGTERM') => {
      child.kill(sig);
      await exited;
    },
  };
}

/** An unrelated live process: `sleep 30`, killed at the end of the test. */
async function sleeper(t) {
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  t.after(() => child.kill('SIGKILL'));
  await once(child, 'spawn');
  return child;
}

/** Still running, not signalled (checked after a pause, once node would have seen it exit). */
async function stillRunning(child) {
  await new Promise((r) => setTimeout(r, 200));
  return child.exitCode === null && child.signalCode === null;
}

const liveRunError = (h) =>
  new RegExp(
    `run ${h.id} is live \\(pid ${h.child.pid}, 'holder\\.mjs test smoke --quick', since \\d{4}-\\d\\d-\\d\\dT`,
  );

test('two runs in the same second get their own id, results folder, state file and scratch folder', async (t) => {
  const { root } = lab(t);
  t.mock.timers.enable({ apis: ['Date'], now: Date.UTC(2026, 10, 23, 9, 10, 50, 123) });
  const a = await open.openRun(root, 'smoke', { kind: 'test', say: quiet });
  a.close();
  t.mock.timers.tick(1); // the next millisecond, the same second
  const b = await open.openRun(root, 'smoke', { kind: 'test', say: quiet });
  b.close();
  assert.notEqual(a.id, b.id);
  for (const k of ['dir', 'tmp']) assert.notEqual(a[k], b[k], k);
  assert.notEqual(a.state.path, b.state.path);
  // The millisecond and the pid: two processes in the same millisecond differ by their pids.
  assert.equal(a.id, `20261123-091050-123-${process.pid}-smoke`);
  assert.equal(b.id, `20261123-091050-124-${process.pid}-smoke`);
  // One process opening two runs in the same millisecond is refused: a folder is never shared.
  await assert.rejects(
    open.openRun(root, 'smoke', { kind: 'test', say: quiet }),
    /results\/20261123-091050-124-\d+-smoke exists already/,
  );
});

test("one testid form, beside stamp(): new ids and older runs' ids both read, never taken for each other", () => {
  assert.ok(open.TESTID instanceof RegExp, 'open.mjs holds the form');
  assert.equal(runs.TESTID, open.TESTID, 'results/runs.mjs checks with the same one');
  const fresh = `${open.stamp()}-spike-quick5`;
  for (const id of ['20261123-091050-spike-quick5', fresh, '20261123-091050-123-4567-verdict-20261123-091050-smoke'])
    assert.equal(runs.checkTestid(id), id);
  // A millisecond without a pid, a name that starts with a digit, no name: neither form.
  for (const bad of [
    '20261123-091050-123-smoke',
    '20261123-091050-1234-5-smoke',
    '20261123-091050-123-4567-',
    '20261123-091050-123-4567',
  ])
    assert.throws(() => runs.checkTestid(bad), /not a testid: .*the form is YYYYMMDD-HHMMSS-mmm-PID-name/, bad);
});

test('a second run while one is live is refused at once, naming it (pid, command, since), and makes nothing', async (t) => {
  const { root } = lab(t);
  const h = await holder(t, root);
  await assert.rejects(open.openRun(root, 'spike', { kind: 'test', say: quiet }), liveRunError(h));
  const entries = (d) => readdirSync(join(root, d)).filter((f) => !['README.md', 'latest'].includes(f));
  assert.deepEqual(entries('results'), [h.id]);
  assert.deepEqual(entries('.lab/tmp'), [h.id]);
  assert.deepEqual(entries('.lab/state'), [`${h.id}.json`]);
  // Its end (close(), where its scratch folder goes) releases it: the next run starts.
  await h.stop();
  const next = await open.openRun(root, 'spike', { kind: 'test', say: quiet });
  next.close();
});

test('the lock does not outlive its holder: one killed outright, or whose pid now names another process, is dead', async (t) => {
  const { root } = lab(t);
  const { lockDir } = await import('../lab/run/lock.mjs');
  const h = await holder(t, root);
  const [name] = readdirSync(lockDir(root));
  const claim = JSON.parse(readFileSync(join(lockDir(root), name), 'utf8'));
  assert.equal(claim.pid, h.child.pid);
  await h.stop('SIGKILL'); // no close(): its claim, state file and scratch folder stay behind
  const a = await open.openRun(root, 'smoke', { kind: 'test', say: quiet });
  assert.ok(!existsSync(join(root, '.lab', 'tmp', h.id)), 'what the dead run left was reaped');
  a.close();
  // The dead run's claim again, its pid now given to an unrelated process: other start ticks.
  const other = await sleeper(t);
  writeFileSync(join(lockDir(root), name), JSON.stringify({ ...claim, pid: other.pid }));
  const b = await open.openRun(root, 'smoke', { kind: 'test', say: quiet });
  b.close();
  assert.deepEqual(readdirSync(lockDir(root)), [], 'the dead claim is gone, and so is each released one');
  assert.ok(await stillRunning(other), 'the process on the reused pid was not signalled');
});

test('beside a live run `up` and `metrics up|down` are refused, naming it; the stores say who started them', async (t) => {
  const { root, stateDir, ctx } = lab(t);
  const h = await holder(t, root);
  await assert.rejects(up(['burst'], ctx), liveRunError(h));
  await assert.rejects(metricsCommand.default(['up'], ctx), liveRunError(h));
  await assert.rejects(metricsCommand.default(['down'], ctx), liveRunError(h));
  await h.stop();
  // Kept by `metrics up` (its keeper's state), or started by a run for itself (in the run's state).
  const topology = loadTopology(join(repo, 'docker-compose.yml'));
  const p = await sleeper(t);
  const start = procs.startTicks(p.pid);
  writeFileSync(
    join(stateDir, 'up-metrics.json'),
    JSON.stringify({ owner: p.pid, ownerStart: start, kind: 'metrics', procs: [] }),
  );
  assert.deepEqual(metricsCommand.storesOwner(stateDir, topology), { kept: true, says: "kept by './labw metrics up'" });
  rmSync(join(stateDir, 'up-metrics.json'));
  writeFileSync(
    join(stateDir, 'r1.json'),
    JSON.stringify({ owner: p.pid, ownerStart: start, kind: 'test', procs: [{ name: 'influxdb', pid: p.pid, start }] }),
  );
  assert.deepEqual(metricsCommand.storesOwner(stateDir, topology), {
    kept: false,
    run: 'r1',
    says: 'started by run r1 for itself; they stop when it ends',
  });
});

test('clean lists what it would delete and deletes only with --yes; refused while a run is live, naming it', async (t) => {
  const { root, ctx, lines } = lab(t);
  const kept = ['.lab/data/influxdb/x', 'results/20261123-091050-smoke/run.json', '.lab/rendered/burst/nginx.conf'];
  for (const f of kept) {
    mkdirSync(dirname(join(root, f)), { recursive: true });
    writeFileSync(join(root, f), 'x');
  }
  assert.equal(await clean([], ctx), 1);
  for (const f of kept) assert.ok(existsSync(join(root, f)), `${f} is still there`);
  assert.match(
    lines.join('\n'),
    /would delete .*\.lab\/data \(.*\n.*would delete .*results\/20261123-091050-smoke .*\n.*would delete .*\.lab\/rendered .*\nnothing deleted: '\.\/labw clean --yes' deletes the 3 above/,
  );
  await assert.rejects(clean(['--force'], ctx), /takes only --yes; got '--force'/);
  const h = await holder(t, root);
  await assert.rejects(clean(['--yes'], ctx), liveRunError(h));
  assert.ok(existsSync(join(root, 'results', h.id)));
  await h.stop();
  assert.equal(await clean(['--yes'], ctx), 0);
  assert.deepEqual(readdirSync(join(root, 'results')), ['README.md']);
  assert.ok(!existsSync(join(root, '.lab', 'data')) && !existsSync(join(root, '.lab', 'rendered')));
});

test("down and metrics down signal no pid whose start ticks differ from its state file: a reused pid's process lives", async (t) => {
  const { stateDir, ctx } = lab(t);
  const other = await sleeper(t);
  mkdirSync(stateDir, { recursive: true });
  // A keeper that died; the kernel has given its pid (and its stack's) to `sleep`.
  const state = (kind) =>
    JSON.stringify({
      owner: other.pid,
      ownerStart: 'not-its-start',
      kind,
      procs: [{ name: 'web', pid: other.pid, start: 'not-its-start' }],
    });
  writeFileSync(join(stateDir, 'up-burst.json'), state('up'));
  assert.equal(await down([], ctx), 0);
  assert.ok(await stillRunning(other), 'down left it alone');
  assert.ok(!existsSync(join(stateDir, 'up-burst.json')), "the dead keeper's state file is reaped");
  writeFileSync(join(stateDir, 'up-metrics.json'), state('metrics'));
  assert.equal(await metricsCommand.default(['down'], ctx), 0);
  assert.ok(await stillRunning(other), 'metrics down left it alone');
  assert.ok(!existsSync(join(stateDir, 'up-metrics.json')));
});

test('state files are written whole: a new file renamed over the old one, never rewritten in place', (t) => {
  const { root, stateDir } = lab(t);
  const state = new procs.StateFile(stateDir, 'run', { kind: 'test' });
  // A reader that has the old file open stands in as a hard link to it: it must keep reading it whole.
  const reader = join(root, 'reader');
  linkSync(state.path, reader);
  const before = statSync(state.path).ino;
  state.add({ name: 'k6', pid: process.pid });
  assert.notEqual(statSync(state.path).ino, before, 'a new file, not the old one rewritten');
  assert.deepEqual(JSON.parse(readFileSync(reader, 'utf8')).procs, []);
  assert.equal(JSON.parse(readFileSync(state.path, 'utf8')).procs[0].name, 'k6');
  assert.deepEqual(readdirSync(stateDir), ['run.json'], 'no temp file left beside it');
});
