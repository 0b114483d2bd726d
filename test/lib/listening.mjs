/*
 * Servers the tests start as processes: a free port on 127.0.0.1 (the lab's own, from
 * lab/stack/procs.mjs), and a process started and waited for until it accepts connections on
 * its port, its output kept for the messages of a test that fails.
 */
import { spawn } from 'node:child_process';
import net from 'node:net';

export { freePort } from '../../lab/stack/procs.mjs';

/** Whether something accepts a connection on 127.0.0.1:port now. */
const accepts = (port) =>
  new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });

/**
 * Starts `argv` in `cwd`; resolves to {child, out()} once it accepts connections on `port`.
 * Rejects with its output when it exits first, or (killing it) when it has not listened after
 * `tries` polls `pollMs` apart.
 */
export async function startListening(argv, port, { cwd, pollMs = 50, tries = 100 } = {}) {
  const child = spawn(argv[0], argv.slice(1), { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  child.stderr.on('data', (d) => {
    out += d;
  });
  for (let i = 0; i < tries; i += 1) {
    if (child.exitCode !== null) throw new Error(`${argv.join(' ')} exited ${child.exitCode}: ${out}`);
    if (await accepts(port)) return { child, out: () => out };
    await new Promise((r) => setTimeout(r, pollMs));
  }
  child.kill();
  throw new Error(`${argv.join(' ')} did not listen on ${port}: ${out}`);
}
