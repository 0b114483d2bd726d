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
  ({ ip: `192.0.2.${i + 1}`, ipv6: `2001:db8::${(i + 1).toString(16)}`, integer: String(i + 1) })[type] ??
  `lab-key-${i + 1}`;

/** The i-th case's own path, where a tracker keys on base (Host and path). */
const basePath = (i) => `/lab-key-${i + 1}`;

/** What sets the i-th case's entry apart in a tracker's table: its key, its path, or nothing (src). */
const slotKey = (key, table, i) => ({ src: '', base: basePath(i) })[key.fetch] ?? keyValue(table.type, i);

// What one entry of a table stands for, by what its tracker keys on.
const ENTRY_PER = { header: 'value of the header', param: 'value of the parameter', base: 'Host and path' };

/**
 * What each case sends, and who shares an entry, over a frontend's trackers: {slots, slotKeys,
 * shared, how (per tracker)}. A tracker by src puts every case on one entry; one by a header or
 * a parameter gets a key of the lab's own per case, as its table's type stores it; one by base
 * (Host and path) a path of its own per case.
 */
function slotsOf(trackers) {
  const keyed = trackers.filter((t) => t.key.fetch !== 'src');
  const count = keyed.length ? SLOTS : 1;
  const slots = Array.from({ length: count }, (_, i) => {
    const headers = {};
    const query = [];
    for (const { key, table } of keyed) {
      const v = keyValue(table.type, i);
      if (key.fetch === 'header') headers[key.name] = v;
      else if (key.fetch === 'param') query.push(`${encodeURIComponent(key.name)}=${encodeURIComponent(v)}`);
    }
    const path = keyed.some((t) => t.key.fetch === 'base') ? basePath(i) : '/';
    return { path: query.length ? `${path}?${query.join('&')}` : path, headers };
  });
  const slotKeys = slots.map((_, i) =>
    Object.fromEntries(trackers.map(({ key, table }) => [table.at, slotKey(key, table, i)])),
  );
  const how = ({ key }) =>
    key.fetch === 'src'
      ? 'one entry per address: every case, from 127.0.0.1, shares it'
      : `one entry per ${ENTRY_PER[key.fetch]}: each case sends its own`;
  return { slots, slotKeys, shared: keyed.length < trackers.length, how };
}

// Where each number stands, as the Policy tab says it: a deny's (or its acl's) line, a table's, a timeout's.
const PATH_OF = { limit: 'deny', period: 'table', expire: 'table', tarpit: 'timeout' };

/**
 * One number of a frontend's limit where it stands: `named` its knob's name, `param` what the
 * render rewrites ('limit' on the deny's or its acl's line, 'period' or 'expire' on the table's,
 * 'tarpit' on the `timeout tarpit` line).
 */
const numberOf = (r, knob, { named, param, kind, value, at, what }) => ({
  knob: knob(named),
  kind,
  value,
  ...(kind === 'count' ? { min: 1 } : {}),
  at,
  path: [PATH_OF[param]],
  param,
  doc: `frontend ${r.frontend}: ${what} (${at})`,
});

/** Where a deny's limit stands: the set-var that holds it, its acl's line, or its own. */
const limitAtOf = (deny) => deny.limitAt ?? deny.acl ?? deny.at;

/** The numbers of a frontend's limit, each where it stands. */
function numbersOf(r, knob) {
  const { table, deny } = r.limit;
  const n = (param, kind, value, at, what) => numberOf(r, knob, { named: param, param, kind, value, at, what });
  return [
    n('limit', 'count', deny.limit, limitAtOf(deny), `the ${deny.action}'s limit on ${deny.counter}`),
    ...(deny.counter === 'http_req_rate'
      ? [n('period', 'seconds', table.periodMs / 1000, table.at, 'http_req_rate period in s')]
      : []),
    ...(table.expireMs !== null ? [n('expire', 'seconds', table.expireMs / 1000, table.at, 'table expire in s')] : []),
    ...tarpitNumbers(r, knob, [deny]),
  ];
}

/** The tarpit's hold, where a tarpit holds for a `timeout tarpit` the file writes (one per frontend). */
function tarpitNumbers(r, knob, denies) {
  const hold = denies.find((d) => d.hold)?.hold;
  if (!hold?.knob) return [];
  const what = 'timeout tarpit in s: how long a tarpitted request is held';
  return [
    numberOf(r, knob, { named: 'tarpit', param: 'tarpit', kind: 'seconds', value: hold.ms / 1000, at: hold.at, what }),
  ];
}

/** A tarpit's hold under the knobs `k` in ms ({tarpitMs}), or nothing for a deny (answered at once). */
const tarpitOf = (deny, k, knob) =>
  deny.hold ? { tarpitMs: deny.hold.knob ? k[knob('tarpit')] * 1000 : deny.hold.ms } : {};

/** What a deny lets through its limit over, s: its table's period, or its expire for a count. */
const windowS = (deny, table) =>
  deny.counter === 'http_req_rate' ? table.periodMs / 1000 : (table.expireMs ?? 60_000) / 1000;

/** What every HAProxy target is, whatever its limit: where it is sent and what its cases send. */
const targetBase = (r, sends) => ({
  id: knobName(r.frontend) || 'frontend',
  label: `frontend ${r.frontend}`,
  at: r.at,
  exempt: false,
  shared: sends.shared,
  place: { place: r.place, ssl: Boolean(r.tls), http2: Boolean(r.http2) },
  host: null,
  slots: sends.slots,
  slotKeys: sends.slotKeys,
});

