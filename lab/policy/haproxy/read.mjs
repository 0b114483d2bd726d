/*
 * A team's haproxy.cfg as the lab reads it: what the lab refuses whatever HAProxy says (peers,
 * Lua, maps), then HAProxy's own word on it (`haproxy -c`), then its sections line by line, each
 * directive with its file:line. What the model reads: a frontend (or listen) in HTTP mode, its
 * binds (TLS ones served with the lab's certificate, a plain one that redirects to them), its
 * stick table storing http_req_rate(P), http_req_cnt, gpc0, gpc1 or their rates, conn_rate(P),
 * conn_cnt or conn_cur (the streams a request's tracking counts, and those in progress),
 * `http-request track-sc0 <key>` or `tcp-request content track-sc0 <key>` (src, a request
 * header, a URL parameter, or Host and path: base, base32+src),
 * `http-request sc-inc-gpc0(0) [if { sc_http_req_rate(0) gt N }]` (a client flagged) and
 * `http-request deny [deny_status N] if { sc_http_req_rate(0) gt N }` (or `tarpit`, held for its
 * `timeout tarpit`, or `return status N if ...`; sc0_http_req_rate, sc_http_req_cnt,
 * sc_get_gpc0, sc_gpc0_rate, sc_conn_rate, sc_conn_cnt, sc_conn_cur; gt, ge; or variables set
 * to the counter and the limit). What it cannot read yet is refused by name, with where it
 * stands; it is never guessed.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { labPem } from './cert.mjs';
import { termsOf, termHolds, termWords, labHolds } from './condition.mjs';

export const HAPROXY = '/usr/sbin/haproxy';

const SECTIONS = new Set([
  'global',
  'defaults',
  'frontend',
  'backend',
  'listen',
  'peers',
  'resolvers',
  'userlist',
  'cache',
  'program',
  'http-errors',
  'ring',
  'mailers',
]);

// What a backslash makes an ordinary character of (any other backslash stays, as in a regex).
const ESCAPED = new Set([' ', '\\', '#', "'", '"']);

/**
 * HAProxy's words of a line: spaces split, quotes keep them together, a backslash outside single
 * quotes takes a space, a quote, a # or a backslash as it is, a # outside quotes ends it.
 */
export function words(line) {
  const out = [];
  let cur = '';
  let quote = null;
  let any = false;
  for (let i = 0; i < line.length; i += 1) {
    const ch = line[i];
    if (ch === '\\' && quote !== "'" && ESCAPED.has(line[i + 1])) cur += line[++i];
    else if (quote) {
      if (ch === quote) quote = null;
      else cur += ch;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      any = true;
    } else if (ch === '#') break;
    else if (/\s/.test(ch)) {
      if (cur || any) out.push(cur);
      cur = '';
      any = false;
    } else cur += ch;
  }
  if (cur || any) out.push(cur);
  return out;
}

/** The file's sections: [{kind, name, at, lines: [{words, at}]}]. */
export function sectionsOf(text, file) {
  const sections = [];
  text.split('\n').forEach((line, i) => {
    const w = words(line);
    if (!w.length) return;
    const at = `${basename(file)}:${i + 1}`;
    if (SECTIONS.has(w[0]) && /^\S/.test(line))
      sections.push({ kind: w[0], name: w[1] ?? null, from: w[2] === 'from' ? w[3] : null, at, lines: [] });
    else if (sections.length) sections.at(-1).lines.push({ words: w, at });
  });
  return sections;
}

