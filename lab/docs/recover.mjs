/*
 * The generated blocks of docs/policies.md on the recorded policy runs (docs/runs/): the recover
 * case after HAProxy's overload, and the longest wait of a sessions case (HAProxy's rate-limit
 * sessions), as the plan and the replay predicted them and as they were measured, and how far
 * each policy's replay was from what every case measured.
 */
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { recordedRuns, recordedLine, table } from '../lib.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

// The recorded policy runs the blocks read: the experiment's name (its file's), and its command.
const POLICIES = {
  'haproxy-rate': 'test/policies/haproxy-rate.cfg',
  'haproxy-abuse-flag': 'test/policies/haproxy-abuse-flag.cfg',
  'haproxy-flag-table': 'test/policies/haproxy-flag-table.cfg',
  'haproxy-conn-limits': 'test/policies/haproxy-conn-limits.cfg',
  'haproxy-sessions': 'test/policies/haproxy-sessions.cfg',
  'haproxy-small-table': 'test/policies/haproxy-small-table.cfg',
  'haproxy-tls-key': 'test/policies/haproxy-tls-key.cfg',
  'traefik-rate': 'test/policies/traefik-rate.yml',
  'traefik-in-flight': 'test/policies/traefik-in-flight.yml',
};
const commandOf = (name) => `./labw test spike --quick --policy=${POLICIES[name]}`;

/** The recorded spike runs of one policy, oldest first. */
const runsOf = (name, root) =>
  recordedRuns(root, (i) => i.suite === 'spike' && i.experiments.join() === name && !i.perturbed);

const span = ({ min, max }) => (min === max ? `${min}` : `${min}..${max}`);

/** Per recorded run of a HAProxy policy, its recover case: the plan's model, the replay, the measured (shown). */
export function recoverTable(root = ROOT) {
  const lines = [];
  const rows = [];
  for (const name of [
    'haproxy-rate',
    'haproxy-abuse-flag',
    'haproxy-flag-table',
    'haproxy-conn-limits',
    'haproxy-tls-key',
  ]) {
    const runs = runsOf(name, root);
    if (!runs.length) continue;
    lines.push(`${recordedLine(runs, commandOf(name))}.`);
    for (const r of runs) {
      const o = r.outcomes.find((x) => x.case === `${name}/api-recover`);
      if (!o) continue;
      rows.push([
        r.testid,
        name,
        o.measured.sent,
        span(o.plan.ok),
        o.judgedOn === 'replay' ? span(o.expected.ok) : '-',
        o.measured.ok,
        span(o.plan.limited),
        o.judgedOn === 'replay' ? span(o.expected.limited) : '-',
        o.measured.limited,
        o.pass ? 'ok' : 'FAIL',
      ]);
    }
  }
  const head = [
    'run (testid)',
    'policy',
    'recover: sent',
    '200 model (plan)',
    '200 replay',
    '200 measured',
    'limited model (plan)',
    'limited replay',
    'limited measured',
    'pass',
  ];
  return `${lines.join('\n')}\n\n${table(head, rows)}`;
}

/** A wait in ms, as the table shows it. */
const ms = (v) => `${Math.round(v)}`;

/** Per recorded run of haproxy-sessions, its sessions case's longest wait: the plan's model, the replay, measured. */
export function sessionsTable(root = ROOT) {
  const name = 'haproxy-sessions';
  const runs = runsOf(name, root);
  const rows = runs.flatMap((r) => {
    const o = r.outcomes.find((x) => x.case === `${name}/api-sessions`);
    if (!o?.plan.maxMs) return [];
    const replay = o.judgedOn === 'replay' ? o.expected.maxMs : null;
    return [
      [
        r.testid,
        o.measured.sent,
        `${ms(o.plan.maxMs.min)}..${ms(o.plan.maxMs.max)}`,
        replay ? span({ min: ms(replay.min), max: ms(replay.max) }) : '-',
        ms(o.measured.maxMs),
        replay ? ms(Math.abs(o.measured.maxMs - replay.max)) : '-',
        o.pass ? 'ok' : 'FAIL',
      ],
    ];
  });
  const head = [
    'run (testid)',
    'sessions: sent',
    'longest wait, model (plan), ms',
    'replay, ms',
    'measured, ms',
    'measured from replay, ms',
    'pass',
  ];
  return `${recordedLine(runs, commandOf(name))}.

${table(head, rows)}`;
}

/** Outside a range, by how much; 0 within it. */
const off = (m, { min, max }) => (m < min ? min - m : m > max ? m - max : 0);

/**
 * Per policy, over its recorded runs: the cases judged on the replay, the replay's largest
 * difference from a measured count (200s or limited) and its widest range.
 */
export function replayDifferenceTable(root = ROOT) {
  const rows = [];
  for (const name of Object.keys(POLICIES)) {
    const runs = runsOf(name, root);
    const replayed = runs.flatMap((r) => r.outcomes.filter((o) => o.judgedOn === 'replay'));
    if (!replayed.length) continue;
    const counts = replayed.flatMap((o) => ['ok', 'limited'].map((k) => [o.measured[k], o.expected[k]]));
    rows.push([
      `\`${commandOf(name)}\``,
      runs.length,
      `${replayed.length} of ${runs.reduce((a, r) => a + r.outcomes.length, 0)}`,
      Math.max(...counts.map(([m, e]) => off(m, e))),
      Math.max(...counts.map(([, e]) => e.max - e.min)),
    ]);
  }
  const head = [
    'runs of',
    'runs',
    'cases judged on the replay',
    'largest difference, measured from replay (requests)',
    'widest replay range (requests)',
  ];
  return table(head, rows);
}
