/*
 * The clients the lab plays against a team's nginx config: a baseline (an address no list names,
 * a browser's User-Agent, no cookie), and variations of it, one input at a time, taken from what
 * the zones' keys are made of: the address (realip puts each case's in $remote_addr), headers,
 * cookies and arguments, with the values the config's map and geo blocks single out (their exact
 * entries, examples of their regular expressions, the networks a geo lists) besides absent and
 * free ones. nginx computes each variation's keys (probe.mjs); classes are what it gives apart.
 */
import ipaddr from 'ipaddr.js';
import { BASE_UA, examplesOf } from './requests.mjs';

// The baseline's addresses: RFC 2544's benchmarking network, which no allow-list names.
const BASE_NET = [198, 18];
// A value of a header, cookie or argument that stands for "any": each case gets its own (slots).
export const FREE = 'lab';

/** The baseline client: {address, headers, cookies, args}. */
export const baseline = () => ({
  address: `${BASE_NET.join('.')}.0.1`,
  headers: { 'user-agent': BASE_UA },
  cookies: {},
  args: {},
});

/** The variables a value names ($x and ${x}). */
const variablesOf = (text) => [...String(text).matchAll(/\$\{?([A-Za-z0-9_]+)\}?/g)].map((m) => m[1]);

/** The http block's map and geo blocks, and every `set`, by the variable they define. */
function definitions(http) {
  const defs = new Map();
  const add = (name, def) => defs.set(name, [...(defs.get(name) ?? []), def]);
  for (const x of http.block) {
    if (x.directive === 'map')
      add(x.args[1].replace(/^\$/, ''), { kind: 'map', source: x.args[0], entries: x.block ?? [], at: x.at });
    if (x.directive === 'geo') {
      const [source, target] = x.args.length === 2 ? x.args : ['$remote_addr', x.args[0]];
      add(target.replace(/^\$/, ''), { kind: 'geo', source, entries: x.block ?? [], at: x.at });
    }
  }
  const sets = (dirs) =>
    dirs.forEach((x) => {
      if (x.directive === 'set') add(x.args[0].replace(/^\$/, ''), { kind: 'set', value: x.args[1] ?? '', at: x.at });
      if (x.block) sets(x.block);
    });
  sets(http.block);
  return defs;
}

/** The request inputs a set of keys reads, through map, geo and set: [{input, via}], via the map or geo reading it. */
export function inputsOf(keys, http) {
  const defs = definitions(http);
  const out = [];
  const seen = new Set();
  const visit = (name, via) => {
    if (seen.has(`${name}|${via?.at ?? ''}`)) return;
    seen.add(`${name}|${via?.at ?? ''}`);
    const mine = defs.get(name);
    if (!mine) {
      out.push({ input: name, via });
      return;
    }
    for (const def of mine) {
      const values = def.kind === 'set' ? [def.value] : def.entries.flatMap((e) => e.args);
      for (const v of values) for (const n of variablesOf(v)) visit(n, null);
      if (def.kind !== 'set') for (const n of variablesOf(def.source)) visit(n, def);
    }
  };
  for (const k of keys) for (const n of variablesOf(k)) visit(n, null);
  return out;
}

/** A representative address of a geo entry's network (IPv4 only), or null. */
function addressOf(entry) {
  try {
    if (entry.includes('-')) return entry.split('-')[0];
    const [addr, bits] = ipaddr.parseCIDR(entry.includes('/') ? entry : `${entry}/32`);
    if (addr.kind() !== 'ipv4') return null;
    const n = (addr.toByteArray().reduce((a, b) => a * 256 + b, 0) + (bits < 31 ? 1 : 0)) >>> 0;
    return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
  } catch {
    return null;
  }
}

/** A map or geo entry's key as a value an input can carry, for one input read whole: [values]. */
function entryValues(def) {
  const out = [];
  for (const e of def.entries) {
    const key = e.directive;
    if (['default', 'hostnames', 'volatile', 'include', 'ranges', 'delete', 'proxy', 'proxy_recursive'].includes(key))
      continue;
    if (def.kind === 'geo') {
      const a = addressOf(key);
      if (a) out.push({ value: a, why: `${key} (geo at ${def.at})` });
      continue;
    }
    const unq = key.replace(/^"(.*)"$/, '$1').replace(/^'(.*)'$/, '$1');
    if (unq.startsWith('~')) {
      const caseless = unq.startsWith('~*');
      for (const ex of examplesOf(unq.slice(caseless ? 2 : 1), caseless, 1))
        out.push({ value: ex, why: `${unq} (map at ${def.at})` });
    } else out.push({ value: unq.replace(/^\\/, ''), why: `${unq || '""'} (map at ${def.at})` });
  }
  return out;
}

/** How a request carries an input: {by: address|header|cookie|arg|args, name}, or null (the route fixes it). */
export function carrierOf(input) {
  if (['remote_addr', 'binary_remote_addr'].includes(input)) return { by: 'address' };
  if (input.startsWith('http_')) return { by: 'header', name: input.slice(5).replace(/_/g, '-') };
  if (input.startsWith('cookie_')) return { by: 'cookie', name: input.slice(7) };
  if (input.startsWith('arg_')) return { by: 'arg', name: input.slice(4) };
  if (input === 'args' || input === 'query_string') return { by: 'args' };
  return null;
}

