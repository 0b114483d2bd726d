#!/usr/bin/env node
/*
 * How close each filter is to what its runtime cannot cost less than, for docs/journal/json-filter.md: the
 * four measuring sticks of floor/ started on free ports, and each of them and each filter of
 * the stack loaded at the same time as the stack's nginx (two-at-once.mjs), at a light and a
 * heavy load. Prints nginx's CPU per relayed request over each one's. Needs `./labw up
 * json-filter` (its backend, filters and nginx); starts and stops the floors itself.
 *   node lab/profiles/floors.mjs [ROUNDS]
 */
import { mkdtempSync, rmSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { loadTopology, portsByService } from '../stack/topology.mjs';
import { spawnLogged, stopProcess, freePort, portOwner } from '../stack/procs.mjs';
import { waitReady } from '../stack/start-stop.mjs';
import { statFields } from '../stack/cpu.mjs';
import { stackUser, serviceLaunch } from '../stack/privilege.mjs';
import { formatTable } from '../judge/table.mjs';
import { twoAtOnce, TWO_AT_ONCE, relayDocument } from '../bench/two-at-once.mjs';
import { spread } from '../bench/per-cpu.mjs';

const USAGE = 'usage: node lab/profiles/floors.mjs [ROUNDS], with ./labw up json-filter running';
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const arg = process.argv[2] ?? '3';
if (process.argv.length > 3 || !/^[1-9][0-9]?$/.test(arg)) {
  console.error(`floors.mjs: ROUNDS is a whole number from 1 to 99\n${USAGE}`);
  process.exit(2);
}
const rounds = Number(arg);
const LOADS = [64, 400]; // wrk -t1 connections on each of the two: the bench's light and heavy loads
// The Erlang floors run on the VM flags json_filter.sh gives the filter: one scheduler, no spinning.
const ERL = ['erl', '-noshell', '+K', 'true', '+S', '1', '+sbwt', 'none', '+sbwtdcpu', 'none', '+sbwtdio', 'none'];
// Each runtime's floor program, run in a mode (relay, minimal); `ebin` holds floor.beam.
const RUNTIMES = {
  node: (mode, port, backend) => [process.execPath, 'servers/profiles/floor/floor.js', mode, port, backend],
  erlang: (mode, port, backend, ebin) => [
    ...ERL,
    '-pa',
    ebin,
    '-pa',
    '.lab/erlang/ebin',
    '-eval',
    `floor:start(${mode}, ${port}, ${backend})`,
  ],
};
const FLOORS = Object.keys(RUNTIMES).flatMap((runtime) =>
  ['relay', 'minimal'].map((mode) => ({ name: `${runtime}-${mode}`, runtime, mode })),
);
const FILTERS = ['json-filter-node', 'json-filter-node-cluster', 'json-filter-erlang'];

const ports = portsByService(loadTopology(join(root, 'docker-compose.yml')));
/** The process group serving a port of the stack's, or an error saying to start the stack. */
function served(service) {
  const { http } = ports[service];
  const who = portOwner(http);
  const group = who?.pid ? statFields(who.pid)?.pgrp : null;
  if (!group) {
    console.error(`floors.mjs: nothing of ours listens on ${http} (${service})\n${USAGE}`);
    process.exit(2);
  }
  return { name: service.replace(/^json-filter-/, ''), url: `http://127.0.0.1:${http}/filter`, group };
}
const nginx = served('json-filter-nginx');
const filters = FILTERS.map(served);
if (spawnSync('sh', ['-c', 'command -v erlc && command -v wrk'], { stdio: 'ignore' }).status !== 0) {
  console.error('floors.mjs: erlc and wrk are needed (./labw setup)');
  process.exit(2);
}
process.chdir(root); // the floors' and wrk's paths are the repository's

// Run as root, the floors run as the stack's services do: as the lab's own user (privilege.mjs).
const user = stackUser(root, (m) => console.error(`floors.mjs: ${m}`));
const tmp = mkdtempSync(join(tmpdir(), 'lab-floors-'));
chmodSync(tmp, 0o755); // the floors' user reads floor.beam here; only the runner writes
const procs = [];
const stopAll = async () => {
  for (const p of procs) await stopProcess(p, 2000);
  rmSync(tmp, { recursive: true, force: true });
};
let stopping = false; // interrupted: the loads that fail as their servers stop are not errors
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    stopping = true;
    stopAll().then(() => process.exit(130));
  });
}

let code = 0;
try {
  const body = relayDocument(root, tmp);
  const erlc = spawnSync('erlc', ['+warnings_as_errors', '-o', tmp, 'servers/profiles/floor/floor.erl'], {
    encoding: 'utf8',
  });
  if (erlc.status !== 0) throw new Error(`erlc floor.erl: ${erlc.stderr}${erlc.stdout}`);
  const floors = [];
  for (const f of FLOORS) {
    const port = await freePort();
    const argv = RUNTIMES[f.runtime](f.mode, String(port), String(ports['json-filter-backend'].http), tmp);
    const launch = serviceLaunch({ argv, env: process.env, user, home: tmp });
    const proc = spawnLogged(f.name, launch.argv, { cwd: root, env: launch.env, logFile: join(tmp, `${f.name}.log`) });
    procs.push(proc);
    const url = `http://127.0.0.1:${port}/filter`;
    await waitReady(proc, url, 15_000);
    floors.push({ name: f.name, url, group: proc.pid });
  }
  const rows = [];
  for (const connections of LOADS) {
    for (const x of [...floors, ...filters]) {
      const say = (m) => console.error(`c${connections}: ${m}`);
      const r = (await twoAtOnce(process.env, [x, nginx], { ...TWO_AT_ONCE, rounds, connections, body, say })).filter(
        (y) => y.ratio !== null,
      );
      const errors = r.reduce((a, y) => a + y.errors, 0);
      rows.push([
        String(connections),
        x.name,
        String(r.length),
        String(errors),
        r.length ? spread(r.map((y) => 1 / y.ratio)) : '-',
      ]);
    }
  }
  console.log(
    `\nEach one and nginx loaded at the same time, wrk -t1 on each, ${TWO_AT_ONCE.seconds} s after ${TWO_AT_ONCE.warmS} s, the order swapped every round; every document relayed. Shown: this judges nothing.\n`,
  );
  console.log(
    formatTable(rows, [
      'connections (each)',
      'server',
      'rounds',
      'errors',
      "nginx's CPU per request over its: median (min-max)",
    ]),
  );
} catch (e) {
  if (!stopping) console.error(`floors.mjs: ${e.message}`);
  code = 1;
} finally {
  await stopAll();
}
process.exit(code);
