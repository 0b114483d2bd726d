/*
 * A team's Traefik config as the lab reads it: a static config (its entry points, and the file
 * provider's dynamic config it names, a file or a folder), or a dynamic config alone, in YAML or
 * TOML. What the model reads: each HTTP router's entry points, its rule (Host, Path and
 * PathPrefix joined by &&) and its middlewares, of which a `rateLimit` (average, period, burst,
 * sourceCriterion by address, header or host) is modelled. What it cannot read is refused by
 * name with file:line (a Redis-backed limit, plugins, an address strategy with depth), or, where
 * it only keeps a router from being loaded, said as that router's reason.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { sourceOf } from './source.mjs';
import { addressList, parseDuration, readCriterion } from './words.mjs';
import { readRule, ruleMeets } from './rule.mjs';

// Middlewares that change a request or its answer without answering it themselves.
const PASSING = new Set([
  'addPrefix',
  'stripPrefix',
  'stripPrefixRegex',
  'replacePath',
  'replacePathRegex',
  'headers',
  'compress',
  'buffering',
  'retry',
  'contentType',
  'grpcWeb',
]);

const isStatic = (data) => 'entryPoints' in data || 'providers' in data;

/** A folder's config files as Traefik's file provider reads them: by name, folders in their place. */
function filesUnder(d) {
  return readdirSync(d, { withFileTypes: true })
    .sort((a, b) => (a.name < b.name ? -1 : 1))
    .flatMap((e) => {
      if (e.isDirectory()) return filesUnder(join(d, e.name));
      return /\.(ya?ml|toml)$/i.test(e.name) ? [join(d, e.name)] : [];
    });
}

/** The dynamic config files a static config's file provider names: [source]. */
function providedFiles(st) {
  const file = st.data.providers?.file;
  if (!file) throw new Error(`${st.at(['providers'])}: no file provider: the lab reads the file provider's routers`);
  const base = dirname(st.file);
  if (file.filename) {
    const f = isAbsolute(file.filename) ? file.filename : join(base, file.filename);
    if (!existsSync(f))
      throw new Error(
        `${st.at(['providers', 'file', 'filename'])}: providers.file.filename ${file.filename}: no such file`,
      );
    return [resolve(f) === resolve(st.file) ? st : sourceOf(f)];
  }
  if (file.directory) {
    const d = isAbsolute(file.directory) ? file.directory : join(base, file.directory);
    if (!existsSync(d) || !statSync(d).isDirectory())
      throw new Error(
        `${st.at(['providers', 'file', 'directory'])}: providers.file.directory ${file.directory}: no such folder`,
      );
    return filesUnder(d).map((f) => sourceOf(f));
  }
  throw new Error(`${st.at(['providers', 'file'])}: providers.file names neither a filename nor a directory`);
}

/** What a static config says the lab leaves out (other providers, its API, tracing): words. */
function staticSays(st) {
  const leftOut = [];
  for (const p of Object.keys(st.data.providers ?? {}).filter((k) => k !== 'file' && k !== 'providersThrottleDuration'))
    leftOut.push({
      at: st.at(['providers', p]),
      what: `providers.${p}: its routers are not read (the lab runs the file provider's)`,
    });
  if (st.data.api?.insecure)
    leftOut.push({
      at: st.at(['api', 'insecure']),
      what: "api.insecure: left out (it opens an entry point of its own; the team's routers to api@internal are kept)",
    });
  if (st.data.experimental?.plugins || st.data.experimental?.localPlugins)
    throw new Error(`${st.at(['experimental'])}: plugins: the lab cannot model what a plugin does`);
  return leftOut;
}

/**
 * Whose X-Forwarded-For an entry point keeps: {insecure, trustedIPs, at}. From any other client
 * Traefik deletes it before the routers' middlewares (forwardedheaders.go).
 */
function forwardedOf(fh, at) {
  const trusted = fh?.trustedIPs;
  return {
    insecure: fh?.insecure === true,
    trustedIPs: listOf(trusted),
    at,
  };
}

/**
 * Whether the lab stands for a forwarder the entry point trusts (render.mjs adds 127.0.0.1 to its
 * trustedIPs): where it trusts any, or where no static config says.
 */
export const labForwards = (f) => !f.insecure && (f.trustedIPs.length > 0 || Boolean(f.assumed));

/** Whether X-Forwarded-For from k6 reaches an entry point's routers. */
export const keepsForwarded = (f) => f.insecure || labForwards(f);

