/*
 * The targets the lab loads in a team's haproxy.cfg (lab/policy/haproxy/read.mjs's reading): per
 * frontend that denies on a tracked counter, one target whose model is its stick table's rate
 * limit (thresholds/models/stick-table-rate.js), its numbers (the deny's limit, the counter's
 * period, the table's expire) as knobs. Tracked by src, every case shares the one entry its
 * address makes (k6 sends from 127.0.0.1), so the cases run one after another, each after the
 * window has emptied; tracked by a header or a URL parameter, each case sends a key of its own.
 */
import { knobName } from '../nginx/targets.mjs';
import { RATE_PERIODS, ratePeriodMs, testsOf } from './read.mjs';
import { SLOTS } from '../nginx/explore.mjs';

/** The i-th key of the lab's own, as the table's type stores it (documentation addresses for ip, ipv6). */
const keyValue = (type, i) =>
  ({ ip: `192.0.2.${i + 1}`, ipv6: `2001:db8::${(i + 1).toString(16)}`, integer: String(i + 1) })[type] ??
  `lab-key-${i + 1}`;

/** The i-th case's own path, where a tracker keys on base (Host and path). */
const basePath = (i) => `/lab-key-${i + 1}`;

/** What sets the i-th case's entry apart in a tracker's table: its key, its path, or nothing (src). */
const slotKey = (key, table, i) => ({ src: '', base: basePath(i) })[key.fetch] ?? keyValue(table.type, i);

/**
 * Refuses a table too small for the entries the lab's cases make in it (`count`: one per case
 * keyed apart, one for all by src): its cases run together, each judged on an entry of its own,
 * where HAProxy would trash the oldest to make room, or with `nopurge` track no new key
 * (src/stick_table.c __stksess_new). A larger one may get an evict case (evictOf).
 */
function roomFor(table, count) {
  if (table.size === null || table.size >= count) return;
  throw new Error(
    `${table.at}: stick-table size ${table.size} holds fewer entries than the ${count} keys the lab's cases send it together; HAProxy would ${table.nopurge ? 'leave new keys untracked (nopurge)' : 'trash the oldest to make room'} while they run, each case judged on an entry of its own: give it a size of ${count} or more (from ${EVICT_LEAST}, an evict case fills it)`,
  );
}

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
  for (const { table } of trackers) roomFor(table, count);
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
const PATH_OF = {
  limit: 'deny',
  ...Object.fromEntries(Object.keys(RATE_PERIODS).map((param) => [param, 'table'])),
  expire: 'table',
  tarpit: 'timeout',
  sessions: 'rate-limit',
  size: 'table',
};

/**
 * One number of a frontend's limit where it stands: `named` its knob's name, `param` what the
 * render rewrites ('limit' on the deny's or its acl's line, 'period' or 'expire' on the table's,
 * 'tarpit' on the `timeout tarpit` line).
 */
const numberOf = (r, knob, { named, param, kind, value, at, what, min = 1 }) => ({
  knob: knob(named),
  kind,
  value,
  ...(kind === 'count' ? { min } : {}),
  at,
  path: [PATH_OF[param]],
  param,
  doc: `frontend ${r.frontend}: ${what} (${at})`,
});

/** The knob's name of the period of the rate a counter reads (RATE_PERIODS), or null for a count. */
const periodParamOf = (counter) => Object.keys(RATE_PERIODS).find((p) => RATE_PERIODS[p] === counter) ?? null;

/** Where a deny's limit stands: the set-var that holds it, its acl's line, or its own. */
const limitAtOf = (deny) => deny.limitAt ?? deny.acl ?? deny.at;

