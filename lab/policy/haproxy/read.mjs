/*
 * A team's haproxy.cfg as the lab reads it: what the lab refuses whatever HAProxy says (peers,
 * Lua, maps), then HAProxy's own word on it (`haproxy -c`), then its sections line by line, each
 * directive with its file:line. What the model reads: a frontend (or listen) in HTTP mode, its
 * binds, its stick table storing http_req_rate(P) or http_req_cnt, `http-request track-sc0 src`
 * and `http-request deny [deny_status N] if { sc_http_req_rate(0) gt N }` (or sc0_http_req_rate,
 * sc_http_req_cnt; gt, ge). What it cannot read yet is refused by name, with where it stands; it
 * is never guessed.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

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

/** HAProxy's words of a line: spaces split, quotes kept together, a # outside quotes ends it. */
export function words(line) {
  const out = [];
  let cur = '';
  let quote = null;
  let any = false;
  for (const ch of line) {
    if (quote) {
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
    if (SECTIONS.has(w[0]) && /^\S/.test(line)) sections.push({ kind: w[0], name: w[1] ?? null, at, lines: [] });
    else if (sections.length) sections.at(-1).lines.push({ words: w, at });
  });
  return sections;
}

/** HAProxy's own check of the file: its message where it refuses it. */
function validate(file) {
  try {
    execFileSync(HAPROXY, ['-c', '-f', file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    const lines = `${e.stderr || ''}${e.stdout || ''}`.trim().split('\n');
    const alerts = lines.filter((l) => /\[ALERT\]/.test(l));
    const said = (alerts.length ? alerts : lines).slice(0, 3).join(' ').replace(/\s+/g, ' ');
    throw new Error(`${file}: haproxy -c refuses it: ${said}`, { cause: e });
  }
}

const MS = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
/** An HAProxy time ("10s", "1m", "500": ms by default) in ms. */
export function timeMs(text, at) {
  const m = /^(\d+)(us|ms|s|m|h|d)?$/.exec(text);
  if (!m) throw new Error(`${at}: '${text}' is not a time HAProxy reads`);
  return Number(m[1]) * MS[m[2] ?? 'ms'];
}

// Actions that leave the limit as it is: they change headers, or answer after the deny.
const HARMLESS = new Set([
  'set-header',
  'add-header',
  'del-header',
  'replace-header',
  'return',
  'capture',
  'set-log-level',
]);
// What the global section may hold that the lab sets itself (it runs HAProxy in the foreground, as
// its own user, logging to its own file).
export const GLOBAL_OWN = new Set([
  'daemon',
  'chroot',
  'user',
  'group',
  'uid',
  'gid',
  'pidfile',
  'log',
  'stats',
  'master-worker',
]);

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

/** The stick table of a `track-sc0 ... [table NAME]`: its section's stick-table line, read. */
function tableOf(sections, own, name, at) {
  const holder = name ? sections.find((s) => (s.kind === 'backend' || s.kind === 'listen') && s.name === name) : own;
  const line = holder?.lines.find((l) => l.words[0] === 'stick-table');
  if (!line)
    throw new Error(
      `${at}: track-sc0 names ${name ? `table ${name}` : "its section's table"}, and there is no stick-table there`,
    );
  const w = line.words;
  const opt = (k) => (w.indexOf(k) > 0 ? w[w.indexOf(k) + 1] : undefined);
  if (opt('type') !== 'ip' && opt('type') !== 'ipv6')
    throw new Error(
      `${line.at}: stick-table type ${opt('type')}: the lab tracks the client's address (type ip) only yet`,
    );
  const store = (opt('store') ?? '').split(',');
  const rate = store.map((x) => /^http_req_rate\((\w+)\)$/.exec(x)).find(Boolean);
  return {
    at: line.at,
    periodMs: rate ? timeMs(rate[1], line.at) : null,
    count: store.includes('http_req_cnt'),
    expireMs: opt('expire') ? timeMs(opt('expire'), line.at) : null,
  };
}

/** The deny rule's condition on the tracked counter: {counter, op, limit}, or a refusal naming it. */
function conditionOf(rest, at) {
  const text = rest.join(' ');
  const m = /^if \{ (?:sc_(http_req_rate|http_req_cnt)\(0\)|sc0_(http_req_rate|http_req_cnt)) (gt|ge) (\d+) \}$/.exec(
    text,
  );
  if (!m)
    throw new Error(
      `${at}: http-request deny ${text}: the lab reads a deny if { sc_http_req_rate(0) gt N } (or ge, or sc_http_req_cnt) yet`,
    );
  return { counter: m[1] ?? m[2], op: m[3], limit: Number(m[4]) };
}

/** A frontend's (or listen's) rate limit: its track and deny, read; null when it has none. */
function limitOf(sections, sec) {
  let track = null;
  let deny = null;
  for (const l of sec.lines) {
    const [kw, action, ...rest] = l.words;
    if (kw === 'tcp-request' || kw === 'tcp-response')
      throw new Error(`${l.at}: ${kw} ${action}: connection-level rules are not modelled yet (http-request rules are)`);
    if (kw === 'rate-limit') throw new Error(`${l.at}: rate-limit ${action}: the accept delay is not modelled yet`);
    if (kw === 'use_backend')
      throw new Error(`${l.at}: use_backend: the lab reads one backend per frontend yet (default_backend)`);
    if (kw !== 'http-request') continue;
    if (/^track-sc\d$/.test(action)) {
      if (action !== 'track-sc0') throw new Error(`${l.at}: ${action}: the lab models track-sc0 alone yet`);
      if (rest[0] !== 'src') throw new Error(`${l.at}: track-sc0 ${rest[0]}: the lab keys on src alone yet`);
      const t = rest.indexOf('table');
      if (rest.length > 1 && t !== 1)
        throw new Error(`${l.at}: track-sc0 ${rest.join(' ')}: a condition on the tracking is not modelled yet`);
      track = { at: l.at, table: tableOf(sections, sec, t === 1 ? rest[2] : null, l.at) };
    } else if (action === 'deny') {
      if (!track) throw new Error(`${l.at}: a deny before any track-sc0: the counter it reads is not tracked yet`);
      const statusAt = rest.indexOf('deny_status');
      const status = statusAt === 0 ? Number(rest[1]) : 403;
      deny = { at: l.at, status, ...conditionOf(statusAt === 0 ? rest.slice(2) : rest, l.at) };
    } else if (!HARMLESS.has(action)) {
      throw new Error(`${l.at}: http-request ${action}: the lab's HAProxy model does not read it yet`);
    }
  }
  if (!deny) return null;
  const t = track.table;
  if (deny.counter === 'http_req_rate' && t.periodMs === null)
    throw new Error(`${deny.at}: the deny reads http_req_rate, and the table (${t.at}) does not store it`);
  if (deny.counter === 'http_req_cnt' && !t.count)
    throw new Error(`${deny.at}: the deny reads http_req_cnt, and the table (${t.at}) does not store it`);
  return { track, table: t, deny };
}

/** Where a bind listens, as the lab tells places apart: 'addr:port' (`:8080` is '*:8080'). */
export const placeOfBind = (addr) => (/:\d+$/.test(addr) ? addr.replace(/^:/, '*:') : `${addr}:80`);

/** A frontend's binds: [{place, at}]. */
function bindsOf(sec) {
  return sec.lines
    .filter((l) => l.words[0] === 'bind')
    .map((l) => {
      if (l.words.includes('ssl'))
        throw new Error(`${l.at}: bind ... ssl: the lab runs HAProxy over plain HTTP/1.1 yet`);
      return { place: placeOfBind(l.words[1]), at: l.at };
    });
}

/**
 * A haproxy.cfg read: {proxy: 'haproxy', file, sections, routes, says}; routes per frontend (or
 * listen) in HTTP mode: {frontend, place, at, limit ({track, table, deny}) or none (why)}.
 */
export function haproxyPolicy(file) {
  const text = readFileSync(file, 'utf8');
  const sections = sectionsOf(text, file);
  // What is refused whatever HAProxy says (its own check would stop at a map's missing file first).
  refuseAnywhere(sections);
  validate(file);
  const modeOf = (sec) => sec.lines.find((l) => l.words[0] === 'mode')?.words[1];
  const defaultsMode = modeOf(sections.find((s) => s.kind === 'defaults') ?? { lines: [] });
  const routes = [];
  for (const sec of sections.filter((s) => s.kind === 'frontend' || s.kind === 'listen')) {
    const binds = bindsOf(sec);
    if (!binds.length) continue;
    const mode = modeOf(sec) ?? defaultsMode ?? 'tcp';
    if (mode !== 'http') {
      routes.push({ frontend: sec.name, place: binds[0].place, at: sec.at, none: `mode ${mode}: the lab loads HTTP` });
      continue;
    }
    const limit = limitOf(sections, sec);
    routes.push({
      frontend: sec.name,
      place: binds[0].place,
      places: binds.map((b) => b.place),
      at: sec.at,
      ...(limit ? { limit } : { none: 'no deny on a tracked counter' }),
    });
  }
  if (!routes.some((r) => r.limit))
    throw new Error(`${file}: no frontend denies on a tracked counter: nothing to load`);
  const globalOwn = (sections.find((s) => s.kind === 'global')?.lines ?? []).filter((l) => GLOBAL_OWN.has(l.words[0]));
  return { proxy: 'haproxy', file, sections, routes, globalOwn, says: [] };
}