/** The middlewares' users files of the host's: [{m, type}] (basicAuth or digestAuth). */
export const usersFiles = (middlewares) =>
  Object.values(middlewares).flatMap((m) =>
    AUTH_WITH_FILES.filter((t) => m[t]?.usersFile).map((type) => ({ m, type })),
  );

/** The entry points: [{name, place, at, redirects, tls, forwarded}] (place: as written, :80 as *:80). */
function entryPointsOf(st, routers) {
  if (!st) {
    const names = [...new Set(Object.values(routers).flatMap((r) => r.entryPoints ?? ['web']))];
    // With no static config read, the lab's entry point trusts its client's X-Forwarded-For, as
    // a limit that reads it counts on (said in the changes).
    return names.map((name) => ({
      name,
      place: `entryPoint ${name}`,
      at: '(no static config)',
      redirects: false,
      forwarded: { insecure: false, trustedIPs: [], assumed: true },
    }));
  }
  return Object.entries(st.data.entryPoints ?? {}).map(([name, ep]) => {
    const address = String(ep?.address ?? ':80').replace(/\/(tcp|udp)$/, '');
    return {
      name,
      place: address.startsWith(':') ? `*${address}` : address,
      at: st.at(['entryPoints', name]),
      redirects: Boolean(ep?.http?.redirections),
      // TLS on every router of the entry point (served with the lab's certificate).
      tls: Boolean(ep?.http?.tls),
      forwarded: forwardedOf(ep?.forwardedHeaders, st.at(['entryPoints', name, 'forwardedHeaders'])),
      // Put ahead of the middlewares of every router on it (Traefik's entry point model, applyModel).
      middlewares: listOf(ep?.http?.middlewares),
      middlewaresAt: st.at(['entryPoints', name, 'http', 'middlewares']),
    };
  });
}

/** A list as a static config writes it: a YAML list, or TOML's and the CLI's comma-separated string. */
const listOf = (v) =>
  v === undefined || v === null ? [] : (Array.isArray(v) ? v : String(v).split(',')).map((x) => String(x).trim());

// Middlewares whose users may stand in a file of the host's (the render puts a user of the lab's there).
export const AUTH_WITH_FILES = ['basicAuth', 'digestAuth'];

// Traefik's router fields.
const ROUTER_FIELDS = [
  'entryPoints',
  'middlewares',
  'service',
  'rule',
  'ruleSyntax',
  'priority',
  'tls',
  'observability',
];

/**
 * The dynamic configs' HTTP sections merged: {raw: as written, read: each entry with where it
 * stands (`at`, and `where(path)` for a key in it)}, each {routers, middlewares, services}.
 */
function httpOf(sources, leftOut) {
  const raw = { routers: {}, middlewares: {}, services: {} };
  const out = { routers: {}, middlewares: {}, services: {} };
  for (const s of sources) {
    for (const k of Object.keys(s.data.tls ?? {}))
      leftOut.push({
        at: s.at(['tls', k]),
        what: `tls.${k}: left out (the lab serves its own certificate with Traefik's default TLS options)`,
      });
    for (const k of Object.keys(s.data.http?.serversTransports ?? {}))
      leftOut.push({
        at: s.at(['http', 'serversTransports', k]),
        what: `http.serversTransports.${k}: left out (the lab's backend speaks plain HTTP)`,
      });
    for (const kind of Object.keys(out))
      for (const [name, written] of Object.entries(s.data.http?.[kind] ?? {})) {
        // Traefik's file provider keeps the first file's (by name) and skips the rest (merge.go).
        if (out[kind][name]) {
          leftOut.push({
            at: s.at(['http', kind, name]),
            what: `http.${kind}.${name}: skipped, as Traefik skips it: already defined at ${out[kind][name].at}`,
          });
          continue;
        }
        // A router's keys as Traefik names its fields (`entrypoints` is `entryPoints`).
        const { named, spelled } =
          kind === 'routers' ? byFieldName(written, ROUTER_FIELDS) : { named: written, spelled: {} };
        raw[kind][name] = named;
        out[kind][name] = {
          ...named,
          name,
          at: s.at(['http', kind, name]),
          where: (p) => s.at(['http', kind, name, spelled[p[0]] ?? p[0], ...p.slice(1)]),
        };
      }
  }
  return { raw, read: out };
}