/** The numbers of a frontend's limit, each where it stands (its table's size where an evict case tells it: evictOf). */
function numbersOf(r, knob, { evict }) {
  const { table, deny } = r.limit;
  const n = (param, kind, value, at, what) => numberOf(r, knob, { named: param, param, kind, value, at, what });
  const period = periodParamOf(deny.counter);
  return [
    n('limit', 'count', deny.limit, limitAtOf(deny), `the ${deny.action}'s limit on ${deny.counter}`),
    ...(period
      ? [n(period, 'seconds', ratePeriodMs(deny.counter, table) / 1000, table.at, `${deny.counter} period in s`)]
      : []),
    ...(table.expireMs !== null ? [n('expire', 'seconds', table.expireMs / 1000, table.at, 'table expire in s')] : []),
    ...tarpitNumbers(r, knob, [deny]),
    ...sessionsNumbers(r, knob),
    ...(evict
      ? [n('size', 'count', table.size, table.at, 'table size: how many entries it holds, the oldest trashed past it')]
      : []),
  ];
}

// The least table size an evict case is planned for: room for a key of each other case (SLOTS)
// beside the evict case's, so that theirs are never the oldest when the table is full.
const EVICT_LEAST = SLOTS + 2;
// The counters a request counts one on, which an evict case drives over the limit.
const EVICT_COUNTERS = new Set(['http_req_rate', 'http_req_cnt', 'conn_rate', 'conn_cnt']);
// Where a table's key comes from, by what the lab can send many of in one case.
const EVICT_FETCH = { header: 'header', param: 'param' };

/** Why a frontend's table size has no evict case (null where it has one). */
function evictRefusal({ table, deny, track }) {
  if (!EVICT_FETCH[track.key.fetch])
    return track.key.fetch === 'src'
      ? "tracked by src: the lab's one address (127.0.0.1) makes one entry"
      : `tracked by ${track.key.text}: the lab sends many keys of its own only in a header or a URL parameter`;
  if (table.type === 'binary') return 'a binary table: the lab sends no fresh binary keys';
  if (!EVICT_COUNTERS.has(deny.counter) || !['gt', 'ge'].includes(deny.op))
    return `its test (${deny.counter} ${deny.op}) is not one a client's own requests drive over`;
  if (table.size < EVICT_LEAST) return `fewer than ${EVICT_LEAST} entries: the lab's other cases' keys fill it`;
  return null;
}

/**
 * A frontend's table size as a case can tell it: {evict: {header | param, type}} where an evict
 * case (lab/policy/experiment.mjs evictSteps) can, or {unplanned: [why]} where its table has a
 * size no case can, or {} where it has none.
 */
