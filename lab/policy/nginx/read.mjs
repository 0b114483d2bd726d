/*
 * A team's nginx config, read as the model needs it, from its directive tree (tree.mjs): every
 * limit_req_zone and limit_conn_zone, every server with its listeners, and every location
 * (nested and named ones too) with the limits it meets as nginx's inheritance gives them: its
 * limit_req (inherited only by a level that has none of its own), limit_req_status and dry run,
 * its limit_conn likewise, the error pages it sends statuses to, its try_files. Which location a
 * request reaches, and which key it has in each zone, are nginx's to say (probe.mjs); this reads
 * what the file states, each figure with its file:line. What the model cannot read is refused
 * before anything starts, naming the construct and its file:line.
 */
import { placeOf } from './move.mjs';

/** limit_req_zone / limit_conn_zone KEY zone=NAME:SIZE [rate=Nr/s|Nr/m]: as the modules store them. */
function zoneOf(d, conn) {
  const zone = d.args.map((a) => /^zone=([^:]+):(\d+[kKmM]?)$/.exec(a)).find(Boolean);
  if (!zone) throw new Error(`${d.at}: ${d.directive} ${d.args.join(' ')}: needs zone=NAME:SIZE`);
  if (d.args.includes('sync'))
    throw new Error(`${d.at}: ${d.directive} ... sync (nginx Plus, zones shared across a cluster): not modelled`);
  if (conn) return { name: zone[1], key: d.args[0], at: d.at };
  const rate = d.args.map((a) => /^rate=(\d+)r\/([sm])$/.exec(a)).find(Boolean);
  if (!rate) throw new Error(`${d.at}: limit_req_zone ${d.args.join(' ')}: needs rate=Nr/s or Nr/m`);
  const n = Number(rate[1]);
  // nginx keeps the rate in milli-requests per second, by integer division (10r/m is 166).
  return {
    name: zone[1],
    key: d.args[0],
    rate: `${n}r/${rate[2]}`,
    perUnit: n,
    unit: rate[2],
    rateMilli: Math.floor((n * 1000) / (rate[2] === 'm' ? 60 : 1)),
    at: d.at,
  };
}

/** limit_req zone=NAME [burst=N] [nodelay | delay=N]: delay in requests, Infinity for nodelay. */
function limitOf(d, zones) {
  const arg = (k) => d.args.map((a) => new RegExp(`^${k}=(.+)$`).exec(a)?.[1]).find((v) => v !== undefined);
  const zone = arg('zone');
  if (!zones[zone]) throw new Error(`${d.at}: limit_req zone=${zone}: no limit_req_zone named ${zone}`);
  const burst = Number(arg('burst') ?? 0);
  const nodelay = d.args.includes('nodelay');
  const delay = nodelay ? Infinity : Number(arg('delay') ?? 0);
  if (!Number.isInteger(burst) || !(nodelay || Number.isInteger(delay)))
    throw new Error(`${d.at}: limit_req ${d.args.join(' ')}: burst and delay are whole numbers`);
  return { zone, burst, delay, nodelay, at: d.at };
}

/** limit_conn NAME N. */
function connOf(d, connZones) {
  const [zone, n] = d.args;
  if (!connZones[zone]) throw new Error(`${d.at}: limit_conn ${zone}: no limit_conn_zone named ${zone}`);
  if (!/^\d+$/.test(n ?? '')) throw new Error(`${d.at}: limit_conn ${d.args.join(' ')}: a whole number of connections`);
  return { zone, conn: Number(n), at: d.at };
}

// Constructs the model cannot read: refused, naming where they are, and what would make it runnable.
const REFUSED = {
  access_by_lua: 'a lua limiter in the access phase: not modelled (a limit_req or limit_conn is)',
  access_by_lua_block: 'a lua limiter in the access phase: not modelled (a limit_req or limit_conn is)',
  access_by_lua_file: 'a lua limiter in the access phase: not modelled (a limit_req or limit_conn is)',
  rewrite_by_lua_block: 'lua in the rewrite phase, before the limiter: not modelled',
  rewrite_by_lua_file: 'lua in the rewrite phase, before the limiter: not modelled',
  js_set: 'a variable computed by njs: the installed nginx has no njs module (Debian: libnginx-mod-http-js)',
  modsecurity: 'ModSecurity before the limiter: not installed here (Debian: libnginx-mod-http-modsecurity)',
};