/** A router's middlewares, chains expanded: [{name, type, spec, at, where}] or {none}. */
function chainOf(http, names, seen = []) {
  const out = [];
  for (const full of names ?? []) {
    const [name, provider] = String(full).split('@');
    if (provider && provider !== 'file') return { none: `middleware ${full}: from provider ${provider}, not read` };
    const m = http.middlewares[name];
    if (!m) return { none: `middleware ${full}: not defined in the files read` };
    const type = Object.keys(m).find((k) => !['name', 'at', 'where'].includes(k));
    if (type === 'chain') {
      if (seen.includes(name)) throw new Error(`${m.at}: chain ${name} includes itself`);
      const inner = chainOf(http, m.chain.middlewares, [...seen, name]);
      if (inner.none) return inner;
      out.push(...inner);
    } else out.push({ name, type, spec: m[type] ?? {}, at: m.at, where: (p) => m.where([type, ...p]) });
  }
  return out;
}

// Traefik's rateLimit fields; it matches a key to a field whatever its case.
const RATE_LIMIT_FIELDS = ['average', 'period', 'burst', 'sourceCriterion', 'redis'];

/**
 * An object's keys by the names of the fields Traefik matches them to, whatever their case
 * (`Average` is `average`): {named, spelled (each field's key as the file spells it), unknown}.
 */
function byFieldName(obj, fields) {
  const lower = Object.fromEntries(fields.map((f) => [f.toLowerCase(), f]));
  const named = {};
  const spelled = {};
  const unknown = [];
  for (const [k, v] of Object.entries(obj ?? {})) {
    const f = lower[k.toLowerCase()];
    if (!f) unknown.push(k);
    named[f ?? k] = v;
    spelled[f ?? k] = k;
  }
  return { named, spelled, unknown };
}

/**
 * A middleware's fields by their names as Traefik spells them; a key it has no field for is
 * refused where it stands, as Traefik would refuse the file.
 */
function fieldsNamed(m, fields) {
  const { named: spec, spelled, unknown } = byFieldName(m.spec, fields);
  if (unknown.length)
    throw new Error(
      `${m.where([unknown[0]])}: ${m.type}.${unknown[0]}: Traefik's ${m.type} has no such field (${fields.join(', ')})`,
    );
  // Where a field stands, by the key as the file spells it.
  return { ...m, spec, where: (p) => m.where([spelled[p[0]] ?? p[0], ...p.slice(1)]) };
}

/** A rateLimit middleware as the model reads it. */
function limitOf(found) {
  const m = fieldsNamed(found, RATE_LIMIT_FIELDS);
  if (m.spec.redis)
    throw new Error(
      `${m.where(['redis'])}: rateLimit.redis: a Redis-backed limit is shared by several Traefiks; the lab models one`,
    );
  const average = Number(m.spec.average ?? 0);
  const periodS = m.spec.period === undefined ? 1 : parseDuration(m.spec.period, m.where(['period']));
  const burst = Number(m.spec.burst ?? 1);
  for (const [k, v] of [
    ['average', average],
    ['burst', burst],
  ])
    if (!Number.isInteger(v) || v < 0)
      throw new Error(`${m.where([k])}: rateLimit.${k} ${m.spec[k]}: a whole number >= 0`);
  if (periodS <= 0) throw new Error(`${m.where(['period'])}: rateLimit.period ${m.spec.period}: must be more than 0`);
  return {
    middleware: m.name,
    at: m.at,
    average,
    periodS,
    burst,
    atOf: { average: m.where(['average']), period: m.where(['period']), burst: m.where(['burst']) },
    criterion: {
      ...readCriterion(m.spec.sourceCriterion, m.where(['sourceCriterion'])),
      at: m.where(['sourceCriterion']),
    },
  };
}

/**
 * An inFlightReq middleware as the model reads it: {middleware, at, amount, atOf, criterion}.
 * With no sourceCriterion Traefik keys it by the request's Host, not its address
 * (pkg/middlewares/inflightreq: RequestHost where none is given).
 */
function inFlightOf(found) {
  const m = fieldsNamed(found, ['amount', 'sourceCriterion']);
  const amount = Number(m.spec.amount ?? 0);
  if (!Number.isInteger(amount) || amount < 1)
    throw new Error(`${m.where(['amount'])}: inFlightReq.amount ${m.spec.amount}: a whole number >= 1`);
  const given = m.spec.sourceCriterion;
  const criterion =
    given && (given.ipStrategy || given.requestHeaderName || given.requestHost)
      ? readCriterion(given, m.where(['sourceCriterion']))
      : { by: 'host' };
  return { middleware: m.name, at: m.at, amount, atOf: { amount: m.where(['amount']) }, criterion };
}