function evictOf(r) {
  const { table, track } = r.limit;
  if (table.size === null) return {};
  const why = evictRefusal(r.limit);
  if (why) return { unplanned: [`stick-table size ${table.size} (${table.at}): no evict case: ${why}`] };
  return { evict: { [EVICT_FETCH[track.key.fetch]]: track.key.name, type: table.type } };
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

/** The frontend's accept limit (`rate-limit sessions N`), where it has one, as a number of its own. */
function sessionsNumbers(r, knob) {
  if (!r.sessions) return [];
  const what = 'rate-limit sessions: connections it accepts per second, the rest wait';
  const { limit: value, at } = r.sessions;
  return [numberOf(r, knob, { named: 'sessions', param: 'sessions', kind: 'rate', value, at, what })];
}

/** The accept limit under the knobs `k`, where the frontend has one: {sessions} (limiter-replay.js acceptOf). */
const sessionsOf = (r, k, knob) => (r.sessions ? { sessions: k[knob('sessions')] } : {});

/** A tarpit's hold under the knobs `k` in ms ({tarpitMs}), or nothing for a deny (answered at once). */
const tarpitOf = (deny, k, knob) =>
  deny.hold ? { tarpitMs: deny.hold.knob ? k[knob('tarpit')] * 1000 : deny.hold.ms } : {};

/**
 * What a test lets through its limit over, s: the period of the rate it reads (http_req_rate,
 * gpc0_rate, gpc1_rate), or its table's expire for a count.
 */
const windowS = ({ counter }, table) => (ratePeriodMs(counter, table) ?? table.expireMs ?? 60_000) / 1000;

/**
 * How long an entry of `table` takes to forget, s: two periods of every rate it stores without a
 * request, or its expire if sooner; where a rule reads a count of it (`counted`: http_req_cnt, a
 * gpc's, such as a flag), only its expire (Infinity: never).
 */
function forgetS(table, counted) {
  const expireS = table.expireMs === null ? Infinity : table.expireMs / 1000;
  if (counted) return expireS;
  const periods = [table.periodMs, ...table.gpcRateMs, table.connRateMs].filter((p) => p !== null);
  return Math.min((2 * (Math.max(0, ...periods) || (table.expireMs ?? 60_000))) / 1000, expireS);
}

// Why a TLS listener's accept limit has no case: HAProxy 2.6 counts a TLS connection's session
// once its handshake is done (src/session.c conn_complete_session), so it accepts past its limit
// while handshakes are under way, by as many as this machine's handshake time lets in (measured:
// a second's wait came out 70 ms shorter than the count at accept gives).
const TLS_ACCEPT =
  "no sessions case on a TLS listener yet: HAProxy counts a TLS connection once its handshake is done, so it accepts past the limit while handshakes are under way, by as many as the handshake's time on this machine lets in, which the model does not know";

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
  // Its accept limit, which its sessions cases meet (lab/policy/experiment.mjs sessionSteps).
  ...(r.sessions
    ? {
        sessions: {
          ...r.sessions,
          knob: knobName(r.frontend, 'sessions'),
          ...(r.tls ? { unplanned: TLS_ACCEPT } : {}),
        },
      }
    : {}),
});

/**
 * What a test on conn_cur limits: the streams of its entry in progress at once, as a case's conn
 * limit (named by the tracker it reads, as its cases are).
 */
const inFlightOf = (test, knob) => ({
  zone: `sc${test.sc}_conn_cur`,
  conn: test.limit,
  knob,
  status: test.status,
});

/**
 * What an evict case needs of its target (evictOf's `evict`, with the knobs of its size, its
 * limit and the window the limit counts over), or why it has none (`unplanned`).
 */
function evictTarget({ evict, unplanned }, r, knob) {
  if (unplanned) return { unplanned };
  if (!evict) return {};
  const { table, deny } = r.limit;
  const period = periodParamOf(deny.counter);
  const windowOf = (k) => (period ? k[knob(period)] : table.expireMs === null ? Infinity : k[knob('expire')]);
  return {
    evict: {
      ...evict,
      load: (k) => ({
        size: k[knob('size')],
        limit: k[knob('limit')],
        windowS: windowOf(k),
        expireS: table.expireMs === null ? Infinity : k[knob('expire')],
      }),
      at: table.at,
    },
  };
}

/** One frontend as a target. */
function frontendTarget(r) {
  const { table, deny, track } = r.limit;
  const sends = slotsOf([track]);
  const knob = (param) => knobName(r.frontend, param);
  const periodS = windowS(deny, table);
  const expireS = table.expireMs === null ? Infinity : table.expireMs / 1000;
  // A limit on the streams in progress has no rate: its cases hold the backend's answers.
  const inFlight = deny.counter === 'conn_cur';
  const evict = evictOf(r);
  return {
    ...targetBase(r, sends),
    numbers: numbersOf(r, knob, evict),
    build: (k) => {
      const seconds = (param, ms) => (ms === null ? null : (k[knob(param)] ?? ms / 1000));
      return {
        kind: 'stick_table_rate',
        counter: deny.counter,
        op: deny.op,
        limit: k[knob('limit')],
        periodMs: (seconds('period', table.periodMs) ?? periodS) * 1000,
        expireMs: table.expireMs === null ? Infinity : k[knob('expire')] * 1000,
        ...streamsOf(table, seconds),
        ...tarpitOf(deny, k, knob),
        ...sessionsOf(r, k, knob),
        // Where an evict case fills the table: its room, and a key per request.
        ...(evict.evict ? { size: k[knob('size')], keyed: true, ...(table.nopurge ? { nopurge: true } : {}) } : {}),
      };
    },
    ...evictTarget(evict, r, knob),
    status: deny.status,
    // What it lets through over its period, and all at once into an empty window.
    rate: inFlight ? null : deny.limit / periodS,
    burst: inFlight ? null : deny.limit,
    ...(inFlight ? { conns: [inFlightOf(deny, knob('limit'))] } : {}),
    keys: [{ zone: `stick-table ${table.at}, tracked by ${track.key.text}`, how: sends.how(track) }],
    // An entry forgets after two periods without a request (or when it expires, if sooner); the
    // streams in progress are gone once answered.
    drainS: inFlight ? 0 : Math.min(2 * periodS, expireS),
    // Its window still counts what the overload sent when the client slows down: a case of its
    // own key follows the overload, even where each case has its own.
    lingers: !inFlight,
    class: track.key.fetch === 'src' ? 'src: the client address' : `${track.key.text}: a key of its own per case`,
  };
}