/** A client with one input set (`value` null: absent). */
export function withInput(client, carrier, value) {
  const c = structuredClone(client);
  if (carrier.by === 'address') c.address = value;
  else if (carrier.by === 'args') c.query = value;
  else {
    const bag = { header: 'headers', cookie: 'cookies', arg: 'args' }[carrier.by];
    if (value === null) delete c[bag][carrier.by === 'header' ? carrier.name.toLowerCase() : carrier.name];
    else c[bag][carrier.by === 'header' ? carrier.name.toLowerCase() : carrier.name] = value;
  }
  return c;
}

/**
 * The variations of the baseline the keys can tell apart: [{client, input, value, why}], one input
 * changed each, at most `cap` (the map entries sampled evenly beyond it, and said).
 */
export function variations(keys, http, { cap = 400, base = baseline() } = {}) {
  const out = [];
  const notes = [];
  for (const { input, via } of inputsOf(keys, http)) {
    const carrier = carrierOf(input);
    if (!carrier) continue;
    // A whole-input map or geo singles out its entries; any input may be absent or free.
    const whole = via && variablesOf(via.source).length === 1 && via.source.trim() === `$${input}`;
    const values = [
      ...(carrier.by === 'address'
        ? []
        : [
            { value: null, why: 'absent' },
            { value: FREE, why: 'any value' },
          ]),
      ...(whole ? entryValues(via) : []),
    ];
    if (via && !whole)
      notes.push(
        `${via.kind} ${via.source} (${via.at}): read from several inputs; its entries are not tried one by one`,
      );
    const step = Math.max(1, Math.ceil(values.length / cap));
    if (step > 1) notes.push(`${input}: ${values.length} values singled out (${via?.at}); every ${step}th tried`);
    values
      .filter((_, i) => i % step === 0)
      .forEach((v) => out.push({ client: withInput(base, carrier, v.value), input, carrier, ...v }));
  }
  return { variations: out, notes };
}

/** The request headers of a client (its cookies as one Cookie header), with its address in `addressHeader`. */
export function headersOf(client, addressHeader) {
  const cookies = Object.entries(client.cookies).map(([k, v]) => `${k}=${v}`);
  return {
    ...client.headers,
    ...(cookies.length ? { cookie: cookies.join('; ') } : {}),
    [addressHeader.toLowerCase()]: client.address,
  };
}

/** The query of a client's arguments (or its whole query string). */
export const queryOf = (client) =>
  client.query ??
  Object.entries(client.args)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
    .join('&');

/**
 * A client made a case's own (slot `slot` of target `t`): its free values and its address changed
 * so that its keys differ from every other case's, where the keys read them.
 */
export function personal(client, t, slot) {
  const c = structuredClone(client);
  const mark = `${FREE}-t${t}s${slot}`;
  for (const bag of ['headers', 'cookies', 'args'])
    for (const [k, v] of Object.entries(c[bag])) if (v === FREE) c[bag][k] = mark;
  if (c.headers['user-agent'] === BASE_UA) c.headers['user-agent'] = `${BASE_UA} ${mark}`;
  const [a, b] = BASE_NET;
  if (c.address === baseline().address) c.address = `${a}.${b + (t >> 8)}.${t & 255}.${slot + 1}`;
  else {
    const parts = c.address.split('.').map(Number);
    parts[3] = Math.min(254, parts[3] + slot);
    c.address = parts.join('.');
  }
  return c;
}

/** The values that may flip an `if` condition on an input: its operand, examples of its regex, a free one. */
function guardValues(args) {
  const [, op, operand] = args;
  if (!op)
    return [
      { value: '', why: 'empty' },
      { value: '1', why: 'set' },
    ];
  const unq = (operand ?? '').replace(/^"(.*)"$/, '$1').replace(/^'(.*)'$/, '$1');
  if (op === '=' || op === '!=')
    return [
      { value: unq, why: `${op} ${operand}` },
      { value: FREE, why: 'any value' },
    ];
  if (/^!?~\*?$/.test(op))
    return [
      ...examplesOf(unq, op.endsWith('*'), 2).map((value) => ({ value, why: `${op} ${operand}` })),
      { value: FREE, why: 'any value' },
    ];
  return [];
}

/**
 * The variations of `base` that may answer the config's `if` conditions otherwise (a request the
 * baseline has answered before any limit): [{client, input, carrier, value, why}], one input each.
 */
export function guardVariations(http, base = baseline()) {
  const ifs = [];
  const walk = (dirs) =>
    dirs.forEach((x) => {
      if (x.directive === 'if' && x.args[0]?.startsWith('$')) ifs.push(x);
      if (x.block) walk(x.block);
    });
  walk(http.block);
  const out = [];
  for (const x of ifs) {
    const name = x.args[0].slice(1);
    const carrier = carrierOf(name);
    if (carrier)
      for (const v of guardValues(x.args))
        out.push({
          client: withInput(base, carrier, v.value),
          input: name,
          carrier,
          value: v.value,
          why: `if (${x.args.join(' ')}) at ${x.at}`,
        });
    else out.push(...variations([x.args[0]], http, { cap: 50, base }).variations);
  }
  return out;
}
