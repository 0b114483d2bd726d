/*
 * What nginx does with the lab's requests, asked of nginx itself (probe.mjs), in rounds:
 *   1. where each location is reached from: the paths its match takes, on its server's places and
 *      Host, as the baseline client; a request answered 404 from disk gets its file made
 *      (root, alias, index) and is asked again, so that the content handler answers 200;
 *   2. the classes of clients per reached location: the baseline's variations (clients.mjs),
 *      grouped by what nginx gives them (which zones count them, what they are answered);
 *   3. each class's cases (slots): made their own where the keys allow (clients.mjs personal),
 *      and the keys nginx computes for each, so that the plan knows which cases share a bucket.
 * Returns the targets the plan can load: a limiting location, a class, its request and its
 * slots' keys; and what was not reached, with why.
 */
import { runProbe, keyColumns, tryColumns } from './probe.mjs';
import { placesOf, pathsOf, hostOf, serverPlaces, errorPageUris } from './requests.mjs';
import { FREE, baseline, variations, guardVariations, headersOf, queryOf, personal } from './clients.mjs';
import { clientHeader } from './render.mjs';

// Cases per target the plan can give keys of their own; more share the slots' keys in turn.
export const SLOTS = 12;

/** The zones a probe row's limit counted it in at `routeId` (its keys not empty), limit_req's or limit_conn's. */
function liveZones(route, row, columns, conn) {
  const limits = (conn ? route.conns : route.limits) ?? [];
  return limits
    .map((l) => l.zone)
    .filter((z) => row.keys[columns.findIndex((c) => c.zone === z && c.conn === conn)] !== '');
}

/**
 * What a probe row says: the location whose limit_req counted it (and the zones), the one whose
 * limit_conn did, its final status. nginx's $limit_req_status says whether a limit_req ran at all
 * (a request answered in the rewrite phase never meets one); the first location of its trail with
 * a key in one of its zones is the one that ran.
 */
export function readRow(routesById, row, columns) {
  const first = (conn) => {
    if (!(conn ? row.limitConn : row.limitReq)) return null;
    for (const id of row.via) {
      const r = routesById.get(id);
      const zones = r ? liveZones(r, row, columns, conn) : [];
      if (zones.length) return { route: id, zones };
    }
    return null;
  };
  return {
    req: first(false),
    conn: first(true),
    status: row.status,
    via: row.via,
    filename: row.filename,
    proxied: row.proxied,
    limitReq: row.limitReq,
    limitConn: row.limitConn,
  };
}

/** A probe request of a client to a route's place, host and path. */
function requestOf(id, place, host, path, client, addressHeader) {
  const q = queryOf(client);
  return {
    id,
    place: place.place,
    tls: place.ssl,
    host,
    path: `${path}${q ? `${path.includes('?') ? '&' : '?'}${q}` : ''}`,
    headers: { ...headersOf(client, addressHeader), host },
  };
}

/** The files a 404 row asks for, relative to the probe's folder (an index where it asks for a folder). */
function filesFor(row, byId, tries) {
  if (row.status !== 404) return [];
  const inside = (f) => f && !f.startsWith('/') && !f.startsWith('..');
  const asFile = (f) => (f.endsWith('/') ? `${f}index.html` : f);
  // Where the answering location's try_files looks first, as nginx expanded it.
  const route = byId.get(row.via.at(-1));
  const i = tries.indexOf(route?.tryFiles?.[0]);
  const tried = i >= 0 && row.docroot && row.tries[i] ? `${row.docroot}/${row.tries[i]}`.replace(/\/+/g, '/') : null;
  return [row.filename, tried].filter(inside).map(asFile);
}

/** The signature of a row on one route: which zones count it there, and how it is answered. */
const signature = (read) =>
  JSON.stringify([
    read.req?.route ?? null,
    read.req?.zones ?? [],
    read.conn?.route ?? null,
    read.conn?.zones ?? [],
    read.status,
  ]);

/** A request as the probe takes it (the client it was made from left out). */
const probeRequest = ({ client, ...r }) => (void client, r);

/** Round 1: every location's candidate requests as `client` (of the servers `only` names, or all). */
function candidates(policy, places, addressHeader, client = baseline(), only = null, tag = 'c') {
  const requests = [];
  const servers = [...new Map(policy.routes.map((r) => [r.server.at, r.server])).values()].filter(
    (s) => !only || only.has(s.at),
  );
  for (const server of servers) {
    const mine = policy.routes.filter((r) => r.server === server);
    const paths = [...new Set([...mine.flatMap(pathsOf), ...errorPageUris(mine)])];
    const host = hostOf(server);
    for (const place of serverPlaces(server, places))
      for (const path of paths)
        requests.push({ ...requestOf(`${tag}${requests.length}`, place, host, path, client, addressHeader), client });
  }
  return requests;
}