/**
 * A chain's numbers: each deny's limit (the first's knob `limit`, the next ones' `limit2`, ...),
 * each flag's (a sc-inc-gpc's test: `flag_limit`, `flag2_limit`, ...), each table's periods and
 * expire once (the first tracker's as `period`, another's as `scN_period`): {numbers, limitKnob(i),
 * flagKnob(i), tableKnob(at, param)}.
 */
function chainNumbers(r, knob) {
  const { trackers, denies, incs } = r.limit.chain;
  const n = (named, param, kind, value, at, what, min) =>
    numberOf(r, knob, { named, param, kind, value, at, what, min });
  const limitNamed = (i) => (i ? `limit${i + 1}` : 'limit');
  const flagNamed = (i) => `flag${i ? i + 1 : ''}_limit`;
  // A test on a gpc's count may be `gt 0`: a flag set once.
  const minOf = (d) => (/^gpc\d$/.test(d.counter) ? 0 : 1);
  const numbers = denies.map((d, i) =>
    n(
      limitNamed(i),
      'limit',
      'count',
      d.limit,
      limitAtOf(d),
      `the ${d.action}'s limit on sc${d.sc} ${d.counter}`,
      minOf(d),
    ),
  );
  incs.forEach((f, i) => {
    if ('op' in f)
      numbers.push(
        n(
          flagNamed(i),
          'limit',
          'count',
          f.limit,
          limitAtOf(f),
          `${f.action}'s limit on sc${f.sc} ${f.counter}`,
          minOf(f),
        ),
      );
  });
  const tableNamed = new Map();
  for (const t of trackers) {
    if (tableNamed.has(t.table.at)) continue;
    const prefix = t === trackers[0] ? '' : `sc${t.sc}_`;
    tableNamed.set(t.table.at, prefix);
    for (const [param, counter] of Object.entries(RATE_PERIODS)) {
      const ms = ratePeriodMs(counter, t.table);
      if (ms !== null)
        numbers.push(n(`${prefix}${param}`, param, 'seconds', ms / 1000, t.table.at, `${counter} period in s`));
    }
    if (t.table.expireMs !== null)
      numbers.push(n(`${prefix}expire`, 'expire', 'seconds', t.table.expireMs / 1000, t.table.at, 'table expire in s'));
  }
  numbers.push(...tarpitNumbers(r, knob, denies), ...sessionsNumbers(r, knob));
  return {
    numbers,
    limitKnob: (i) => knob(limitNamed(i)),
    flagKnob: (i) => knob(flagNamed(i)),
    tableKnob: (at, param) => knob(`${tableNamed.get(at)}${param}`),
  };
}

