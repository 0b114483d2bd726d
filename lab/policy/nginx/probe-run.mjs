#!/usr/bin/env node
/*
 * One probe of a team's nginx config (probe.mjs runs it as a child process, so that the readers
 * stay synchronous): reads {dir, requests} as JSON on stdin, starts nginx on `dir`'s nginx.conf
 * (every listener a socket in `dir`, nothing on the network), sends each request in turn, stops
 * nginx and prints {log, error} as JSON: the probe's access log, one line per request, or what
 * nginx said when it refused the config. Nothing outlives it: nginx is stopped on every path out,
 * and the parent kills what a killed child left by its pid file.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { join } from 'node:path';

const input = JSON.parse(readFileSync(0, 'utf8'));
// asUser: setpriv's argv that drops to the services' user (lab/stack/privilege.mjs), or null.
const { dir, requests, asUser } = input;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// Unref'd: a timer left by a race must not keep the probe alive after its answer.
const deadline = (ms) => new Promise((r) => setTimeout(r, ms).unref());

/** nginx on the probe's config, in the foreground of this process. */
function startNginx() {
  const argv = [
    ...(asUser ?? []),
    'nginx',
    ...['-p', `${dir}/`, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log'), '-g', 'daemon off;'],
  ];
  // A process group of its own: the probe ends it whole at once (its log is written by then).
  const proc = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let said = '';
  proc.stderr.on('data', (b) => {
    said += b;
  });
  const exited = new Promise((r) => proc.on('exit', (code) => r(code)));
  return { proc, exited, said: () => said };
}

/** Waits until every socket the requests go to is there, or nginx has exited. */
async function ready(n, sockets) {
  for (let i = 0; i < 200; i += 1) {
    if (n.proc.exitCode !== null) return false;
    if (sockets.every((s) => existsSync(s))) return true;
    await sleep(10);
  }
  return false;
}

/** One request over its socket; resolves when answered or refused (a 444 closes it unanswered). */
function send(r) {
  const lib = r.tls ? https : http;
  return new Promise((resolve) => {
    const req = lib.request(
      {
        socketPath: r.socket,
        path: r.path,
        method: 'GET',
        headers: { ...r.headers, 'x-lab-probe': r.id },
        ...(r.tls
          ? { servername: r.host && /[a-z]/i.test(r.host) ? r.host : undefined, rejectUnauthorized: false }
          : {}),
        agent: false,
        timeout: 5000,
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      },
    );
    req.on('error', () => resolve(null));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

const logLines = () =>
  existsSync(join(dir, 'probe.log'))
    ? readFileSync(join(dir, 'probe.log'), 'utf8').split('\n').filter(Boolean).length
    : 0;

/**
 * Waits (5 s at most) until the access log holds a line per request: nginx logs a request after
 * its answer is sent, so the last answer can reach the probe before its line is written.
 */
async function logged(n) {
  for (let i = 0; i < 500 && logLines() < n; i += 1) await sleep(10);
}

async function main() {
  const n = startNginx();
  try {
    const sockets = [...new Set(requests.map((r) => r.socket))];
    if (!(await ready(n, sockets))) {
      const log = existsSync(join(dir, 'error.log')) ? readFileSync(join(dir, 'error.log'), 'utf8') : '';
      return { error: `${n.said()}\n${log}`.trim() || 'nginx did not start' };
    }
    for (const r of requests) await send(r);
    await logged(requests.length);
  } finally {
    // Every request is answered and logged: nothing of nginx's is left to wait for (a graceful
    // stop of a lua-loaded nginx takes a second).
    if (n.proc.exitCode === null) {
      process.kill(-n.proc.pid, 'SIGKILL');
      await Promise.race([n.exited, deadline(3000)]);
    }
  }
  return { log: existsSync(join(dir, 'probe.log')) ? readFileSync(join(dir, 'probe.log'), 'utf8') : '' };
}

main().then(
  (out) => process.stdout.write(JSON.stringify(out)),
  (e) => process.stdout.write(JSON.stringify({ error: String(e?.stack ?? e) })),
);