/**
 * Asks nginx where the baseline's requests go, making the files a 404 asks for and asking again:
 * {rows, files}.
 */
function reachRounds(policy, requests, opts) {
  let files = [];
  let rows = runProbe(policy, requests.map(probeRequest), { ...opts, files }).rows;
  const byId = new Map(policy.routes.map((r) => [r.id, r]));
  const tries = tryColumns(policy);
  const wanted = new Set(Object.values(rows).flatMap((row) => filesFor(row, byId, tries)));
  if (wanted.size) {
    files = [...wanted].sort();
    rows = runProbe(policy, requests.map(probeRequest), { ...opts, files }).rows;
  }
  return { rows, files };
}

/** The first baseline request per limiting location (answered 200), and every location the requests met. */
function reachedRoutes(policy, requests, rows, columns) {
  const byId = new Map(policy.routes.map((r) => [r.id, r]));
  const reached = new Map();
  const met = new Map();
  for (const req of requests) {
    const row = rows[req.id];
    if (!row) continue;
    const read = readRow(byId, row, columns);
    for (const id of row.via) if (!met.has(id)) met.set(id, { req, read });
    // Where its limits stand: the location that counted it, or, where its keys are all empty
    // (another client's would not be), the first limited one it passed.
    const limiting =
      read.req?.route ??
      read.conn?.route ??
      (read.limitReq || read.limitConn
        ? null
        : row.via.find((id) => {
            const r = byId.get(id);
            return !r?.answeredBefore && (r?.limits?.length || r?.conns?.length);
          }));
    if (limiting === undefined || limiting === null || read.status !== 200 || reached.has(limiting)) continue;
    reached.set(limiting, { request: req, read });
  }
  return { reached, met, byId };
}

/**
 * nginx's word on `policy` (read.mjs's): {places, targets: [{route, classes: [{name, client, why,
 * read, keys, slots: [{client, keys}]}]}], unreached: [{route, why}], files, notes}.
 */
export function explore(policy, { python, version, cacheDir }) {
  const places = placesOf(policy.routes);
  const addressHeader = clientHeader(policy.tree);
  const columns = keyColumns(policy);
  const opts = { python, version, cacheDir };
  const first = candidates(policy, places, addressHeader);
  const round1 = reachRounds(policy, first, opts);
  let { reached, met, byId } = reachedRoutes(policy, first, round1.rows, columns);
  // Locations the baseline never gets counted at, tried again as the clients the `if`s tell apart.
  const missed = policy.routes.filter(
    (r) => (r.limits?.length || r.conns?.length) && !r.answeredBefore && !reached.has(r.id),
  );
  let { files } = round1;
  if (missed.length) {
    const only = new Set(missed.map((r) => r.server.at));
    const guards = guardVariations(policy.http).flatMap((v, i) =>
      candidates(policy, places, addressHeader, v.client, only, `g${i}-`),
    );
    const requests = [...first, ...guards];
    const round2 = reachRounds(policy, requests, opts);
    files = round2.files;
    ({ reached, met, byId } = reachedRoutes(policy, requests, round2.rows, columns));
  }
  const keys = columns.map((c) => c.key);
  const notes = variations(keys, policy.http).notes;
  const ctx = { ...opts, files, columns, addressHeader, byId };
  const targets = classRound(policy, [...reached], keys, ctx).map((t) => ({
    ...t,
    place: places.find((p) => p.place === t.request.place),
    host: t.request.host,
  }));
  slotRound(policy, targets, ctx);
  const unreached = policy.routes
    .filter((r) => (r.limits?.length || r.conns?.length) && !reached.has(r.id))
    .map((r) => ({ route: r, why: whyUnreached(r, met.get(r.id), byId) }));
  return { places, addressHeader, targets, unreached, files, notes };
}

