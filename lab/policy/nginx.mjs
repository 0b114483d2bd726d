/*
 * A team's nginx.conf, read as the model needs it: every limit_req_zone, and every location
 * (route) with the limit_req it meets, as nginx's configuration inheritance gives it, the
 * status it limits with, whether it is a dry run, and whether a `return` answers before the
 * limiter ever sees the request. Each figure keeps where it came from (file:line).
 *
 * The directive tree is crossplane's (the pinned PyPI package, lab/requirements.txt), one file
 * at a time: an include is followed here, and only inside the config's own folder, so that the
 * lab reads nothing the user did not point it at. What the model cannot read is refused before
 * anything starts, naming the construct and its file:line.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';

// crossplane's own parse (its library: the command line cannot skip the context check that an
// included file, read on its own, fails: its directives belong where the include stands).
const PARSE =
  'import crossplane, json, sys; print(json.dumps(crossplane.parse(sys.argv[1], single=True, check_ctx=sys.argv[2] == "1")))';

/** One file's directive tree by crossplane, without following its includes. */
function parseOne(python, file, checkCtx) {
  let out;
  try {
    out = execFileSync(python, ['-c', PARSE, file, checkCtx ? '1' : '0'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (e) {
    throw new Error(
      `crossplane could not read ${file}: ${String(e.stderr || e.message)
        .trim()
        .split('\n')
        .pop()}`,
      { cause: e },
    );
  }
  const parsed = JSON.parse(out);
  const errors = parsed.config.flatMap((c) => c.errors.map((x) => ({ ...x, file: x.file ?? c.file })));
  // crossplane words them as nginx does, most with the file:line at their end.
  if (errors.length)
    throw new Error(
      errors.map((x) => (x.error.includes(`${x.file}:`) ? x.error : `${x.file}:${x.line}: ${x.error}`)).join('\n'),
    );
  return parsed.config[0].parsed;
}

/** The files an include names: a path, or a `*` in its last part, relative to the config's folder. */
function includedFiles(pattern, folder, at) {
  const path = isAbsolute(pattern) ? pattern : join(folder, pattern);
  if (/[?[\]{}]/.test(path) || dirname(path).includes('*'))
    throw new Error(`${at}: include ${pattern}: only a '*' in the file name is read`);
  if (!basename(path).includes('*')) return [path];
  const re = new RegExp(
    `^${basename(path)
      .split('*')
      .map((p) => p.replace(/[.+^$()|\\]/g, '\\$&'))
      .join('.*')}$`,
  );
  const dir = dirname(path);
  return existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => re.test(f))
        .sort()
        .map((f) => join(dir, f))
    : [];
}

/** Is `file` inside `folder` (both resolved, symlinks too)? */
const inside = (folder, file) => {
  const rel = relative(realpathSync(folder), realpathSync(file));
  return rel && !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel);
};

/**
 * The whole tree of `file` with its includes spliced in, each directive with its `at`
 * (file:line, the file relative to the config's folder). An include outside the folder, or of a
 * file that is not there, is an error naming it.
 */
export function readTree(file, { python }) {
  const folder = dirname(resolve(file));
  const walk = (path, seen) => {
    const name = relative(folder, path) || basename(path);
    const splice = (dirs) =>
      dirs.flatMap((d) => {
        const at = `${name}:${d.line}`;
        if (d.directive === 'include') {
          const files = includedFiles(d.args[0], folder, at);
          for (const f of files) {
            if (!existsSync(f)) throw new Error(`${at}: include ${d.args[0]}: ${f} is not there`);
            if (!inside(folder, f))
              throw new Error(
                `${at}: include ${d.args[0]} is outside the config's folder (${folder}): the lab reads only what it was pointed at`,
              );
            if (seen.includes(f)) throw new Error(`${at}: include ${d.args[0]} includes itself`);
          }
          return files.flatMap((f) => walk(f, [...seen, f]));
        }
        return [{ directive: d.directive, args: d.args, at, ...(d.block ? { block: splice(d.block) } : {}) }];
      });
    return splice(parseOne(python, path, seen.length === 1));
  };
  return walk(resolve(file), [resolve(file)]);
}

// What the model reads of a limit_req_zone's key: who shares a bucket.
const CLIENT_KEYS = ['$binary_remote_addr', '$remote_addr'];

/** Who shares one bucket of a zone, from its key: {kind, name?}; a key it cannot tell is refused. */
function keyOf(key, at, defined) {
  if (CLIENT_KEYS.includes(key)) return { kind: 'client' };
  if (/^\$http_[a-z0-9_]+$/.test(key)) return { kind: 'header', name: key.slice(6).replace(/_/g, '-') };
  if (/^\$arg_[A-Za-z0-9_]+$/.test(key)) return { kind: 'argument', name: key.slice(5) };
  if (key === '$server_name') return { kind: 'server' };
  if (!key.includes('$')) return { kind: 'constant' };
  const variable = /^\$([A-Za-z0-9_]+)$/.exec(key)?.[1];
  if (variable && defined[variable])
    throw new Error(
      `${at}: limit_req_zone key ${key} comes from ${defined[variable].directive} at ${defined[variable].at}: the model cannot tell which requests share its buckets`,
    );
  throw new Error(
    `${at}: limit_req_zone key ${key}: the model reads a client address, a header ($http_*), an argument ($arg_*), $server_name or a constant`,
  );
}

/** limit_req_zone KEY zone=NAME:SIZE rate=Nr/s|Nr/m, as ngx_http_limit_req_module.c stores it. */
function zoneOf(d, defined) {
  const zone = d.args.map((a) => /^zone=([^:]+):(\d+[kKmM]?)$/.exec(a)).find(Boolean);
  const rate = d.args.map((a) => /^rate=(\d+)r\/([sm])$/.exec(a)).find(Boolean);
  if (!zone || !rate)
    throw new Error(`${d.at}: limit_req_zone ${d.args.join(' ')}: needs zone=NAME:SIZE and rate=Nr/s or Nr/m`);
  if (d.args.includes('sync'))
    throw new Error(`${d.at}: limit_req_zone ... sync (nginx Plus, zones shared across a cluster): not modelled`);
  const n = Number(rate[1]);
  const scale = rate[2] === 'm' ? 60 : 1;
  // nginx keeps the rate in milli-requests per second, by integer division (10r/m is 166).
  return {
    name: zone[1],
    key: d.args[0],
    who: keyOf(d.args[0], d.at, defined),
    rate: `${n}r/${rate[2]}`,
    perUnit: n,
    unit: rate[2],
    rateMilli: Math.floor((n * 1000) / scale),
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

// Constructs the model cannot read: refused, naming where they are.
const REFUSED = {
  limit_conn: 'a connection limit (limit_conn) beside the request limit: not modelled',
  limit_conn_zone: 'a connection limit (limit_conn) beside the request limit: not modelled',
  access_by_lua: 'a lua limiter in the access phase: not modelled',
  access_by_lua_block: 'a lua limiter in the access phase: not modelled',
  access_by_lua_file: 'a lua limiter in the access phase: not modelled',
  rewrite_by_lua_block: 'lua in the rewrite phase, before the limiter: not modelled',
  rewrite_by_lua_file: 'lua in the rewrite phase, before the limiter: not modelled',
  http2: 'an http2 listener: k6 and the lab speak HTTP/1.1 to it',
};

/** Every refused construct in a tree, and every listener with ssl or http2. */
function refusals(tree) {
  const out = [];
  const walk = (dirs) => {
    for (const d of dirs) {
      if (REFUSED[d.directive]) out.push(`${d.at}: ${d.directive}: ${REFUSED[d.directive]}`);
      if (d.directive === 'listen' && d.args.some((a) => a === 'ssl' || a === 'http2' || a === 'quic'))
        out.push(`${d.at}: listen ${d.args.join(' ')}: a TLS or HTTP/2 listener: the lab sends plain HTTP/1.1`);
      if (d.block) walk(d.block);
    }
  };
  walk(tree);
  return out;
}

/** A level's own limit_req settings, merged over its parent's as nginx merges them. */
function level(dirs, parent, zones) {
  const own = dirs.filter((d) => d.directive === 'limit_req').map((d) => limitOf(d, zones));
  const status = dirs.find((d) => d.directive === 'limit_req_status');
  const dry = dirs.find((d) => d.directive === 'limit_req_dry_run');
  return {
    // limit_req is inherited only by a level that has none of its own.
    limits: own.length ? own : parent.limits,
    limitsFrom: own.length ? 'own' : parent.limitsFrom === 'own' ? parent.levelName : parent.limitsFrom,
    status: status ? { code: Number(status.args[0]), at: status.at } : parent.status,
    dryRun: dry ? { on: dry.args[0] === 'on', at: dry.at } : parent.dryRun,
  };
}

/** A `return` among a level's own directives answers in the rewrite phase, before limit_req. */
const returnOf = (dirs) =>
  dirs.filter((d) => d.directive === 'return').map((d) => ({ code: Number(d.args[0]) || 302, at: d.at }))[0] ?? null;

/** The routes of one server: its locations (nested ones too), each with what it meets. */
function serverRoutes(server, httpLevel, zones) {
  const listen = server.block.filter((d) => d.directive === 'listen').map((d) => d.args[0]);
  const names = server.block.filter((d) => d.directive === 'server_name').flatMap((d) => d.args);
  const srv = { ...level(server.block, httpLevel, zones), levelName: 'server' };
  const serverReturn = returnOf(server.block);
  const routes = [];
  const walk = (dirs, parent, prefix) => {
    const locations = dirs.filter((d) => d.directive === 'location');
    for (const loc of locations) {
      const lv = { ...level(loc.block, parent, zones), levelName: 'location' };
      const conditional = loc.block.find((d) => d.directive === 'if');
      if (conditional && lv.limits?.length)
        throw new Error(
          `${conditional.at}: if (${conditional.args.join(' ')}) in a limited location: which requests it changes is not modelled`,
        );
      routes.push({
        server: { listen, names, at: server.at },
        location: `${prefix}${loc.args.join(' ')}`,
        at: loc.at,
        ...lv,
        answeredBefore: serverReturn ?? returnOf(loc.block),
      });
      walk(loc.block, lv, `${prefix}${loc.args.join(' ')} > `);
    }
  };
  walk(server.block, srv, '');
  if (!routes.length)
    routes.push({
      server: { listen, names, at: server.at },
      location: '(every request)',
      at: server.at,
      ...srv,
      answeredBefore: serverReturn,
    });
  return routes;
}

/** Variables a map or geo block defines ({name: {directive, at}}): a key made of one is refused. */
const definedByBlocks = (http) =>
  Object.fromEntries(
    http.block
      .filter((d) => d.directive === 'map' || d.directive === 'geo')
      .map((d) => [d.args[d.args.length - 1].replace(/^\$/, ''), { directive: d.directive, at: d.at }]),
  );

/**
 * The policy of an nginx config, as the model reads it: {proxy, zones, routes}. Throws, naming
 * every construct and its file:line, when the model cannot read it, or when nothing is limited.
 */
export function nginxPolicy(file, tools) {
  const tree = readTree(file, tools);
  const refused = refusals(tree);
  if (refused.length) throw new Error(`${file}: the lab cannot model:\n  ${refused.join('\n  ')}`);
  const http = tree.find((d) => d.directive === 'http');
  if (!http) throw new Error(`${file}: no http block`);
  const defined = definedByBlocks(http);
  const zones = Object.fromEntries(
    http.block
      .filter((d) => d.directive === 'limit_req_zone')
      .map((d) => zoneOf(d, defined))
      .map((z) => [z.name, z]),
  );
  const httpLevel = {
    ...level(
      http.block,
      {
        limits: null,
        limitsFrom: null,
        status: { code: 503, at: '(nginx default)' },
        dryRun: { on: false, at: '(nginx default)' },
      },
      zones,
    ),
    levelName: 'http',
  };
  const servers = http.block.filter((d) => d.directive === 'server');
  // The server a request with no name of its own meets: the default_server, else the first.
  const fallback =
    servers.find((s) => s.block.some((d) => d.directive === 'listen' && d.args.includes('default_server'))) ??
    servers[0];
  const routes = servers.flatMap((s) =>
    serverRoutes(s, httpLevel, zones).map((r) => ({ ...r, server: { ...r.server, isDefault: s === fallback } })),
  );
  if (!routes.some((r) => r.limits?.length && !r.answeredBefore))
    throw new Error(
      `${file}: no location meets a limit_req: nothing for the lab to model (zones: ${Object.keys(zones).join(', ') || 'none'})`,
    );
  // What the file says of itself, for its name (lab/policy/name.mjs): the limited servers' names first.
  const says = [...routes.filter((r) => r.limits?.length), ...routes].flatMap((r) =>
    r.server.names.map((n) => ({ name: n, what: 'server name', at: r.server.at })),
  );
  return { proxy: 'nginx', file, zones, routes, tree, says };
}
