#!/usr/bin/env node
/*
 * Two servers already running, loaded at the same time (lab/bench/two-at-once.mjs): a
 * copy of a filter with a part changed against the filter as it is, for docs/journal/json-filter.md.
 *   LAB_BODY=<document> node lab/profiles/ab.mjs ROUNDS PORT_X PID_X PORT_REF PID_REF [CONNECTIONS]
 * Each PID must lead its own process group (start it with setsid): its group's CPU is what is
 * counted. Prints per round each one's CPU per relayed request and X's over the reference's.
 */
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { twoAtOnce, TWO_AT_ONCE } from '../bench/two-at-once.mjs';
import { statFields } from '../stack/cpu.mjs';

const USAGE = 'usage: LAB_BODY=<document> node lab/profiles/ab.mjs ROUNDS PORT_X PID_X PORT_REF PID_REF [CONNECTIONS]';
const fail = (m) => {
  console.error(`ab.mjs: ${m}\n${USAGE}`);
  process.exit(2);
};
const args = process.argv.slice(2);
if (args.length < 5 || args.length > 6) fail('five or six arguments');
for (const a of args) if (!/^[1-9][0-9]{0,6}$/.test(a)) fail(`'${a}' is not a whole number`);
const [rounds, portX, pidX, portRef, pidRef, connections = TWO_AT_ONCE.connections] = args.map(Number);
for (const port of [portX, portRef]) if (port > 65535) fail(`${port} is not a port`);
if (!process.env.LAB_BODY) fail('LAB_BODY names the document to post');
const groupOf = (pid) => {
  const s = statFields(pid);
  if (!s) fail(`no process ${pid}`);
  const { pgrp } = s;
  if (pgrp !== pid) fail(`process ${pid} is in process group ${pgrp}, not one of its own: start it with setsid`);
  return pid;
};
const pair = [
  ['x', portX, pidX],
  ['reference', portRef, pidRef],
].map(([name, port, pid]) => ({ name, url: `http://127.0.0.1:${port}/filter`, group: groupOf(pid) }));
if (pidX === pidRef) fail('the two PIDs are one process');

const body = resolve(process.env.LAB_BODY);
process.chdir(join(dirname(fileURLToPath(import.meta.url)), '..', '..')); // wrk's script path is the repository's
const rows = await twoAtOnce(process.env, pair, { ...TWO_AT_ONCE, rounds, connections, body });
for (const r of rows) {
  const [x, ref] = r.costUs.map((u) => (u === null ? '-' : u.toFixed(1)));
  console.log(
    `round ${r.round} (${r.first} first): ${x} us per request, reference ${ref} us, ratio ${r.ratio === null ? '-' : r.ratio.toFixed(3)}, errors ${r.errors}`,
  );
}