/** Every refused construct in a tree, and listeners the lab cannot speak to. */
function refusals(tree) {
  const out = [];
  const walk = (dirs) => {
    for (const d of dirs) {
      if (REFUSED[d.directive]) out.push(`${d.at}: ${d.directive}: ${REFUSED[d.directive]}`);
      if (d.directive === 'listen' && d.args.some((a) => a === 'quic' || a === 'proxy_protocol'))
        out.push(
          `${d.at}: listen ${d.args.join(' ')}: k6 speaks neither QUIC nor the PROXY protocol: a listener without them runs`,
        );
      if (d.directive === 'real_ip_header' && d.args[0] === 'proxy_protocol')
        out.push(`${d.at}: real_ip_header proxy_protocol: k6 cannot send the PROXY protocol`);
      if (d.directive === 'ssl_verify_client' && d.args[0] !== 'off')
        out.push(`${d.at}: ssl_verify_client ${d.args[0]}: client certificates are not sent by the lab`);
      if (d.block) walk(d.block);
    }
  };
  walk(tree);
  return out;
}

/** error_page CODE... [=[RESPONSE]] URI|@name, as nginx stores it. */
const errorPageOf = (d) => {
  const target = d.args[d.args.length - 1];
  const eq = d.args.find((a) => a.startsWith('='));
  return { codes: d.args.filter((a) => /^\d{3}$/.test(a)).map(Number), equals: eq ?? null, target, at: d.at };
};

/** A level's own limit settings, merged over its parent's as nginx merges them. */
function level(dirs, parent, zones, name) {
  const own = dirs.filter((d) => d.directive === 'limit_req').map((d) => limitOf(d, zones.req));
  const conns = dirs.filter((d) => d.directive === 'limit_conn').map((d) => connOf(d, zones.conn));
  const one = (directive) => dirs.find((d) => d.directive === directive);
  const setting = (directive, read, inherited) => {
    const d = one(directive);
    return d ? { ...read(d), at: d.at } : inherited;
  };
  const errorPages = dirs.filter((d) => d.directive === 'error_page').map(errorPageOf);
  return {
    levelName: name,
    // limit_req (and limit_conn) is inherited only by a level that has none of its own.
    limits: own.length ? own : parent.limits,
    limitsFrom: own.length ? 'own' : parent.limitsFrom === 'own' ? parent.levelName : parent.limitsFrom,
    status: setting('limit_req_status', (d) => ({ code: Number(d.args[0]) }), parent.status),
    dryRun: setting('limit_req_dry_run', (d) => ({ on: d.args[0] === 'on' }), parent.dryRun),
    conns: conns.length ? conns : parent.conns,
    connsFrom: conns.length ? 'own' : parent.connsFrom === 'own' ? parent.levelName : parent.connsFrom,
    connStatus: setting('limit_conn_status', (d) => ({ code: Number(d.args[0]) }), parent.connStatus),
    connDryRun: setting('limit_conn_dry_run', (d) => ({ on: d.args[0] === 'on' }), parent.connDryRun),
    // error_page is inherited, too, only by a level with none of its own.
    errorPages: errorPages.length ? errorPages : parent.errorPages,
  };
}

/** A `return` among a level's own directives answers in the rewrite phase, before any limit. */
const returnOf = (dirs) =>
  dirs.filter((d) => d.directive === 'return').map((d) => ({ code: Number(d.args[0]) || 302, at: d.at }))[0] ?? null;

/** One listen directive: its address and port, and its flags. */
function listenOf(d) {
  const [where, ...flags] = d.args;
  return {
    // Where clients reach it: the lab gives each such place a port of its own (render.mjs).
    place: placeOf(where),
    where,
    ssl: flags.includes('ssl'),
    http2: flags.includes('http2'),
    defaultServer: flags.includes('default_server') || flags.includes('default'),
    at: d.at,
  };
}