/** A criterion as compared: what it keys by (not where it stands, nor what the lab notes on it). */
const criterionWords = (c) => JSON.stringify([c.by, c.header, c.depth, c.excludedIPs]);

/**
 * A router's inFlightReq beside its rateLimit (`limit`), in the chain's order: {inFlight: {...,
 * first}} or {none: why}; {} where it has none.
 */
function inFlightBeside(chain, limitFound, limit) {
  const found = chain.filter((m) => m.type === 'inFlightReq');
  if (!found.length) return {};
  if (found.length > 1)
    return {
      none: `${found.length} inFlightReq middlewares (${found.map((m) => m.at).join(', ')}): one per router is modelled`,
    };
  const inFlight = inFlightOf(found[0]);
  if (criterionWords(inFlight.criterion) !== criterionWords(limit.criterion))
    return {
      none: `inFlightReq ${inFlight.middleware} (${inFlight.at}) keys by ${inFlight.criterion.by}, rateLimit ${limit.middleware} by ${limit.criterion.by}: the lab models one source per router yet`,
    };
  return { inFlight: { ...inFlight, first: chain.indexOf(found[0]) < chain.indexOf(limitFound) } };
}

// The allow lists, by their names in v3 and v2.
const ALLOW_LISTS = new Set(['ipAllowList', 'ipWhiteList']);

/**
 * Why a middleware would answer k6's requests itself (so its router gets no cases), or null
 * where it lets them on: a rateLimit, one that only changes them, or an allow list of the client
 * address that holds k6's 127.0.0.1.
 */
function answersItself(found) {
  if (found.type === 'rateLimit' || found.type === 'inFlightReq' || PASSING.has(found.type)) return null;
  if (!ALLOW_LISTS.has(found.type))
    return `middleware ${found.name} (${found.type}, ${found.at}) answers itself: not modelled`;
  const m = fieldsNamed(found, ['sourceRange', 'ipStrategy', 'rejectStatusCode']);
  const ranges = m.spec.sourceRange ?? [];
  const where = m.where(['sourceRange']);
  if (!Array.isArray(ranges) || !ranges.length)
    return `${m.type} ${m.name} (${where}): sourceRange is empty, and Traefik makes no such middleware`;
  const by = readCriterion(m.spec.ipStrategy ? { ipStrategy: m.spec.ipStrategy } : null, m.where(['ipStrategy']));
  if (by.by !== 'address') return `${m.type} ${m.name} (${m.at}) reads X-Forwarded-For (ipStrategy): not modelled yet`;
  if (addressList(ranges, where, `${m.type}.sourceRange`).check('127.0.0.1')) return null;
  return `${m.type} ${m.name} (${where}): sourceRange (${ranges.join(', ')}) leaves out k6's 127.0.0.1, so it answers every request ${m.spec.rejectStatusCode ?? 403}`;
}

/** One router as a route: {router, at, places, host, path, limit} or {router, at, none}. */
function routeOf(name, r, http, entryPoints) {
  const eps = r.entryPoints ? entryPoints.filter((e) => r.entryPoints.includes(e.name)) : entryPoints;
  // Sent to where it answers as deployed: an entry point that does not redirect, if it has one.
  const served = eps.find((e) => !e.redirects) ?? eps[0];
  const base = { router: name, at: r.at, places: eps.map((e) => e.place), place: served?.place };
  if (!eps.length) return { ...base, none: 'no entry point of the files read' };
  if (eps.every((e) => e.redirects)) return { ...base, none: 'its entry points redirect' };
  const rule = readRule(r.rule ?? '', r.where(['rule']));
  if (rule.none) return { ...base, none: rule.none };
  // The entry point's middlewares first, as Traefik's entry point model puts them.
  const put = chainOf(http, served.middlewares ?? []);
  const own = put.none ? put : chainOf(http, r.middlewares ?? []);
  if (own.none) return { ...base, none: own.none };
  const chain = [...put, ...own];
  const answers = chain.map(answersItself).find(Boolean);
  if (answers) return { ...base, none: answers };
  const limits = chain.filter((m) => m.type === 'rateLimit');
  if (limits.length > 1)
    return {
      ...base,
      none: `${limits.length} rateLimit middlewares (${limits.map((m) => m.at).join(', ')}): one per router is modelled`,
    };
  if (!limits.length)
    return {
      ...base,
      none: chain.some((m) => m.type === 'inFlightReq')
        ? 'an inFlightReq with no rateLimit: not modelled yet'
        : 'no rateLimit middleware',
    };
  const limit = limitOf(limits[0]);
  const beside = inFlightBeside(chain, limits[0], limit);
  if (beside.none) return { ...base, none: beside.none };
  // TLS by the router's own tls, or its entry point's: k6 sends to it over TLS.
  const tls = Boolean(r.tls) || served.tls;
  return {
    ...base,
    host: rule.host,
    path: rule.path,
    tls,
    entryPoint: served.name,
    keepsForwarded: keepsForwarded(served.forwarded),
    limit: {
      ...limit,
      ...(beside.inFlight ? { inFlight: beside.inFlight } : {}),
      ...(put.includes(limits[0])
        ? { via: `entryPoints.${served.name}.http.middlewares (${served.middlewaresAt})` }
        : {}),
    },
  };
}