/** One frontend as a target. */
function frontendTarget(r) {
  const { table, deny, track } = r.limit;
  const sends = slotsOf([track]);
  const knob = (param) => knobName(r.frontend, param);
  const periodS = windowS(deny, table);
  const expireS = table.expireMs === null ? Infinity : table.expireMs / 1000;
  return {
    ...targetBase(r, sends),
    numbers: numbersOf(r, knob),
    build: (k) => ({
      kind: 'stick_table_rate',
      counter: deny.counter,
      op: deny.op,
      limit: k[knob('limit')],
      periodMs: (k[knob('period')] ?? periodS) * 1000,
      expireMs: table.expireMs === null ? Infinity : k[knob('expire')] * 1000,
      ...tarpitOf(deny, k, knob),
    }),
    status: deny.status,
    // What it lets through over its period, and all at once into an empty window.
    rate: deny.limit / periodS,
    burst: deny.limit,
    keys: [{ zone: `stick-table ${table.at}, tracked by ${track.key.text}`, how: sends.how(track) }],
    // An entry forgets after two periods without a request (or when it expires, if sooner).
    drainS: Math.min(2 * periodS, expireS),
    class: track.key.fetch === 'src' ? 'src: the client address' : `${track.key.text}: a key of its own per case`,
  };
}

/**
 * A chain's numbers: each deny's limit (the first's knob `limit`, the next ones' `limit2`, ...),
 * each table's period and expire once (the first tracker's as `period`, another's as
 * `scN_period`): {numbers, limitKnob(i), tableKnob(at, param)}.
 */
function chainNumbers(r, knob) {
  const { trackers, denies } = r.limit.chain;
  const n = (named, param, kind, value, at, what) => numberOf(r, knob, { named, param, kind, value, at, what });
  const limitNamed = (i) => (i ? `limit${i + 1}` : 'limit');
  const numbers = denies.map((d, i) =>
    n(limitNamed(i), 'limit', 'count', d.limit, limitAtOf(d), `the ${d.action}'s limit on sc${d.sc} ${d.counter}`),
  );
  const tableNamed = new Map();
  for (const t of trackers) {
    if (tableNamed.has(t.table.at)) continue;
    const prefix = t === trackers[0] ? '' : `sc${t.sc}_`;
    tableNamed.set(t.table.at, prefix);
    if (t.table.periodMs !== null)
      numbers.push(
        n(`${prefix}period`, 'period', 'seconds', t.table.periodMs / 1000, t.table.at, 'http_req_rate period in s'),
      );
    if (t.table.expireMs !== null)
      numbers.push(n(`${prefix}expire`, 'expire', 'seconds', t.table.expireMs / 1000, t.table.at, 'table expire in s'));
  }
  numbers.push(...tarpitNumbers(r, knob, denies));
  return {
    numbers,
    limitKnob: (i) => knob(limitNamed(i)),
    tableKnob: (at, param) => knob(`${tableNamed.get(at)}${param}`),
  };
}

/** Several trackers or denies on one frontend as a target (thresholds/models/stick-table-rate.js stickTableChain). */
function chainTarget(r) {
  const { trackers, rules, denies } = r.limit.chain;
  const knob = (param) => knobName(r.frontend, param);
  const { numbers, limitKnob, tableKnob } = chainNumbers(r, knob);
  const index = new Map(trackers.map((t, i) => [t.sc, i]));
  const seconds = (k, t, param, ms) => (ms === null ? null : (k[tableKnob(t.table.at, param)] ?? ms / 1000));
  // Per deny, what it lets through over its tracker's period (its expire, for a count).
  const periodOf = (d) => windowS(d, trackers[index.get(d.sc)].table);
  const tightest = denies.reduce((a, d) => (d.limit / periodOf(d) < a.limit / periodOf(a) ? d : a));
  const sends = slotsOf(trackers);
  return {
    ...targetBase(r, sends),
    numbers,
    build: (k) => ({
      kind: 'stick_table_chain',
      trackers: trackers.map((t) => ({
        periodMs: (seconds(k, t, 'period', t.table.periodMs) ?? 1) * 1000,
        expireMs: t.table.expireMs === null ? Infinity : seconds(k, t, 'expire', t.table.expireMs) * 1000,
      })),
      rules: rules.map((x) =>
        'track' in x
          ? { track: index.get(x.track) }
          : {
              deny: index.get(denies[x.deny].sc),
              counter: denies[x.deny].counter,
              op: denies[x.deny].op,
              limit: k[limitKnob(x.deny)],
              ...tarpitOf(denies[x.deny], k, knob),
            },
      ),
    }),
    status: tightest.status,
    rate: tightest.limit / periodOf(tightest),
    burst: tightest.limit,
    keys: trackers.map((t) => ({
      zone: `stick-table ${t.table.at}, tracked by ${t.key.text} (sc${t.sc})`,
      how: sends.how(t),
    })),
    // Every entry forgets after two periods without a request (or when it expires, if sooner).
    drainS: Math.max(
      ...trackers.map((t) =>
        Math.min(
          2 * ((t.table.periodMs ?? t.table.expireMs ?? 60_000) / 1000),
          t.table.expireMs === null ? Infinity : t.table.expireMs / 1000,
        ),
      ),
    ),
    class: trackers.map((t) => (t.key.fetch === 'src' ? 'src' : t.key.text)).join(' and '),
  };
}

/** The HAProxy targets of `policy`: {targets, routes} (routes: the Policy tab's words per frontend). */
export function haproxyTargets(policy) {
  const targets = [];
  const routes = [];
  for (const r of policy.routes) {
    const label = `frontend ${r.frontend}`;
    if (r.none) routes.push({ route: label, at: r.at, none: r.none });
    else targets.push(r.limit.chain ? chainTarget(r) : frontendTarget(r));
  }
  return { targets, routes };
}