/** The model's rules of a chain under the knobs `k`: each tracker, deny and flag by its index in `index`. */
function chainRules(r, k, { limitKnob, flagKnob }, index, knob) {
  const { rules, denies, incs } = r.limit.chain;
  return rules.map((x) => {
    if ('track' in x) return { track: index.get(x.track) };
    if ('inc' in x) {
      const f = incs[x.inc];
      const test = 'op' in f ? { reads: index.get(f.sc), counter: f.counter, op: f.op, limit: k[flagKnob(x.inc)] } : {};
      return { inc: index.get(f.inc), gpc: f.gpc, ...test };
    }
    const d = denies[x.deny];
    return {
      deny: index.get(d.sc),
      counter: d.counter,
      op: d.op,
      limit: k[limitKnob(x.deny)],
      ...tarpitOf(d, k, knob),
    };
  });
}

/** Whether a test reads a gpc's count that no rule of the chain adds to: it stays 0. */
const neverSet = (test, incs) =>
  /^gpc\d$/.test(test.counter) && !incs.some((f) => f.inc === test.sc && `gpc${f.gpc}` === test.counter);

/**
 * How long a chain's entries take to forget, s: the longest of its tables' (forgetS); refused
 * where an entry every case shares (src) never forgets what the cases read.
 */
function chainDrainS(r) {
  const { trackers, incs } = r.limit.chain;
  const tests = testsOf(r.limit.chain).filter((t) => !neverSet(t, incs));
  return Math.max(
    ...trackers.map((t) => {
      // conn_cur is what is in progress now: nothing of it is kept once the answers are sent.
      const counts = tests
        .filter((x) => x.sc === t.sc && !/rate$/.test(x.counter) && x.counter !== 'conn_cur')
        .map((x) => x.counter);
      const s = forgetS(t.table, counts.length > 0);
      if (s === Infinity && t.key.fetch === 'src')
        throw new Error(
          `${t.table.at}: a count read from this table (${counts.join(', ')}) is never forgotten without an expire, and every case from 127.0.0.1 shares the entry ${t.key.text} makes: give the table an expire`,
        );
      return s;
    }),
  );
}

/** Several trackers, denies or flags on one frontend as a target (stick-table-rate.js stickTableChain). */
function chainTarget(r) {
  const { trackers, denies, incs } = r.limit.chain;
  const knob = (param) => knobName(r.frontend, param);
  const named = chainNumbers(r, knob);
  const index = new Map(trackers.map((t, i) => [t.sc, i]));
  const seconds = (k, t, param, ms) => (ms === null ? null : (k[named.tableKnob(t.table.at, param)] ?? ms / 1000));
  const tableOfSc = (sc) => trackers[index.get(sc)].table;
  // What each test lets through over its window; a deny on a flag (a gpc's count) follows the
  // flag's own test, where one sets it, and never holds where no rule adds to that gpc.
  const flagged = incs.some((f) => 'op' in f);
  const tests = testsOf(r.limit.chain).filter(
    (t) => t.counter !== 'conn_cur' && !neverSet(t, incs) && !(flagged && !('inc' in t) && /^gpc\d$/.test(t.counter)),
  );
  const perS = (t) => t.limit / windowS(t, tableOfSc(t.sc));
  const tightest = tests.length ? tests.reduce((a, t) => (perS(t) < perS(a) ? t : a)) : null;
  if (tightest && !perS(tightest))
    throw new Error(`${tightest.at}: lets nothing through after the first request: there is no rate to load it at`);
  // Each deny on conn_cur: its cases hold the backend's answers.
  const conns = denies.flatMap((d, i) => (d.counter === 'conn_cur' ? [inFlightOf(d, named.limitKnob(i))] : []));
  const sends = slotsOf(trackers);
  return {
    ...targetBase(r, sends),
    numbers: named.numbers,
    build: (k) => ({
      kind: 'stick_table_chain',
      trackers: trackers.map((t) => ({
        periodMs: (seconds(k, t, 'period', t.table.periodMs) ?? 1) * 1000,
        expireMs: t.table.expireMs === null ? Infinity : seconds(k, t, 'expire', t.table.expireMs) * 1000,
        ...gpcRatesOf(t.table, (param, ms) => seconds(k, t, param, ms)),
        ...streamsOf(t.table, (param, ms) => seconds(k, t, param, ms)),
      })),
      rules: chainRules(r, k, named, index, knob),
      ...sessionsOf(r, k, knob),
    }),
    status: denies[0].status,
    rate: tightest ? perS(tightest) : null,
    burst: tightest?.limit ?? null,
    ...(conns.length ? { conns } : {}),
    keys: trackers.map((t) => ({
      zone: `stick-table ${t.table.at}, tracked by ${t.key.text} (sc${t.sc})`,
      how: sends.how(t),
    })),
    drainS: chainDrainS(r),
    lingers: tightest !== null,
    class: trackers.map((t) => (t.key.fetch === 'src' ? 'src' : t.key.text)).join(' and '),
    ...chainSizesUnplanned(trackers),
  };
}

