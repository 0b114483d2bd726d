/*
 * The targets the lab loads in a team's haproxy.cfg (lab/policy/haproxy/read.mjs's reading): per
 * frontend that denies on a tracked counter, one target whose model is its stick table's rate
 * limit (thresholds/models/stick-table-rate.js), its numbers (the deny's limit, the counter's
 * period, the table's expire) as knobs. Tracked by src, every case shares the one entry its
 * address makes (k6 sends from 127.0.0.1), so the cases run one after another, each after the
 * window has emptied; tracked by a header or a URL parameter, each case sends a key of its own.
 */
import { knobName } from '../nginx/targets.mjs';
import { SLOTS } from '../nginx/explore.mjs';

/** The i-th key of the lab's own, as the table's type stores it (documentation addresses for ip, ipv6). */
const keyValue = (type, i) =>
  ({ ip: `192.0.2.${i + 1}`, ipv6: `2001:db8::${(i + 1).toString(16)}` })[type] ?? `lab-key-${i + 1}`;

/** What each case sends, and who shares an entry: {slots, slotKeys, shared, how}. */
function slotsOf({ key, table }) {
  if (key.fetch === 'src')
    return {
      slots: [{ path: '/', headers: {} }],
      slotKeys: [{ [table.at]: '' }],
      shared: true,
      how: 'one entry per address: every case, from 127.0.0.1, shares it',
    };
  const values = Array.from({ length: SLOTS }, (_, i) => keyValue(table.type, i));
  const slot = (v) =>
    key.fetch === 'header'
      ? { path: '/', headers: { [key.name]: v } }
      : { path: `/?${encodeURIComponent(key.name)}=${encodeURIComponent(v)}`, headers: {} };
  return {
    slots: values.map(slot),
    slotKeys: values.map((v) => ({ [table.at]: v })),
    shared: false,
    how: `one entry per ${key.fetch === 'header' ? 'value of the header' : 'value of the parameter'}: each case sends its own`,
  };
}

/** The numbers of a frontend's limit, each where it stands (`line`: which line the render rewrites). */
function numbersOf(r, knob) {
  const { table, deny } = r.limit;
  const n = (param, kind, value, at, line, what) => ({
    knob: knob(param),
    kind,
    value,
    ...(kind === 'count' ? { min: 1 } : {}),
    at,
    path: [line],
    param,
    doc: `frontend ${r.frontend}: ${what} (${at})`,
  });
  return [
    n('limit', 'count', deny.limit, deny.acl ?? deny.at, 'deny', `the ${deny.action}'s limit on ${deny.counter}`),
    ...(deny.counter === 'http_req_rate'
      ? [n('period', 'seconds', table.periodMs / 1000, table.at, 'table', 'http_req_rate period in s')]
      : []),
    ...(table.expireMs !== null
      ? [n('expire', 'seconds', table.expireMs / 1000, table.at, 'table', 'table expire in s')]
      : []),
  ];
}

/** One frontend as a target. */
function frontendTarget(r) {
  const { table, deny, track } = r.limit;
  const sends = slotsOf(track);
  const knob = (param) => knobName(r.frontend, param);
  const periodS = deny.counter === 'http_req_rate' ? table.periodMs / 1000 : (table.expireMs ?? 60_000) / 1000;
  const expireS = table.expireMs === null ? Infinity : table.expireMs / 1000;
  return {
    id: knobName(r.frontend) || 'frontend',
    label: `frontend ${r.frontend}`,
    at: r.at,
    numbers: numbersOf(r, knob),
    build: (k) => ({
      kind: 'stick_table_rate',
      counter: deny.counter,
      op: deny.op,
      limit: k[knob('limit')],
      periodMs: (k[knob('period')] ?? periodS) * 1000,
      expireMs: table.expireMs === null ? Infinity : k[knob('expire')] * 1000,
    }),
    exempt: false,
    status: deny.status,
    // What it lets through over its period, and all at once into an empty window.
    rate: deny.limit / periodS,
    burst: deny.limit,
    keys: [{ zone: `stick-table ${table.at}, tracked by ${track.key.text}`, how: sends.how }],
    shared: sends.shared,
    // An entry forgets after two periods without a request (or when it expires, if sooner).
    drainS: Math.min(2 * periodS, expireS),
    place: { place: r.place, ssl: Boolean(r.tls), http2: Boolean(r.http2) },
    host: null,
    class: track.key.fetch === 'src' ? 'src: the client address' : `${track.key.text}: a key of its own per case`,
    slots: sends.slots,
    slotKeys: sends.slotKeys,
  };
}

/** The HAProxy targets of `policy`: {targets, routes} (routes: the Policy tab's words per frontend). */
export function haproxyTargets(policy) {
  const targets = [];
  const routes = [];
  for (const r of policy.routes) {
    const label = `frontend ${r.frontend}`;
    if (r.none) routes.push({ route: label, at: r.at, none: r.none });
    else targets.push(frontendTarget(r));
  }
  return { targets, routes };
}
