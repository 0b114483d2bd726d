/*
 * HAProxy behind the proxy interface (index.mjs): a haproxy.cfg's stick-table rate limits read
 * line by line (../haproxy/), modelled as HAProxy's sliding window over its stick table
 * (thresholds/models/stick-table-rate.js), run with the lab's log of when its rules ran, which is
 * also its count per case (its own counters are per frontend, not per case).
 */
import { basename } from 'node:path';
import { haproxyPolicy, HAPROXY, GLOBAL_OWN, ratePeriodMs } from '../haproxy/read.mjs';
import { haproxyTargets } from '../haproxy/targets.mjs';
import { renderHaproxy, LAB_FRONTEND } from '../haproxy/render.mjs';
import { placePorts } from '../ports.mjs';
import { fieldsOf, CONNECTIONS } from './seen-line.mjs';
import { haproxyFromLimit } from '../haproxy/from-limit.mjs';

const places = (policy) => [...new Set(policy.routes.flatMap((r) => r.places ?? [r.place]))];

const HEAD = ['frontend', 'where', 'tracked by', 'counter', 'limit', 'period s', 'expire s', 'size', 'denied with'];
/** The period of the rate a test reads, s; '-' for a count. */
const periodWords = (counter, table) => {
  const ms = ratePeriodMs(counter, table);
  return ms === null ? '-' : String(ms / 1000);
};
/** A test's cells: where it stands, its tracker's key and table, and what it compares. */
const testCells = (r, test, track) => [
  r.frontend,
  test.at,
  track.key.text,
  test.counter,
  `${test.op} ${test.limit}`,
  periodWords(test.counter, track.table),
  track.table.expireMs === null ? '-' : String(track.table.expireMs / 1000),
  track.table.size === null ? '-' : `${track.table.size}${track.table.nopurge ? ' nopurge' : ''}`,
];
/** One row per deny: its test and status. */
const denyRow = (r, deny, track) => [...testCells(r, deny, track), answerWords(deny)];
/** How a deny answers: its status, and a tarpit's hold and where it comes from. */
const answerWords = ({ status, hold }) =>
  hold ? `${status} after ${hold.ms / 1000} s (tarpit: ${hold.why}, ${hold.at})` : String(status);
/** One row per flag with a test (`sc-inc-gpcG(N) if ...`): the counter it reads, and what it sets. */
const flagRow = (r, inc, track) => [
  ...testCells(r, inc, track),
  `sets gpc${inc.gpc} of sc${inc.inc} (sc-inc-gpc${inc.gpc})`,
];
/** A frontend's accept limit (rate-limit sessions): what it counts, and that the rest wait, not refused. */
const sessionsRow = (r, { limit, at, idle }) => [
  r.frontend,
  at,
  '-',
  'sessions accepted',
  `${limit} a second`,
  '1',
  '-',
  '-',
  `none: the rest wait to be accepted (kept open: ${idle.what}, ${idle.at})`,
];
/** Each deny and flag of a frontend's rules, in the file's order. */
function ruleRows(r) {
  const { chain } = r.limit;
  if (!chain) return [denyRow(r, r.limit.deny, r.limit.track)];
  const trackOf = (sc) => chain.trackers.find((t) => t.sc === sc);
  // In the file's order: each deny, and each flag whose test reads a counter.
  return chain.rules.flatMap((x) => {
    if ('deny' in x) return [denyRow(r, chain.denies[x.deny], trackOf(chain.denies[x.deny].sc))];
    const inc = 'inc' in x ? chain.incs[x.inc] : null;
    return inc && 'op' in inc ? [flagRow(r, inc, trackOf(inc.sc))] : [];
  });
}
const rows = (policy) =>
  policy.routes.flatMap((r) => {
    if (!r.limit) return [[r.frontend, r.at, '-', '-', '-', '-', '-', r.none]];
    return [...(r.sessions ? [sessionsRow(r, r.sessions)] : []), ...ruleRows(r)];
  });

/**
 * Which of its counters counted a line: a backend's 2xx; what the frontend answered itself (its
 * backend is still the frontend: %b is %f), and a rule's denial in a backend (%ts `P`), which
 * HAProxy counts in the frontend's denials too; none for a backend's own answer (a return there,
 * %ts `L`, counted nowhere) or a server's error. Lines before %ts was logged: the frontend's.
 */
function counterOf([, , status, frontend, backend, , ts]) {
  if (frontend === backend) return `frontend ${frontend}`;
  if (status === '200') return `backend ${backend}`;
  return ts === undefined || ts.startsWith('P') ? `frontend ${frontend}` : null;
}

/** A seen.log line of a case: when its rules ran, its status, the counter that counted it, its hold. */
function caseLine(line) {
  const f = fieldsOf(line);
  if (f.length < 5 || f.length > 7) return null;
  const where = counterOf(f);
  const held = f.length >= 6 ? { heldMs: Number(f[5]) - Number(f[1]) } : {};
  return {
    case: f[0],
    ms: Number(f[1]),
    clock: 'wall',
    limiterClock: true,
    status: f[2],
    ...(where ? { where } : {}),
    // The frontend that accepted its connection, and counted it among its sessions.
    accepts: `frontend ${f[3]}`,
    ...held,
  };
}