/** A location's match: {modifier ('=', '^~', '~', '~*', '@' or '' for a prefix), pattern}. */
function matchOf(args) {
  if (args.length === 2) return { modifier: args[0], pattern: args[1] };
  if (args[0].startsWith('@')) return { modifier: '@', pattern: args[0] };
  const m = /^(=|\^~|~\*|~)(.+)$/.exec(args[0]);
  return m ? { modifier: m[1], pattern: m[2] } : { modifier: '', pattern: args[0] };
}

/** The routes of one server: its locations (nested and named ones too), each with what it meets. */
function serverRoutes(server, httpLevel, zones, index) {
  const listens = server.block.filter((d) => d.directive === 'listen').map(listenOf);
  const names = server.block.filter((d) => d.directive === 'server_name').flatMap((d) => d.args);
  const srv = { ...level(server.block, httpLevel, zones, 'server') };
  const serverInfo = {
    at: server.at,
    names,
    listens: listens.length
      ? listens
      : [{ place: '*:80', where: '80', ssl: false, http2: false, defaultServer: false }],
    http2On: server.block.some((d) => d.directive === 'http2' && d.args[0] === 'on'),
  };
  const routes = [];
  const walk = (dirs, parent, prefix) => {
    for (const loc of dirs.filter((d) => d.directive === 'location')) {
      const lv = level(loc.block, parent, zones, 'location');
      const label = `${prefix}${loc.args.join(' ')}`;
      // The tree's location knows its route, so that a moved copy of the tree (move.mjs) does too.
      loc.routeId = index.next;
      routes.push({
        id: index.next++,
        server: serverInfo,
        location: label,
        match: matchOf(loc.args),
        at: loc.at,
        ...lv,
        answeredBefore: returnOf(server.block) ?? returnOf(loc.block),
        tryFiles: loc.block.find((d) => d.directive === 'try_files')?.args ?? null,
      });
      walk(loc.block, lv, `${label} > `);
    }
  };
  walk(server.block, srv, '');
  if (!routes.length)
    routes.push({
      id: index.next++,
      server: serverInfo,
      location: '(every request)',
      match: { modifier: 'server', pattern: '/' },
      at: server.at,
      ...srv,
      answeredBefore: returnOf(server.block),
      tryFiles: null,
    });
  return routes;
}

/**
 * The model's reading of a directive tree: {zones, connZones, routes, maps}. Throws, naming every
 * construct and its file:line, when the model cannot read it, or when nothing is limited.
 */
export function readNginx(file, tree) {
  const refused = refusals(tree);
  if (refused.length) throw new Error(`${file}: the lab cannot model:\n  ${refused.join('\n  ')}`);
  const http = tree.find((d) => d.directive === 'http');
  if (!http) throw new Error(`${file}: no http block`);
  const named = (directive, conn) =>
    Object.fromEntries(
      http.block
        .filter((d) => d.directive === directive)
        .map((d) => zoneOf(d, conn))
        .map((z) => [z.name, z]),
    );
  const zones = { req: named('limit_req_zone', false), conn: named('limit_conn_zone', true) };
  const root = {
    limits: null,
    limitsFrom: null,
    status: { code: 503, at: '(nginx default)' },
    dryRun: { on: false, at: '(nginx default)' },
    conns: null,
    connsFrom: null,
    connStatus: { code: 503, at: '(nginx default)' },
    connDryRun: { on: false, at: '(nginx default)' },
    errorPages: [],
  };
  const httpLevel = level(http.block, root, zones, 'http');
  const index = { next: 0 };
  const routes = http.block
    .filter((d) => d.directive === 'server')
    .flatMap((s) => serverRoutes(s, httpLevel, zones, index));
  if (!routes.some((r) => (r.limits?.length || r.conns?.length) && !r.answeredBefore))
    throw new Error(
      `${file}: no location meets a limit_req or limit_conn: nothing for the lab to model (zones: ${Object.keys({ ...zones.req, ...zones.conn }).join(', ') || 'none'})`,
    );
  return { zones: zones.req, connZones: zones.conn, routes, http };
}