// A router's priority as Traefik's muxer sets it: its own, or its rule's length.
const priorityOf = (r) => Number(r.priority) || String(r.rule ?? '').length;

/**
 * A limited route, or, where another router on its entry point meets its request at a higher
 * priority (and as TLS or not alike), that route with no cases and the router named: its
 * requests go there, as deployed.
 */
function unlessTaken(route, routers, entryPoints) {
  const own = routers[route.router];
  const ep = entryPoints.find((e) => e.name === route.entryPoint);
  const request = { host: route.host, path: route.path };
  const taker = Object.values(routers).find(
    (o) =>
      o !== own &&
      (o.entryPoints ?? [ep.name]).includes(ep.name) &&
      (Boolean(o.tls) || ep.tls) === route.tls &&
      priorityOf(o) > priorityOf(own) &&
      ruleMeets(o.rule ?? '', request) === true,
  );
  if (!taker) return route;
  const { limit, ...rest } = route;
  return {
    ...rest,
    none: `its request (${route.host ? `Host ${route.host} ` : ''}${route.path}, priority ${priorityOf(own)}) goes to router ${taker.name} (${taker.at}), whose rule meets it at priority ${priorityOf(taker)}`,
  };
}

/**
 * A Traefik config read: {proxy: 'traefik', file, sources, entryPoints, http, routes,
 * leftOut (what the lab leaves out: [{at: file:line, what}]), says (its limited routers' names,
 * which can name the policy: lab/policy/name.mjs)}.
 */
export function traefikPolicy(file) {
  const top = sourceOf(file);
  const st = isStatic(top.data) ? top : null;
  const sources = st ? providedFiles(st) : [top];
  const leftOut = st ? staticSays(st) : [];
  const { raw, read: http } = httpOf(sources, leftOut);
  for (const { m, type } of usersFiles(http.middlewares))
    leftOut.push({
      at: m.where([type, 'usersFile']),
      what: `${type}.usersFile ${m[type].usersFile}: a file of the host's, a user of the lab's in its place (its routers get no cases)`,
    });
  for (const s of sources)
    for (const k of ['tcp', 'udp'])
      if (s.data[k]) leftOut.push({ at: s.at([k]), what: `${k}: its routers are not loaded (the lab loads HTTP)` });
  const entryPoints = entryPointsOf(st, http.routers);
  const routes = Object.entries(http.routers)
    .map(([name, r]) => routeOf(name, r, http, entryPoints))
    .map((r) => (r.limit ? unlessTaken(r, http.routers, entryPoints) : r));
  for (const r of Object.values(http.routers).filter((x) => x.tls && typeof x.tls === 'object'))
    for (const k of Object.keys(r.tls))
      leftOut.push({
        at: r.where(['tls', k]),
        what: `routers.${r.name}.tls.${k}: left out (the lab serves its own certificate)`,
      });
  for (const e of entryPoints.filter((x) => x.tls))
    leftOut.push({ at: e.at, what: `entryPoints.${e.name}.http.tls: its routers served with the lab's certificate` });
  if (!routes.some((r) => r.limit))
    throw new Error(
      `${file}: no router with a rateLimit middleware: nothing to load (${routes.map((r) => `${r.router}: ${r.none}`).join('; ') || 'no routers'})`,
    );
  return {
    proxy: 'traefik',
    file,
    staticFile: st?.file ?? null,
    // The API as the static config enables it, where a team's router serves api@internal.
    api: Object.values(raw.routers).some((r) => /^(api|dashboard)@internal$/.test(r.service ?? ''))
      ? (st?.data.api ?? null)
      : null,
    sources: sources.map((s) => s.file),
    entryPoints,
    http: raw,
    routes,
    leftOut,
    says: routes.filter((r) => r.limit).map((r) => ({ name: r.router, what: 'router', at: r.at })),
  };
}
