/*
 * Envoy ends itself when its parent exits, so a stack cannot outlive the command that started
 * it: `up` and `metrics up` start a detached keeper (the entry point's `keep` command) that owns
 * the stack until a stop (`down`, `metrics down`) sends it SIGTERM.
 */
import { join } from 'node:path';
import { mkdirSync, existsSync, rmSync, openSync, readFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { reapStale, readStates } from '../stack/procs.mjs';

/** Starts `<entry> keep <words>` detached and prints its endpoints once it has them. */
export async function keepUp({ root, stateDir, say, entry }, name, words, stopWith) {
  await reapStale(stateDir, { log: say });
  const dir = join(root, '.lab', 'tmp', `up-${name}`);
  if (existsSync(join(stateDir, `up-${name}.json`))) throw new Error(`${name} is already up; '${stopWith}' first`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const log = join(dir, 'keeper.log');
  const fd = openSync(log, 'a');
  const keeper = spawn(process.execPath, [entry, 'keep', ...words], {
    cwd: root,
    detached: true,
    stdio: ['ignore', fd, fd],
  });
  const exited = new Promise((resolve) => keeper.on('exit', resolve));
  const endpoints = join(dir, 'endpoints.txt');
  for (;;) {
    if (existsSync(endpoints)) break;
    if (keeper.exitCode !== null) {
      await exited;
      throw new Error(readFileSync(log, 'utf8').trim());
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  keeper.unref();
  process.stdout.write(readFileSync(endpoints, 'utf8'));
  say(`# logs in ${join(dir, 'logs')}; stop with: ${stopWith}`);
  return 0;
}

/** Stops the keepers whose state matches, then reaps whatever they left; returns how many. */
export async function stopKept({ stateDir, say }, which, { all = false } = {}) {
  let n = 0;
  for (const { id, path, st } of readStates(stateDir)) {
    if (!which(st)) continue;
    try {
      process.kill(st.owner, 'SIGTERM');
      say(`stopping ${id}`);
      n += 1;
    } catch {
      /* keeper gone: reaped below */
    }
    for (let i = 0; i < 150 && existsSync(path); i += 1) await new Promise((r) => setTimeout(r, 100));
  }
  return n + (await reapStale(stateDir, { all, log: say }));
}