/** A word as HAProxy reads it back: quoted (quotes and backslashes escaped) where it must be. */
export const quoteWord = (w) => (w === '' || /[\s#"'\\]/.test(w) ? `"${w.replace(/[\\"]/g, (c) => `\\${c}`)}"` : w);

/** A server's address as the check takes it: the loopback, at the server's own port. */
const checkedServer = (addr) => `127.0.0.1:${/:(\d+)$/.exec(addr)?.[1] ?? '80'}`;

/**
 * A line as HAProxy checks it for the lab: a TLS bind with the lab's certificate `pem` for the
 * host's, a server at the loopback (a name such as a compose service's resolves nowhere here, and
 * the lab puts its own backend there); any other line as written.
 */
function checkedLine(l, pem) {
  const w = words(l);
  if (w[0] === 'bind' && w.includes('ssl')) return `  ${labBindWords(w, pem).map(quoteWord).join(' ')}`;
  if (w[0] === 'server' && w.length > 2)
    return `  ${['server', w[1], checkedServer(w[2]), ...w.slice(3)].map(quoteWord).join(' ')}`;
  return l;
}

/**
 * HAProxy's own check of the file: its message where it refuses it. A TLS bind's certificate is
 * the host's, not the lab's to read, and its servers are the lab's backend: a copy is checked
 * (checkedLine), in a folder of its own, gone after; HAProxy's words name the team's file.
 */
function validate(file, text) {
  const dir = mkdtempSync(join(tmpdir(), 'lab-haproxy-check-'));
  const checked = join(dir, basename(file));
  try {
    const pem = text.split('\n').some((l) => /^\s*bind\s.*\sssl(\s|$)/.test(l)) ? labPem(dir) : null;
    writeFileSync(
      checked,
      text
        .split('\n')
        .map((l) => checkedLine(l, pem))
        .join('\n'),
    );
    execFileSync(HAPROXY, ['-c', '-f', checked], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    const lines = `${e.stderr || ''}${e.stdout || ''}`.trim().split('\n');
    const alerts = lines.filter((l) => /\[ALERT\]/.test(l));
    const said = (alerts.length ? alerts : lines).slice(0, 3).join(' ').replace(/\s+/g, ' ');
    throw new Error(`${file}: haproxy -c refuses it: ${said.split(checked).join(file)}`, { cause: e });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// A TLS bind's options that name the host's files or check the client: the lab serves its own
// certificate to a client it does not check (each takes a value), and answers without SNI.
const BIND_HOST_TLS = new Set(['crt', 'crt-list', 'ca-file', 'crl-file', 'verify', 'ca-verify-file', 'ca-sign-file']);
const BIND_SNI_ONLY = new Set(['strict-sni']);

// What a TLS bind offers a client, kept as deployed: each of these takes a value...
const BIND_TLS_VALUED = new Set([
  'alpn',
  'npn',
  'ciphers',
  'ciphersuites',
  'curves',
  'ecdhe',
  'ssl-min-ver',
  'ssl-max-ver',
]);
// ...and each of these is a flag.
const BIND_TLS_FLAGS = new Set([
  'no-sslv3',
  'no-tlsv10',
  'no-tlsv11',
  'no-tlsv12',
  'no-tlsv13',
  'force-tlsv12',
  'force-tlsv13',
  'prefer-client-ciphers',
  'no-tls-tickets',
  'allow-0rtt',
]);

/** What a TLS bind offers a client (ALPN, versions, ciphers), its words as written. */
export function tlsOptionsOf(w) {
  const kept = [];
  for (let i = 2; i < w.length; i += 1) {
    if (BIND_TLS_VALUED.has(w[i])) kept.push(w[i], w[++i]);
    else if (BIND_TLS_FLAGS.has(w[i])) kept.push(w[i]);
  }
  return kept;
}

/**
 * Whether k6 speaks HTTP/2 to a TLS bind: HAProxy picks, in its own ALPN order, the first protocol
 * the client offers (k6 offers h2 and http/1.1); no ALPN is HTTP/1.1.
 */
function prefersH2(w) {
  const opts = tlsOptionsOf(w);
  const i = opts.indexOf('alpn');
  return i >= 0 && opts[i + 1].split(',').find((p) => p === 'h2' || p === 'http/1.1') === 'h2';
}

/** A TLS bind's words (`bind ADDR ssl ...`) with the lab's certificate `pem` for the host's. */
export function labBindWords(w, pem) {
  const kept = [];
  for (let i = 2; i < w.length; i += 1) {
    if (BIND_HOST_TLS.has(w[i])) i += 1;
    else if (!BIND_SNI_ONLY.has(w[i])) kept.push(w[i]);
  }
  return [w[0], w[1], ...kept, 'crt', pem];
}

const MS = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
/** An HAProxy time ("10s", "1m", "500": ms by default) in ms. */
export function timeMs(text, at) {
  const m = /^(\d+)(us|ms|s|m|h|d)?$/.exec(text);
  if (!m) throw new Error(`${at}: '${text}' is not a time HAProxy reads`);
  return Number(m[1]) * MS[m[2] ?? 'ms'];
}

// Actions that leave the limit as it is: they change headers, or answer after the deny.
const HARMLESS = new Set(['set-header', 'add-header', 'del-header', 'replace-header', 'capture', 'set-log-level']);
// What the global section may hold that the lab sets itself, and why: it runs HAProxy in the
// foreground, as its own user, logging to its own file, in one thread.
const OWN = 'the lab runs HAProxy in the foreground, as its own user, logging to its own file';
// src/fd.c fd_write_frag_line: a thread gives up a log line after 200 tries while another thread
// writes the log, and the log is the lab's count of each case (seen dropping lines on 2 busy cores).
const ONE_THREAD =
  "the lab runs one thread: with more, HAProxy drops a log line when two threads write it at once (src/fd.c), and the log is the lab's count of each case";
export const GLOBAL_OWN = new Map([
  ...['daemon', 'chroot', 'user', 'group', 'uid', 'gid', 'pidfile', 'log', 'stats', 'master-worker'].map((k) => [
    k,
    OWN,
  ]),
  ...['nbthread', 'thread-groups', 'cpu-map'].map((k) => [k, ONE_THREAD]),
]);

// What the lab's `no strict-limits` (render.mjs) does to a global maxconn.
export const FD_WORDS =
  'kept; HAProxy asks for two open files per connection, and runs with `no strict-limits`, so it starts with the open files this machine allows (fewer connections than that if so) instead of exiting';

/**
 * The defaults section a proxy section takes its settings from: the one it names (`frontend X from
 * NAME`), else the last one before it, as HAProxy 2.6 reads the file; null where there is none.
 */
function defaultsOf(sections, sec) {
  const before = sections.slice(0, sections.indexOf(sec)).filter((s) => s.kind === 'defaults');
  return (sec.from ? before.findLast((s) => s.name === sec.from) : before.at(-1)) ?? null;
}

/** A proxy section's last line of `kw` (words[0]) matching `more`, else its defaults'; null where neither has one. */
function settingOf(sections, sec, kw, more = () => true) {
  for (const holder of [sec, defaultsOf(sections, sec)].filter(Boolean)) {
    const l = holder.lines.findLast((x) => x.words[0] === kw && more(x.words));
    if (l) return l;
  }
  return null;
}

/**
 * How long a tarpitted request is held before HAProxy answers it ({ms, at, why, knob}; knob: it
 * stands on a `timeout tarpit` line, which the lab may rewrite): the section's
 * (or its defaults') `timeout tarpit`, else its `timeout connect`, which only a section that is
 * also a backend (listen) has: a frontend's is 0 ms, answered at once (src/cfgparse.c copies the
 * connect timeout, src/proxy.c gives a frontend none; src/http_ana.c then holds for 0 ms).
 */
function tarpitHoldOf(sections, sec) {
  const timeout = (which) => settingOf(sections, sec, 'timeout', (w) => w[1] === which);
  const tarpit = timeout('tarpit');
  if (tarpit) return { ms: timeMs(tarpit.words[2], tarpit.at), at: tarpit.at, why: 'timeout tarpit', knob: true };
  const connect = sec.kind === 'frontend' ? null : timeout('connect');
  if (connect)
    return { ms: timeMs(connect.words[2], connect.at), at: connect.at, why: 'timeout connect (no timeout tarpit)' };
  return {
    ms: 0,
    at: sec.at,
    why: `no timeout tarpit${sec.kind === 'frontend' ? ', and a frontend has no timeout connect to fall back on' : ' or timeout connect'}: held 0 ms`,
  };
}

/** Refused by name wherever it stands: what the model cannot read, and why. */
function refuseAnywhere(sections) {
  for (const sec of sections) {
    if (sec.kind === 'peers')
      throw new Error(
        `${sec.at}: peers ${sec.name}: stick tables shared between HAProxies; the lab runs one, and its model one table`,
      );
    for (const l of sec.lines) {
      if (/^lua-/.test(l.words[0]) || l.words.some((w) => /^lua\./.test(w)))
        throw new Error(
          `${l.at}: ${l.words.slice(0, 2).join(' ')}: Lua actions are not modelled; the lab cannot say what they do to a request`,
        );
      if (l.words.some((w) => /(^|[(,])map(_\w+)?\(/.test(w)))
        throw new Error(
          `${l.at}: a map (${l.words.find((w) => /map/.test(w))}): its file is another input the lab does not read yet`,
        );
    }
  }
}

// A table's size suffixes, as HAProxy's parse_size_err (src/tools.c) reads them: powers of 1024.
const SIZE_SHIFT = { '': 0, k: 10, m: 20, g: 30 };
/** A stick-table's `size` (entries), or null where the line has none (haproxy -c says so). */
function sizeOf(text, at) {
  if (text === undefined) return null;
  const m = /^(\d+)([kmg]?)$/i.exec(text);
  if (!m) throw new Error(`${at}: stick-table size '${text}' is not a size HAProxy reads`);
  return Number(m[1]) * 2 ** SIZE_SHIFT[m[2].toLowerCase()];
}

/** The stick table of a `track-scN ... [table NAME]`: its section's stick-table line, read. */
function tableOf(sections, own, name, at, action) {
  const holder = name ? sections.find((s) => (s.kind === 'backend' || s.kind === 'listen') && s.name === name) : own;
  const line = holder?.lines.find((l) => l.words[0] === 'stick-table');
  if (!line)
    throw new Error(
      `${at}: ${action} names ${name ? `table ${name}` : "its section's table"}, and there is no stick-table there`,
    );
  const w = line.words;
  const opt = (k) => (w.indexOf(k) > 0 ? w[w.indexOf(k) + 1] : undefined);
  if (!KEY_TYPES.has(opt('type')))
    throw new Error(
      `${line.at}: stick-table type ${opt('type')}: the lab keys a table of type ip, ipv6, string, binary or integer yet`,
    );
  const store = (opt('store') ?? '').split(',');
  const periodOf = (name) => {
    const m = store.map((x) => new RegExp(`^${name}\\((\\w+)\\)$`).exec(x)).find(Boolean);
    return m ? timeMs(m[1], line.at) : null;
  };
  return {
    at: line.at,
    type: opt('type'),
    periodMs: periodOf('http_req_rate'),
    count: store.includes('http_req_cnt'),
    gpc: [store.includes('gpc0'), store.includes('gpc1')],
    gpcRateMs: [periodOf('gpc0_rate'), periodOf('gpc1_rate')],
    connRateMs: periodOf('conn_rate'),
    connCount: store.includes('conn_cnt'),
    connCur: store.includes('conn_cur'),
    expireMs: opt('expire') ? timeMs(opt('expire'), line.at) : null,
    size: sizeOf(opt('size'), line.at),
    nopurge: w.includes('nopurge'),
  };
}

/** The rates a table may store, by the knob that moves each one's period (targets.mjs, render.mjs). */
export const RATE_PERIODS = {
  period: 'http_req_rate',
  gpc0_period: 'gpc0_rate',
  gpc1_period: 'gpc1_rate',
  conn_period: 'conn_rate',
};

/** The period of the rate a counter reads in `table` (one of RATE_PERIODS'), ms; null for a count. */
export const ratePeriodMs = (counter, table) =>
  ({
    http_req_rate: table.periodMs,
    gpc0_rate: table.gpcRateMs[0],
    gpc1_rate: table.gpcRateMs[1],
    conn_rate: table.connRateMs,
  })[counter] ?? null;

/**
 * Whether a table stores what a counter's fetch reads (a rate, a gpc's count, the requests' or the
 * streams' count, or the streams in progress).
 */
export function storesCounter(table, counter) {
  if (counter.endsWith('_rate')) return ratePeriodMs(counter, table) !== null;
  if (counter === 'conn_cnt') return table.connCount;
  if (counter === 'conn_cur') return table.connCur;
  const gpc = /^gpc([01])$/.exec(counter);
  return gpc ? table.gpc[gpc[1]] : table.count;
}

/** A limit's tests on tracked counters, each with the sc it reads: its denies, and its flags that have a test. */
export const testsOf = ({ denies, incs }) => [...denies, ...incs.filter((f) => 'op' in f)];

// The table types the lab makes keys of its own for, one per case (lab/policy/haproxy/targets.mjs).
const KEY_TYPES = new Set(['ip', 'ipv6', 'string', 'binary', 'integer']);

// Keys made of the request's Host and path (base), or their hash (base32), and with the client's
// address (base32+src): each case sends a path of its own.
const BASE_KEYS = new Set(['base', 'base32', 'base32+src']);

/**
 * What a track-sc0 keys on: {fetch: 'src'} (the client's address), {fetch: 'header', name} (a
 * request header: req.hdr, hdr, req.fhdr, req.hdr_ip, hdr_ip), {fetch: 'param', name} (a URL
 * parameter: url_param, urlp) or {fetch: 'base'} (Host and path: base, base32, base32+src);
 * `text` as written.
 */
export function keyOf(text, at, action = 'track-sc0') {
  if (text === 'src') return { fetch: 'src', text };
  if (BASE_KEYS.has(text)) return { fetch: 'base', text };
  const m = /^(req\.hdr|hdr|req\.fhdr|req\.hdr_ip|hdr_ip|url_param|urlp)\(([A-Za-z0-9_-]+)\)$/.exec(text);
  if (!m)
    throw new Error(
      `${at}: ${action} ${text}: the lab keys on src, a request header (req.hdr(name)), a URL parameter (url_param(name)) or base, base32, base32+src yet`,
    );
  return { fetch: /^url/.test(m[1]) ? 'param' : 'header', name: m[2].toLowerCase(), text };
}

/**
 * `http-request track-scN <key> [table NAME] [if|unless ...]`: {sc, at, key, table}. A condition
 * must hold for every request of the lab's (labHolds: on the path, the method or the source), or
 * the tracking is refused: one that holds for none never tracks them, one it cannot decide is said.
 */
function trackOf(sections, sec, l, [action, ...rest], acls = []) {
  const sc = Number(action.slice(-1));
  if (sc > 2) throw new Error(`${l.at}: ${action}: HAProxy 2.6 tracks sc0 to sc2`);
  const key = keyOf(rest[0], l.at, action);
  const t = rest.indexOf('table');
  // Anything after the key and its table is a condition (`if`/`unless`), wherever the table stands.
  const cond = rest.slice(t === 1 ? 3 : 1);
  const said = `${l.at}: ${action} ${rest.join(' ')}`;
  if (cond.length && !labHolds(cond, aclTestOf(acls, l.at), said))
    throw new Error(
      `${said}: its condition holds for none of the lab's requests (GET / from 127.0.0.1): it never tracks them`,
    );
  const table = tableOf(sections, sec, t === 1 ? rest[2] : null, l.at, action);
  if (key.fetch === 'src' && table.type === 'string')
    throw new Error(`${l.at}: ${action} src into a table of type string (${table.at}): key it by type ip`);
  if (key.fetch === 'base' && (table.type === 'ip' || table.type === 'ipv6'))
    throw new Error(
      `${l.at}: ${action} ${key.text} into a table of type ${table.type} (${table.at}): HAProxy tracks nothing; key it by type binary or string`,
    );
  return { sc, at: l.at, key, table };
}

// A tracked counter's fetch: the request's rate or count, a gpc's count (get_gpc0) or rate, and
// conn_rate, conn_cnt, conn_cur: tracked by an http-request or tcp-request content rule, each
// request is a stream of its own that the tracking counts (include/haproxy/stream.h
// stream_start_counters) and that leaves conn_cur when it ends (stream_store_counters).
const FETCHED = 'http_req_rate|http_req_cnt|get_gpc[01]|gpc[01]_rate|conn_rate|conn_cnt|conn_cur';
// Either form may name the table it reads the tracked key in: sc_http_req_rate(0,T), sc0_http_req_rate(T).
const TABLE_ARG = '[A-Za-z0-9_.:-]+';
const COUNTER = String.raw`(?:sc_(${FETCHED})\(([0-2])(?:,(${TABLE_ARG}))?\)|sc([0-2])_(${FETCHED})(?:\((${TABLE_ARG})\))?)`;
const COUNTER_FETCH = new RegExp(`^${COUNTER}$`);
const COUNTER_TEST = new RegExp(`^${COUNTER} (gt|ge) (\\d+)$`);
// A counter by what its table stores: sc_get_gpc0 reads gpc0; and the table it names, where it does.
const counterOf = (m) => ({
  sc: Number(m[2] ?? m[4]),
  counter: (m[1] ?? m[5]).replace(/^get_/, ''),
  ...((m[3] ?? m[6]) ? { inTable: m[3] ?? m[6] } : {}),
});

// A variable of the request: `set-var(req.NAME)` sets it, `var(req.NAME)` reads it (txn. alike).
const VAR = String.raw`((?:req|txn)\.[A-Za-z0-9_]+)`;
const SET_VAR = new RegExp(`^set-var\\(${VAR}\\)$`);
// The counter of this request's key in a table: `KEY,table_http_req_rate([TABLE])`.
const TABLE_READ = /^(.+),table_(http_req_rate|http_req_cnt)\(([A-Za-z0-9_.-]*)\)$/;
// `var(X) -m int gt N` (a variable is compared as a number only when told), and `var(A),sub(B)
// lt 0` (A less B: a limit less a counter, or the other way; sub gives a number).
const VAR_TEST = new RegExp(`^var\\(${VAR}\\) -m int (gt|ge) (\\d+)$`);
const VAR_SUB_TEST = new RegExp(`^var\\(${VAR}\\),sub\\(${VAR}\\) (gt|ge|lt|le) 0$`);
// limit - counter < 0 is counter > limit: the comparison seen from the counter's side.
const FROM_COUNTER = { lt: 'gt', le: 'ge', gt: 'lt', ge: 'le' };

/**
 * Whether a set-var's condition (`cond`, the words after its expression) sets it for the lab's
 * requests: 'always' where there is none or it holds for all of them, false where it holds for
 * none, 'unknown' where the lab cannot decide it (varOf reads such a variable as another value).
 */
function setVarHolds(l, cond, acls) {
  if (!cond.length) return 'always';
  try {
    return labHolds(cond, aclTestOf(acls, l.at), l.at) ? 'always' : false;
  } catch {
    return 'unknown';
  }
}

/**
 * What `http-request set-var(X) EXPR` gives X, as the rules after it read it: {int, at} (a
 * number: `int(N)`), {sc, counter, at} (a tracked counter, fetched as sc_http_req_rate(N), or read
 * from the table by the tracker's own key), or {other, at} (set on a condition, or anything else).
 */
function varOf(sections, sec, l, rest, trackers) {
  const [expr, ...cond] = rest;
  if (cond.length) return { other: rest.join(' '), at: l.at };
  const int = /^int\((\d+)\)$/.exec(expr);
  if (int) return { int: Number(int[1]), at: l.at };
  const fetched = COUNTER_FETCH.exec(expr);
  if (fetched && trackers.has(counterOf(fetched).sc)) {
    inTrackersTable(sections, sec, l, counterOf(fetched), trackers);
    return { ...counterOf(fetched), at: l.at };
  }
  const read = TABLE_READ.exec(expr);
  if (read) {
    const table = tableOf(sections, sec, read[3] || null, l.at, `table_${read[2]}`);
    const tracker = [...trackers.values()].find((t) => t.key.text === read[1] && t.table.at === table.at);
    if (tracker) return { sc: tracker.sc, counter: read[2], at: l.at };
  }
  return { other: expr, at: l.at };
}

/**
 * Refuses a counter read in another table than the one its tracker tracks into
 * (`sc_http_req_rate(0,OTHER)` looks the tracked key up there): the model reads a tracker's own.
 */
function inTrackersTable(sections, sec, l, read, trackers) {
  const tracker = trackers.get(read.sc);
  if (!read.inTable || !tracker) return;
  const named = tableOf(sections, sec, read.inTable, l.at, `sc${read.sc}'s ${read.counter}`);
  if (named.at !== tracker.table.at)
    throw new Error(
      `${l.at}: reads sc${read.sc}'s ${read.counter} in table ${read.inTable} (${named.at}), not the one track-sc${read.sc} tracks into (${tracker.table.at}): the lab reads a tracker's own table yet`,
    );
}

/**
 * A test on a tracked counter: {sc, counter, op, limit, limitAt?} (limitAt: where the limit stands
 * when a set-var holds it), or null. `vars`: what each variable holds (varOf).
 */
function counterTestOf(test, vars) {
  const direct = COUNTER_TEST.exec(test);
  if (direct) return { ...counterOf(direct), op: direct[7], limit: Number(direct[8]) };
  const v = VAR_TEST.exec(test);
  const held = v && vars.get(v[1]);
  if (held?.sc !== undefined) return { sc: held.sc, counter: held.counter, op: v[2], limit: Number(v[3]) };
  const d = VAR_SUB_TEST.exec(test);
  const [a, b] = d ? [vars.get(d[1]), vars.get(d[2])] : [];
  const [counter, limit, op] =
    a?.int !== undefined && b?.sc !== undefined ? [b, a, FROM_COUNTER[d[3]]] : [a, b, d?.[3]];
  if (counter?.sc === undefined || limit?.int === undefined || (op !== 'gt' && op !== 'ge')) return null;
  return { sc: counter.sc, counter: counter.counter, op, limit: limit.int, limitAt: limit.at };
}

/**
 * The deny rule's condition on a tracked counter: `if { sc_http_req_rate(N) gt L }` (or
 * scN_http_req_rate, or a variable set to one: `var(req.X) -m int gt L`, `var(req.limit),sub(req.rate) lt
 * 0`), or `if NAME` where the section's one `acl NAME` line is that test: {sc, counter, op, limit,
 * acl, limitAt}, or a refusal naming it. Beside that test, terms on the path or the method
 * (`if !is_health_check { ... }`) hold for all of the lab's requests, or the rule is refused.
 */
function conditionOf(rest, at, action, acls, vars) {
  const text = rest.join(' ');
  const terms = rest[0] === 'if' ? termsOf(rest.slice(1), at) : [];
  const tested = terms.map((t) => {
    const def = t.acl ? oneAcl(acls, t.acl, at) : null;
    const test = t.inline ?? def?.test;
    return { ...t, def, test, read: test === undefined ? null : counterTestOf(test, vars) };
  });
  const counters = tested.filter((t) => t.read);
  if (counters.length !== 1 || counters[0].negated)
    throw new Error(
      `${at}: http-request ${action} ${text}: the lab reads ${action} if { sc_http_req_rate(0) gt N } (or ge, sc_http_req_cnt, sc_get_gpc0, sc_gpc0_rate, gpc1, sc_conn_rate, sc_conn_cnt, sc_conn_cur, sc1, sc2, a variable set to one of them, compared or with sub(), or an acl of that test) yet`,
    );
  // Beside the counter's test, each term must hold for the lab's requests.
  const said = `${at}: http-request ${action} ${text}`;
  for (const t of tested.filter((x) => !x.read))
    if (!termHolds(t, t.test, said))
      throw new Error(
        `${said}: ${termWords(t)} holds for none of the lab's requests (GET / from 127.0.0.1), so the rule never applies to them`,
      );
  const [{ read, def }] = counters;
  return { ...read, ...(def ? { acl: def.at } : {}) };
}

/** What a condition's acl names test, by the section's one line of each (labHolds' `aclTest`). */
const aclTestOf = (acls, at) => (name) => oneAcl(acls, name, at)?.test;

/** The section's one `acl NAME` line ({name, test, at}), undefined where none; several are refused. */
function oneAcl(acls, name, at) {
  const defs = acls.filter((a) => a.name === name);
  if (defs.length > 1)
    throw new Error(
      `${at}: ${name} is defined by ${defs.length} acl lines (${defs.map((d) => d.at).join(', ')}): the lab reads one yet`,
    );
  return defs[0];
}

/**
 * Whether a condition's text reads a tracked counter (directly, or a variable set to one, read by
 * var(...) or by a converter such as sub(...)): the rule is a limit, not a fixed answer.
 */
const readsCounter = (text, vars) =>
  /\bsc\d?_/.test(text) ||
  [...text.matchAll(/[(,]((?:req|txn)\.\w+)\)/g)].some((m) => vars.get(m[1])?.sc !== undefined);

// Each answer's status where the line names none (src/http_act.c parse_http_deny, http_parse_http_reply).
const DEFAULT_STATUS = { deny: 403, tarpit: 500, return: 200 };

/**
 * An answer on a tracked counter: `deny [deny_status N | status N ...] if {...}` (403 by default),
 * `tarpit [deny_status N] if {...}` (500, after the frontend's tarpit hold: `hold`) or `return
 * status N ... if {...}` (200 by default); null for one whose condition reads no counter (directly
 * or through an acl). `tracked`: the trackers met before it, by sc number.
 */
function answerOf(l, [action, ...rest], { trackers: tracked, hold, vars }, acls) {
  const cond = rest.indexOf('if') >= 0 ? rest.slice(rest.indexOf('if')) : [];
  const readsAcl = (w) => acls.some((a) => a.name === w.replace(/^!/, '') && readsCounter(a.test, vars));
  if (action === 'return' && !cond.some((w) => readsCounter(w, vars) || readsAcl(w))) return null;
  // What it answers besides its status (content-type, a string, headers) changes no count.
  const head = cond.length ? rest.slice(0, rest.indexOf('if')) : rest;
  const statusAt = head.findIndex((w) => w === 'status' || w === 'deny_status');
  const status = statusAt >= 0 ? Number(head[statusAt + 1]) : DEFAULT_STATUS[action];
  const test = conditionOf(cond, l.at, action, acls, vars);
  if (!tracked.has(test.sc))
    throw new Error(
      `${l.at}: a ${action} on sc${test.sc} before any track-sc${test.sc}: the counter it reads is not tracked yet`,
    );
  return { at: l.at, status, action, ...test, ...(action === 'tarpit' ? { hold } : {}) };
}

// `sc-inc-gpc0(N)` and `sc-inc-gpc1(N)`: a tracked entry's general-purpose counter, plus one (N 0 where left out).
const INC_GPC = /^sc-inc-gpc([01])(?:\(([0-2])\))?$/;

/**
 * `http-request sc-inc-gpcG(N) [if {test}]`: {inc: N, gpc: G, action, at} and, where it has a
 * condition, its test on a tracked counter ({sc (the one it reads), counter, op, limit, acl?,
 * limitAt?}); refused where the entry it adds to is not tracked yet or its table stores no such
 * counter.
 */
function incOf(l, [action, ...rest], { trackers, vars }, acls) {
  const [, gpc, sc = '0'] = INC_GPC.exec(action);
  const tracker = trackers.get(Number(sc));
  if (!tracker) throw new Error(`${l.at}: ${action} before any track-sc${sc}: there is no entry to add to yet`);
  if (!storesCounter(tracker.table, `gpc${gpc}`) && !storesCounter(tracker.table, `gpc${gpc}_rate`))
    throw new Error(
      `${l.at}: ${action}: the table (${tracker.table.at}) stores neither gpc${gpc} nor gpc${gpc}_rate, so HAProxy adds nothing`,
    );
  const inc = { inc: Number(sc), gpc: Number(gpc), action, at: l.at };
  if (!rest.length) return inc;
  const test = conditionOf(rest, l.at, action, acls, vars);
  if (!trackers.has(test.sc))
    throw new Error(
      `${l.at}: ${action}'s test reads sc${test.sc} before any track-sc${test.sc}: it is not tracked yet`,
    );
  return { ...inc, ...test };
}

/** One http-request line read into `into` ({trackers, rules, denies, incs, redirect, hold, vars}). */
function ruleOf(sections, sec, l, acls, into) {
  const [, action, ...rest] = l.words;
  const setVar = SET_VAR.exec(action);
  if (setVar) {
    // Set on a condition that holds for none of the lab's requests, the variable keeps what it held.
    const set = setVarHolds(l, rest.slice(1), acls);
    if (set)
      into.vars.set(setVar[1], varOf(sections, sec, l, set === 'always' ? rest.slice(0, 1) : rest, into.trackers));
  } else if (/^track-sc\d$/.test(action)) {
    const track = trackOf(sections, sec, l, [action, ...rest], acls);
    // HAProxy tracks a counter once per request: a second track-scN is passed over.
    if (into.trackers.has(track.sc))
      throw new Error(
        `${l.at}: ${action} again (${into.trackers.get(track.sc).at}): HAProxy keeps the first; drop one`,
      );
    into.trackers.set(track.sc, track);
    into.rules.push({ track: track.sc });
  } else if (INC_GPC.test(action)) {
    const inc = incOf(l, [action, ...rest], into, acls);
    if ('op' in inc) inTrackersTable(sections, sec, l, inc, into.trackers);
    into.rules.push({ inc: into.incs.push(inc) - 1 });
  } else if (action in DEFAULT_STATUS) {
    const deny = answerOf(l, [action, ...rest], into, acls);
    if (deny) {
      inTrackersTable(sections, sec, l, deny, into.trackers);
      into.rules.push({ deny: into.denies.push(deny) - 1 });
    }
  } else if (action === 'redirect') into.redirect = redirectOf(l, rest);
  else if (!HARMLESS.has(action) && !neverApplies(l, rest, acls, into))
    throw new Error(`${l.at}: http-request ${action}: the lab's HAProxy model does not read it yet`);
}

/**
 * Whether a rule the model does not read applies to none of the lab's requests (its condition,
 * decided by labHolds, holds for none of them): then it changes none of their counts, and is said
 * in `into.skipped`. One with no condition, or one the lab cannot decide, is not.
 */
function neverApplies(l, rest, acls, into) {
  const at = rest.findIndex((w) => w === 'if' || w === 'unless');
  if (at < 0) return false;
  let holds;
  try {
    holds = labHolds(rest.slice(at), aclTestOf(acls, l.at), l.at);
  } catch {
    return false;
  }
  if (!holds)
    into.skipped.push({
      at: l.at,
      what: `http-request ${l.words[1]}: applies to none of the lab's requests (GET / from 127.0.0.1): left as written`,
    });
  return !holds;
}

/**
 * A frontend's rules, read in order: {trackers (by sc number), rules ([{track: sc} | {deny: i}],
 * in the file's order), denies, redirect (null where it has none)}.
 */
function rulesOf(sections, sec) {
  const into = {
    trackers: new Map(),
    rules: [],
    denies: [],
    incs: [],
    redirect: null,
    hold: null,
    vars: new Map(),
    skipped: [],
  };
  sectionRules(sections, sec, into);
  // Then its backend's, for every request it passes on: HAProxy runs them once the backend is
  // chosen, with the trackers and variables the frontend's set (src/http_ana.c).
  const backend = backendOf(sections, sec);
  if (backend) sectionRules(sections, backend, into);
  return into;
}

/**
 * The backend a frontend passes the lab's requests to: its first `use_backend` whose condition
 * holds for them (decided as a rule's: labHolds; one it cannot decide is refused), else its
 * default_backend (its own line or its defaults'); null for a listen or none.
 */
function backendOf(sections, sec) {
  if (sec.kind !== 'frontend') return null;
  const named = (name, at) => {
    const found = sections.find((s) => (s.kind === 'backend' || s.kind === 'listen') && s.name === name);
    if (!found && at)
      throw new Error(
        `${at}: use_backend ${name}: a backend named from the request: the lab does not read which one yet`,
      );
    return found ?? null;
  };
  const acls = aclsOf(sec);
  for (const l of sec.lines.filter((x) => x.words[0] === 'use_backend')) {
    const [, name, ...cond] = l.words;
    if (!cond.length || labHolds(cond, aclTestOf(acls, l.at), l.at)) return named(name, l.at);
  }
  return named(settingOf(sections, sec, 'default_backend')?.words[1]);
}

/** A section's acls, in order: [{name, test, at}]. */
const aclsOf = (sec) =>
  sec.lines
    .filter((l) => l.words[0] === 'acl')
    .map((l) => ({ name: l.words[1], test: l.words.slice(2).join(' '), at: l.at }));

/**
 * A `tcp-request` line as the model reads it: `tcp-request content track-scN <key>` as that
 * tracker (in HTTP mode these rules run again for every request, and the request is counted in
 * its tracked entries when HAProxy has parsed it: src/http_ana.c stream_inc_http_req_ctr), null
 * for `inspect-delay` (an HTTP frontend holds the parsed request already), or a refusal naming it.
 */
function tcpRuleOf(l) {
  const [, stage, action = '', ...rest] = l.words;
  if (stage === 'inspect-delay') return null;
  if (stage === 'content' && /^track-sc\d$/.test(action)) return { at: l.at, words: ['tcp-request', action, ...rest] };
  if ((stage === 'connection' || stage === 'session') && /^track-sc\d$/.test(action))
    throw new Error(
      `${l.at}: tcp-request ${stage} ${action}: tracked once per connection, its entry held as long as the connection is: not modelled yet (tcp-request content ${action} and http-request ${action} are)`,
    );
  throw new Error(
    `${l.at}: tcp-request ${stage} ${action}: connection-level actions are not modelled yet (tcp-request content track-sc and http-request rules are)`,
  );
}

/** One section's rules read into `into`, in order; a tarpit there holds for that section's timeout. */
function sectionRules(sections, sec, into) {
  into.hold = tarpitHoldOf(sections, sec);
  const acls = aclsOf(sec);
  // An HTTP request meets the section's tcp-request content rules before its http-request ones,
  // wherever each is written (src/tcp_rules.c: the inspect analyser runs first).
  const tcp = sec.lines.filter((l) => l.words[0] === 'tcp-request').map(tcpRuleOf);
  for (const l of tcp.filter(Boolean)) ruleOf(sections, sec, l, acls, into);
  for (const l of sec.lines) {
    const [kw, action] = l.words;
    if (kw === 'tcp-response')
      throw new Error(
        `${l.at}: ${kw} ${action}: response inspection rules are not modelled yet (http-request rules are)`,
      );
    if (kw === 'http-request') ruleOf(sections, sec, l, acls, into);
  }
}

/** `http-request redirect scheme https [code N] unless { ssl_fc }` (or `if !{ ssl_fc }`): plain HTTP sent to TLS. */
function redirectOf(l, rest) {
  const text = rest.join(' ');
  if (!/^scheme https( code \d+)? (unless \{ ssl_fc \}|if !\{ ssl_fc \})$/.test(text))
    throw new Error(
      `${l.at}: http-request redirect ${text}: the lab reads a redirect of plain HTTP to TLS (redirect scheme https unless { ssl_fc }) yet`,
    );
  return { at: l.at };
}

/**
 * A frontend's (or listen's) rate limit from its rules, null when it has none: {track, table,
 * deny} of its first deny, and, where it has several trackers or denies, or adds to a gpc, `chain`:
 * {trackers [{sc, at, key, table}], rules, denies, incs} in the file's order
 * (thresholds/models/stick-table-rate.js stickTableChain).
 */
function limitOf({ trackers, rules, denies, incs }) {
  if (!denies.length) return null;
  for (const test of testsOf({ denies, incs })) {
    const t = trackers.get(test.sc).table;
    if (!storesCounter(t, test.counter))
      throw new Error(
        `${test.at}: the ${test.action} reads ${test.counter}, and the table (${t.at}) does not store it`,
      );
  }
  const statuses = [...new Set(denies.map((d) => d.status))];
  if (statuses.length > 1)
    throw new Error(
      `${denies.map((d) => d.at).join(', ')}: answered with ${statuses.join(' and ')}: the lab judges one refusal status per frontend yet`,
    );
  const [deny] = denies;
  const track = trackers.get(deny.sc);
  const chain =
    trackers.size > 1 || denies.length > 1 || incs.length
      ? { trackers: [...trackers.values()], rules, denies, incs }
      : null;
  return { track, table: track.table, deny, ...(chain ? { chain } : {}) };
}

/**
 * A frontend's `rate-limit sessions N` (its own, or its defaults'): {limit, at, idle (idleCloseOf)},
 * or null where it has none or 0 (HAProxy's "no limit": src/listener.c reads fe_sps_lim only when set).
 */
function sessionsOf(sections, sec) {
  const l = settingOf(sections, sec, 'rate-limit');
  if (!l) return null;
  const [, what, n] = l.words;
  const limit = what === 'sessions' && l.words.length === 3 ? strtoul(n) : null;
  if (limit === null)
    throw new Error(`${l.at}: ${l.words.join(' ')}: the lab reads rate-limit sessions N, a whole number per second`);
  return limit ? { limit, at: l.at, idle: idleCloseOf(sections, sec) } : null;
}

/** A whole number as C's strtoul(text, &end, 0) reads all of it (0x hex, a leading 0 octal), or null. */
function strtoul(text) {
  if (/^0x[0-9a-f]+$/i.test(text)) return parseInt(text.slice(2), 16);
  if (/^0[0-7]*$/.test(text)) return parseInt(text, 8);
  return /^[1-9]\d*$/.test(text) ? Number(text) : null;
}

/**
 * How long HAProxy keeps a client's connection open between its requests ({ms, at, what}): its
 * `timeout http-keep-alive`, else `timeout http-request`, else `timeout client`, each its own or
 * its defaults' (Infinity where none is set); 0 with `option httpclose`, which closes it after
 * every answer. A deny or a tarpit leaves it open (measured with curl against HAProxy 2.6).
 */
function idleCloseOf(sections, sec) {
  const close = settingOf(sections, sec, 'option', (w) => w[1] === 'httpclose');
  if (close) return { ms: 0, at: close.at, what: 'option httpclose' };
  for (const which of ['http-keep-alive', 'http-request', 'client']) {
    const l = settingOf(sections, sec, 'timeout', (w) => w[1] === which);
    if (l) return { ms: timeMs(l.words[2], l.at), at: l.at, what: `timeout ${which} ${l.words[2]}` };
  }
  return { ms: Infinity, at: sec.at, what: 'no timeout client' };
}

/** Where a bind listens, as the lab tells places apart: 'addr:port' (`:8080` is '*:8080'). */
export const placeOfBind = (addr) => (/:\d+$/.test(addr) ? addr.replace(/^:/, '*:') : `${addr}:80`);

/** A frontend's binds: [{place, at, tls}]; what a TLS bind's host files become, said in `leftOut`. */
function bindsOf(sec, leftOut) {
  return sec.lines
    .filter((l) => l.words[0] === 'bind')
    .map((l) => {
      const tls = l.words.includes('ssl');
      if (tls)
        leftOut.push({
          at: l.at,
          what: `bind ${l.words[1]} ssl: served with the lab's certificate (${l.words.filter((w) => BIND_HOST_TLS.has(w) || BIND_SNI_ONLY.has(w)).join(', ') || 'crt'} left out)`,
        });
      return { place: placeOfBind(l.words[1]), at: l.at, tls, http2: tls && prefersH2(l.words) };
    });
}

/** Where the lab sends to a frontend: its first bind, or its first TLS one where plain HTTP is redirected there. */
function sentTo(binds, redirect, sec) {
  if (!redirect) return binds[0];
  const tls = binds.find((b) => b.tls);
  if (!tls) throw new Error(`${redirect.at}: frontend ${sec.name} redirects to https, and has no bind with ssl`);
  return tls;
}

/** One frontend (or listen) as a route: {frontend, place, places, tls, at, limit} or {.., none}. */
function routeOf(sections, sec, binds, mode, leftOut) {
  if (mode !== 'http')
    return { frontend: sec.name, place: binds[0].place, at: sec.at, none: `mode ${mode}: the lab loads HTTP` };
  const rules = rulesOf(sections, sec);
  leftOut.push(...rules.skipped);
  const limit = limitOf(rules);
  const sessions = sessionsOf(sections, sec);
  // What its rules let through goes to its backend: a frontend with none answers 503 to it.
  if ((limit || sessions) && sec.kind === 'frontend' && !backendOf(sections, sec))
    throw new Error(
      `${sec.at}: frontend ${sec.name} has no default_backend: HAProxy answers 503 to every request its rules let through`,
    );
  const to = sentTo(binds, rules.redirect, sec);
  return {
    frontend: sec.name,
    place: to.place,
    tls: to.tls,
    http2: to.http2,
    places: binds.map((b) => b.place),
    at: sec.at,
    ...(limit ? { limit } : {}),
    ...(sessions ? { sessions } : {}),
    ...(limit || sessions ? {} : { none: 'no deny on a tracked counter, and no rate-limit sessions' }),
  };
}

/**
 * The fewest connections HAProxy takes at once on a limited frontend: the smallest `maxconn` of
 * global, defaults and those frontends ({limit, at, what}), or null where none is written.
 */
function maxconnOf(sections, routes) {
  const limited = new Set(routes.filter((r) => !r.none).map((r) => r.frontend));
  const holders = sections.filter(
    (s) => s.kind === 'global' || s.kind === 'defaults' || (limited.has(s.name) && s.kind !== 'backend'),
  );
  const lines = holders.flatMap((s) => s.lines.filter((l) => l.words[0] === 'maxconn' && /^\d+$/.test(l.words[1])));
  const least = lines.sort((a, b) => Number(a.words[1]) - Number(b.words[1]))[0];
  return least ? { limit: Number(least.words[1]), at: least.at, what: `maxconn ${least.words[1]}` } : null;
}

/**
 * A haproxy.cfg read: {proxy: 'haproxy', file, sections, routes, globalOwn, leftOut, tlsPlaces,
 * says}; routes
 * per frontend (or listen) with binds: {frontend, place, tls, at, limit ({track, table, deny}) or
 * none (why)}.
 */
export function haproxyPolicy(file) {
  const text = readFileSync(file, 'utf8');
  const sections = sectionsOf(text, file);
  // What is refused whatever HAProxy says (its own check would stop at a map's missing file first).
  refuseAnywhere(sections);
  validate(file, text);
  const modeOf = (sec) => settingOf(sections, sec, 'mode')?.words[1] ?? 'tcp';
  const routes = [];
  const leftOut = [];
  const tlsPlaces = [];
  for (const sec of sections.filter((s) => s.kind === 'frontend' || s.kind === 'listen')) {
    const binds = bindsOf(sec, leftOut);
    tlsPlaces.push(...binds.filter((b) => b.tls).map((b) => b.place));
    if (binds.length) routes.push(routeOf(sections, sec, binds, modeOf(sec), leftOut));
  }
  if (routes.every((r) => r.none)) {
    const why = routes.map((r) => `frontend ${r.frontend} (${r.at}): ${r.none}`).join('; ');
    throw new Error(
      `${file}: no frontend denies on a tracked counter or limits its sessions: nothing to load${why ? ` (${why})` : ''}`,
    );
  }
  const globalLines = sections.find((s) => s.kind === 'global')?.lines ?? [];
  const globalOwn = globalLines.filter((l) => GLOBAL_OWN.has(l.words[0]));
  // A global maxconn sizes HAProxy's open files: the lab starts it with what the machine allows.
  for (const l of globalLines.filter((x) => x.words[0] === 'maxconn'))
    leftOut.push({ at: l.at, what: `${l.words.join(' ')}: ${FD_WORDS}` });
  const maxconn = maxconnOf(sections, routes);
  return { proxy: 'haproxy', file, sections, routes, globalOwn, leftOut, tlsPlaces, maxconn, says: [] };
}