/** Each sized table of a chain's trackers, said on its route: no evict case fills one of several. */
function chainSizesUnplanned(trackers) {
  const sized = [...new Map(trackers.filter((t) => t.table.size !== null).map((t) => [t.table.at, t.table])).values()];
  if (!sized.length) return {};
  const why = 'several trackers or rules on one request (an evict case fills the table of a frontend with one)';
  return { unplanned: sized.map((t) => `stick-table size ${t.size} (${t.at}): no evict case: ${why}`) };
}

/** A table's gpc rates in ms where it stores them ({gpc0RateMs, gpc1RateMs}), `seconds` reading their knobs. */
function gpcRatesOf(table, seconds) {
  const out = {};
  table.gpcRateMs.forEach((ms, i) => {
    if (ms !== null) out[`gpc${i}RateMs`] = seconds(`gpc${i}_period`, ms) * 1000;
  });
  return out;
}

/**
 * What a table stores of the streams its tracking counts, where it does: conn_rate's period in ms
 * (`seconds` reading its knob) and whether it keeps conn_cur ({connRateMs, connCur}).
 */
function streamsOf(table, seconds) {
  return {
    ...(table.connRateMs !== null ? { connRateMs: seconds('conn_period', table.connRateMs) * 1000 } : {}),
    ...(table.connCur ? { connCur: true } : {}),
  };
}

/**
 * A frontend whose only limit is its accept limit (rate-limit sessions, no deny): its rules let
 * every request through, and only its sessions cases, each request on a connection of its own,
 * meet the limit (lab/policy/experiment.mjs sessionSteps).
 */
function acceptTarget(r) {
  const knob = (param) => knobName(r.frontend, param);
  const sends = { slots: [{ path: '/', headers: {} }], slotKeys: [{}], shared: false };
  return {
    ...targetBase(r, sends),
    numbers: sessionsNumbers(r, knob),
    build: (k) => ({ kind: 'stick_table_chain', trackers: [], rules: [], ...sessionsOf(r, k, knob) }),
    // Nothing is refused: a refusal of HAProxy's own default status would be a wrong answer.
    status: 429,
    rate: null,
    burst: null,
    acceptOnly: true,
    keys: [],
    drainS: 0,
    class: 'every client: the frontend counts connections, not clients',
  };
}

/** The HAProxy targets of `policy`: {targets, routes} (routes: the Policy tab's words per frontend). */
export function haproxyTargets(policy) {
  const targets = [];
  const routes = [];
  for (const r of policy.routes) {
    const label = `frontend ${r.frontend}`;
    if (r.none) routes.push({ route: label, at: r.at, none: r.none });
    else if (!r.limit && r.tls)
      routes.push({ route: label, at: r.at, none: `rate-limit sessions alone: ${TLS_ACCEPT}` });
    else if (!r.limit) targets.push(acceptTarget(r));
    else targets.push(r.limit.chain ? chainTarget(r) : frontendTarget(r));
  }
  return { targets, routes };
}