/** Why a limited location got no target: never reached, reached but counted elsewhere, or answered otherwise. */
function whyUnreached(route, seen, byId) {
  if (!seen)
    return `no request the lab tried reaches it (${route.match.modifier === '@' ? 'a named location no try_files or error_page of a reached one sends to' : `paths tried: ${pathsOf(route).join(', ') || 'none'}`})`;
  const { read } = seen;
  const other = read.req?.route ?? read.conn?.route;
  if (other !== undefined && other !== null && other !== route.id)
    return `its requests are counted by ${byId.get(other).location} (${byId.get(other).at}) first: nginx counts a request once`;
  if (read.status !== 200) return `answered ${read.status} before or instead of its content (${seen.req.path})`;
  return 'every key of its zones is empty for the clients the lab tried: no request of theirs is limited';
}

/**
 * Round 2: the classes of each reached location: the baseline's, and each variation nginx gives a
 * signature apart (counted by other zones, or answered otherwise), asked in one probe.
 */
function classRound(policy, reached, keys, ctx) {
  const asked = reached.flatMap(([routeId, { request }], ti) =>
    variations(keys, policy.http, { base: request.client }).variations.map((v, i) => ({
      ti,
      routeId,
      v,
      req: requestOf(
        `v${ti}-${i}`,
        { place: request.place, ssl: request.tls },
        request.host,
        request.path,
        v.client,
        ctx.addressHeader,
      ),
    })),
  );
  const bases = reached.map(([, { request }]) => probeRequest(request));
  const rows = runProbe(policy, [...bases, ...asked.map((a) => a.req)], ctx).rows;
  return reached.map(([routeId, { request }], ti) => {
    const baseRow = rows[request.id];
    const base = readRow(ctx.byId, baseRow, ctx.columns);
    const ordinary = request.client === undefined || JSON.stringify(request.client) === JSON.stringify(baseline());
    const classes = [
      {
        name: 'ordinary',
        why: ordinary ? 'the baseline client' : "the baseline client, with what the config's if conditions let through",
        client: request.client ?? baseline(),
        read: base,
        keys: keysOf(baseRow, ctx.columns),
      },
    ];
    const seen = new Set([signature(base)]);
    for (const a of asked.filter((x) => x.ti === ti)) {
      const row = rows[a.req.id];
      if (!row) continue;
      const read = readRow(ctx.byId, row, ctx.columns);
      const sig = signature(read);
      if (seen.has(sig)) continue;
      seen.add(sig);
      // A client another location counts is that location's class, not this one's.
      const counter = read.req?.route ?? read.conn?.route ?? null;
      if (counter !== null && counter !== routeId) continue;
      const { carrier, value, why } = a.v;
      classes.push({
        name: className(a.v),
        why: `${carrier.by}${carrier.name ? ` ${carrier.name}` : ''} ${value === null ? 'absent' : JSON.stringify(value)}: ${why}`,
        client: a.v.client,
        read,
        keys: keysOf(row, ctx.columns),
      });
    }
    return { route: ctx.byId.get(routeId), request, classes };
  });
}

/** A class's short name from the input that puts a client in it. */
function className(v) {
  const what = v.carrier.by === 'address' ? 'addr' : (v.carrier.name ?? v.carrier.by);
  const value = v.value === null ? 'absent' : v.value === FREE ? 'any' : String(v.value);
  return `${what}-${value}`
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')
    .slice(0, 24)
    .replace(/-$/, '');
}

/**
 * Round 3: every class's slots, each made its own where it keeps its class, with the keys nginx
 * gives it: [{client, keys: {zone: key}}] on each class.
 */
function slotRound(policy, targets, opts) {
  const asked = [];
  targets.forEach((t, ti) =>
    t.classes.forEach((c, ci) => {
      for (let s = 0; s < SLOTS; s += 1) {
        const client = personal(c.client, ti * 16 + ci, s);
        const req = requestOf(`s${ti}-${ci}-${s}`, t.place, t.host, t.request.path, client, opts.addressHeader);
        asked.push({ t: ti, c: ci, s, client, req });
      }
    }),
  );
  const rows = asked.length
    ? runProbe(
        policy,
        asked.map((a) => a.req),
        opts,
      ).rows
    : {};
  for (const a of asked) {
    const cls = targets[a.t].classes[a.c];
    const row = rows[a.req.id];
    const read = row && readRow(opts.byId, row, opts.columns);
    // A slot that leaves its class keeps the class's own client: it shares that client's keys.
    const keep = read && signature(read) === signature(cls.read);
    (cls.slots ||= []).push(
      keep ? { client: a.client, keys: keysOf(row, opts.columns) } : { client: cls.client, keys: cls.keys },
    );
  }
}

const keysOf = (row, columns) =>
  Object.fromEntries(columns.map((c, i) => [`${c.conn ? 'conn:' : ''}${c.zone}`, row.keys[i]]));
