/*
 * Traefik's own word on a config, before anything starts: Traefik has no check mode, so this
 * starts it for a moment and reads what it says. A static config it cannot decode makes it exit
 * non-zero; a dynamic config it cannot build is only logged (at level error) while it goes on
 * serving without those routers. Either is a refusal here, with Traefik's message.
 *
 *   node lab/policy/traefik/check.mjs CONFIG OWN_PORT
 *
 * CONFIG is the rendered config (its log is JSON at level error, to stdout); OWN_PORT is the
 * lab's own entry point, open once Traefik has loaded its providers. No request is sent, so
 * the access log stays empty.
 */
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { pathToFileURL } from 'node:url';

// Long enough for Traefik's start on a busy 2-core machine; short of the 60 s its caller allows.
const START_MS = 20_000;
// After its port opens, the file provider's first build has been logged or is about to be.
const SETTLE_MS = 700;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Resolves true once something listens on 127.0.0.1:`port`. */
const listening = (port) =>
  new Promise((done) => {
    const s = connect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      done(true);
    });
    s.on('error', () => done(false));
  });

/** The lines of Traefik's output that refuse the config (its level-error log lines, or an exit's). */
export function refusals(output) {
  return output
    .split('\n')
    .filter((l) => /"level":"(error|fatal|panic)"/.test(l) || /\b(ERR|FTL)\b/.test(l))
    .map((l) => {
      try {
        const j = JSON.parse(l);
        return [j.message, j.error].filter(Boolean).join(': ');
      } catch {
        return l.trim();
      }
    });
}

/** Starts `traefik --configFile=config`, waits for its own port, stops it; resolves {ok, said}. */
export async function checkTraefik(config, ownPort, traefik = 'traefik') {
  const child = spawn(traefik, [`--configFile=${config}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let exit = null;
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const exited = new Promise((r) => child.on('close', (code, signal) => r((exit = { code, signal }))));
  child.on('error', (e) => (output += `cannot start ${traefik}: ${e.message}\n`));
  const deadline = Date.now() + START_MS;
  let up = false;
  while (!exit && !(up = await listening(ownPort)) && Date.now() < deadline) await sleep(100);
  if (up) await sleep(SETTLE_MS);
  const exitedEarly = exit !== null;
  if (!exit) child.kill('SIGTERM');
  await exited;
  const said = refusals(output);
  if (!up && !said.length)
    said.push(
      exitedEarly
        ? `it exited (code ${exit.code}, signal ${exit.signal}) before it opened 127.0.0.1:${ownPort}`
        : `it did not open 127.0.0.1:${ownPort} within ${START_MS / 1000} s`,
    );
  return { ok: up && !said.length, said };
}

if (import.meta.url === pathToFileURL(process.argv[1] || '').href) {
  const [config, port] = process.argv.slice(2);
  if (!config || !/^\d+$/.test(port || '')) {
    console.error('usage: node lab/policy/traefik/check.mjs CONFIG OWN_PORT');
    process.exit(2);
  }
  const { ok, said } = await checkTraefik(config, Number(port));
  if (!ok) console.error(said.join('\n'));
  process.exit(ok ? 0 : 1);
}