/** A line of the lab's own /healthz (no case), which its frontend answered itself and counted. */
function labLine(line) {
  const f = line.trim().split(/\s+/);
  if (f[0] !== '-' || f.length < 5 || f[3] !== f[4]) return null;
  return { case: '-', where: `frontend ${f[3]}`, ownStatus: 'refused', accepts: `frontend ${f[3]}` };
}

export default {
  name: 'haproxy',
  title: 'HAProxy',
  // A config with a frontend or listen section (HAProxy's keywords start a line).
  claims: (text) => /(^|\n)(frontend|listen|backend)\s+\S+/.test(text) && /(^|\n)\s+(bind|mode|server)\s/.test(text),
  tool: () => HAPROXY,
  read: (file) => haproxyPolicy(file),
  table: (policy) => [HEAD, rows(policy)],
  places,
  // The stack's first port is the first place's: TLS where that bind is.
  scheme: (policy) => (policy.tlsPlaces.includes(places(policy)[0]) ? 'https' : 'http'),
  targets: haproxyTargets,
  changes: (policy) => [
    ...policy.globalOwn.map((l) => ({
      at: l.at,
      what: `${l.words.join(' ')}: left out (${GLOBAL_OWN.get(l.words[0])})`,
    })),
    ...policy.leftOut,
    { at: '(the lab)', what: 'each bind at a port of the lab on 127.0.0.1; each server at the lab backend' },
  ],
  ownFiles: (policy) => [basename(policy.file)],
  service: {
    file: 'haproxy.cfg',
    // Its official image at Debian 12's version, with the Prometheus exporter built in (USE_PROMEX);
    // no digest: none could be read from here (no registry but the package ones).
    image: 'haproxy:2.6.12',
    render: (policy, view, tools, backend, placed) =>
      renderHaproxy(policy, {
        ports: placePorts(places(policy)),
        ownPort: view.self.own,
        backend,
        placed,
        prefix: view.prefix,
      }),
    // In the foreground; its log (stdout) is the sightings file, its alerts (stderr) the service's log.
    command: ['sh', '-c', 'exec haproxy -db -f "$0" >"$1"', '{{config.conf}}', '{{prefix}}/seen.log'],
    validate: ['haproxy', '-c', '-f', '{{config.conf}}'],
    ready: 'http://127.0.0.1:{{self.own}}/healthz',
    metrics: { port: 'own', path: '/metrics' },
    countsLog: 'seen.log',
  },
  // The most connections it takes at once (its maxconn), where the file says.
  connections: (policy) => policy.maxconn,
  // Its metrics count per frontend and status class, not per case: the log counts per case.
  countOf: () => null,
  // Its own counters: a backend's 2xx (what it let through) and what a frontend answered itself:
  // its denials (deny, tarpit) and its intercepted requests (`http-request return`, redirect),
  // the lab's /healthz among them (src/http_act.c http_action_return counts a return there
  // while the stream's backend is still the frontend).
  ownCounter: ({ name, labels }) => {
    if (name === 'haproxy_backend_http_responses_total' && labels.code === '2xx')
      return { where: `backend ${labels.proxy}`, status: '200' };
    if (labels.proxy === LAB_FRONTEND) return null;
    if (name === 'haproxy_frontend_requests_denied_total' || name === 'haproxy_frontend_intercepted_requests_total')
      return { where: `frontend ${labels.proxy}`, status: 'refused' };
    // Its sessions (src/session.c conn_complete_session: one per connection accepted, what
    // rate-limit sessions counts): as many as the connections k6 opened, where the plan knows them.
    if (name === 'haproxy_frontend_sessions_total') return { where: `frontend ${labels.proxy}`, status: CONNECTIONS };
    return null;
  },
  /**
   * A line of its seen.log (`case ms status frontend backend endMs ts`): the millisecond its rules
   * ran in, on its wall clock, the counter that counted it (counterOf; the lab's /healthz lines of
   * no case are the frontend's own answers), and how long its stream then held its entries
   * (`heldMs`, to the millisecond it ended; lines of runs before it was logged have 5 fields,
   * and before how it ended was, 6). That millisecond is its limiter's own: HAProxy 2.6's rules
   * read now_ms, its date plus an offset that stays 0 unless the system clock jumps (src/clock.c
   * clock_update_date), and date(0,ms) reads the same date (src/sample.c smp_fetch_date).
   */
  seen: (line) => labLine(line) ?? caseLine(line),
  // The clock resolution its sightings are read at, ms.
  resolutionMs: 1,
  // What it lets through at once: its deny's limit, into an empty window.
  atOnce: (t) => t.burst,
  // A team's limit (R r/s, B at once) written as this proxy's closest config (compare-proxies).
  fromLimit: haproxyFromLimit,
};
