/*
 * `bench haproxy-window`: does the model of HAProxy's stick-table rate limit
 * (thresholds/models/stick-table-rate.js) say what HAProxy itself does, request by request? One
 * HAProxy (Debian's 2.6) with `http_req_rate(2s)` tracked per source and a deny above 10, and a
 * steady client at rates under, at and over the limit's 5 r/s. The model is replayed on the times
 * HAProxy itself logged for each request (the millisecond its rules ran in, as the lab's render
 * logs it), and each answer it predicts is compared with HAProxy's.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { stickTableRate } from '../../thresholds/models/stick-table-rate.js';
import { formatTable } from '../judge/table.mjs';
import { labEnv, openRun } from '../run/suite.mjs';
import { spawnLogged, stopProcess, freePort, requireTools, assertPortsFree } from '../stack/procs.mjs';
import { serviceLaunch, serviceUser, giveDir } from '../stack/privilege.mjs';
import { machine } from './tools.mjs';
import { RULE_MS } from '../policy/haproxy/render.mjs';

const POLICY = { periodMs: 2000, limit: 10, expireMs: 30_000 };

const config = (port) =>
  [
    'global',
    '  log stdout format raw local0',
    'defaults',
    '  mode http',
    '  timeout client 5s',
    '  timeout server 5s',
    '  timeout connect 1s',
    'frontend fe',
    `  bind 127.0.0.1:${port}`,
    '  log global',
    // When the rules ran, in HAProxy's own millisecond (its date as the rules saw it), and the status.
    '  log-format "%[var(txn.lab_rule_ms)] %ST"',
    `  stick-table type ip size 1k expire ${POLICY.expireMs / 1000}s store http_req_rate(${POLICY.periodMs / 1000}s)`,
    `  ${RULE_MS}`,
    '  http-request track-sc0 src',
    `  http-request deny deny_status 429 if { sc_http_req_rate(0) gt ${POLICY.limit} }`,
    '  http-request return status 200 content-type text/plain string ok',
    '',
  ].join('\n');

/** A steady client: `rate` r/s for `seconds`, on keep-alive connections; resolves to the statuses. */
async function steadyClient(port, rate, seconds) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const get = () =>
    new Promise((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path: '/', agent, timeout: 5000 }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode));
        })
        .on('error', reject);
    });
  const t0 = Date.now() + 100;
  const sends = Array.from({ length: Math.round(rate * seconds) }, (_, i) =>
    new Promise((r) => setTimeout(r, t0 + (i * 1000) / rate - Date.now())).then(get),
  );
  try {
    return await Promise.all(sends);
  } finally {
    agent.destroy();
  }
}

/** HAProxy's log lines: [{ms, status}] in the order the rules ran. */
const loggedRequests = (text) =>
  [...text.matchAll(/^(\d+) (\d{3})$/gm)]
    .map(([, ms, st]) => ({ ms: Number(ms), status: Number(st) }))
    .sort((a, b) => a.ms - b.ms);

/** One rate against a fresh HAProxy: what it answered, what the model predicts on its own times. */
async function measureRate(run, env, { rate, seconds }) {
  const port = await freePort();
  await assertPortsFree([port]);
  const name = `rate-${String(rate).replace('.', '_')}`;
  const file = join(run.tmp, `${name}.cfg`);
  writeFileSync(file, config(port));
  const user = serviceUser();
  // Kept in the run's folder: the bench's evidence, request by request.
  const logFile = join(run.dir, `haproxy-${name}.log`);
  const launch = serviceLaunch({ argv: ['haproxy', '-db', '-f', file], env, user });
  const proc = spawnLogged('haproxy', launch.argv, { env: launch.env, logFile });
  // Recorded, so that a bench killed midway leaves no HAProxy behind (the next run reaps it).
  run.state.add(proc);
  let statuses;
  try {
    await new Promise((r) => setTimeout(r, 500));
    statuses = await steadyClient(port, rate, seconds);
    await new Promise((r) => setTimeout(r, 200));
  } finally {
    await stopProcess(proc);
  }
  const logged = loggedRequests(readFileSync(logFile, 'utf8'));
  const model = stickTableRate(POLICY);
  const predicted = logged.map((l) => (model.offer(l.ms).ok ? 200 : 429));
  const ok = (xs) => xs.filter((x) => x === 200).length;
  return {
    rate,
    seconds,
    sent: statuses.length,
    logged: logged.length,
    clientOk: ok(statuses),
    haproxyOk: ok(logged.map((l) => l.status)),
    modelOk: ok(predicted),
    differing: predicted.filter((p, i) => p !== logged[i].status).length,
  };
}

/** `bench haproxy-window [--quick]`: rates under, at and over the limit, each against a fresh HAProxy. */
export default async function benchHaproxyWindow(root, request, { say = console.log } = {}) {
  const env = labEnv(root);
  requireTools(['haproxy'], env);
  const seconds = request.factor > 1 ? 6 : 12;
  const rates = [4, 4.8, 5, 5.2, 7, 20];
  const run = await openRun(root, 'bench-haproxy-window', { kind: 'bench', say });
  // HAProxy runs as the services' user (a root runner): it reads its config from the scratch folder.
  const user = serviceUser();
  if (user) giveDir(user, run.tmp);
  const rows = [];
  try {
    for (const rate of rates) {
      say(`${rate} r/s for ${seconds} s against HAProxy (deny above ${POLICY.limit} in ${POLICY.periodMs / 1000} s)`);
      rows.push(await measureRate(run, env, { rate, seconds }));
    }
  } finally {
    run.close();
  }
  const pass = (r) => r.differing === 0 && r.logged === r.sent && r.clientOk === r.haproxyOk;
  const table = formatTable(
    rows.map((r) => [
      String(r.rate),
      String(r.sent),
      String(r.logged),
      String(r.clientOk),
      String(r.haproxyOk),
      String(r.modelOk),
      String(r.differing),
      pass(r) ? 'ok' : 'FAIL',
    ]),
    ['r/s', 'sent', 'logged', '200s (client)', '200s (HAProxy log)', '200s (model)', 'answers differing', 'pass'],
  );
  writeFileSync(
    join(run.dir, 'bench.json'),
    JSON.stringify({ bench: 'haproxy-window', policy: POLICY, machine: machine(), rows }, null, 1),
  );
  say(`\nHAProxy's sliding window against its model, request by request; ${machine()}\n\n${table}\n`);
  say(`results: ${run.dir}`);
  return rows.every(pass) ? 0 : 1;
}
