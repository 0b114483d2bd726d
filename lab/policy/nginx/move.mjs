/*
 * A team's nginx tree with what must move moved, for the lab's run and for its probe alike
 * (render.mjs): the file as written, but
 *   - each place its servers listen on (address and port, or a unix socket) at a place of the
 *     lab's (`listenAt`), with its ssl, http2 and default_server flags; `http2 on;` where the
 *     installed nginx predates it (1.25.1) as the http2 flag of the server's TLS listeners;
 *   - every backend the config passes to (proxy_pass, and fastcgi/uwsgi/scgi_pass, whose
 *     content handler runs after the limiters either way) at the lab's HTTP backend, and every
 *     upstream's servers too;
 *   - the host's certificate at the lab's (cert.mjs), OCSP stapling and the files TLS reads
 *     (trusted certificates, dhparam, ticket keys, CRLs) gone; ACME certificate automation gone;
 *   - files it serves from disk (root, alias) in a folder of the lab's, the caches' paths in the
 *     service's folder, pid, logs and temp paths the lab's own, a resolver gone;
 *   - an error_page that answers a limited request with another status (`=`) keeping the
 *     limiter's status, so that k6 can count it;
 *   - modules loaded from the installed nginx's prefix.
 * Each move that changes what a reader of the file would expect is noted ({at, what}).
 */
import { existsSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';

// Debian's nginx: --prefix, where `load_module modules/x.so` is read from.
export const NGINX_PREFIX = '/usr/share/nginx';

// Directives the lab sets itself (dropped wherever the file has them).
const MOVED = new Set([
  'pid',
  'user',
  'daemon',
  'master_process',
  'error_log',
  'access_log',
  'lock_file',
  'worker_rlimit_nofile',
  'client_body_temp_path',
  'proxy_temp_path',
  'fastcgi_temp_path',
  'uwsgi_temp_path',
  'scgi_temp_path',
]);
// What TLS reads from the host's disk, or fetches from the network: gone, the lab's pair serves.
const TLS_FILES = new Set([
  'ssl_certificate',
  'ssl_certificate_key',
  'ssl_certificate_cache',
  'ssl_trusted_certificate',
  'ssl_client_certificate',
  'ssl_dhparam',
  'ssl_session_ticket_key',
  'ssl_crl',
  'ssl_password_file',
  'ssl_stapling',
  'ssl_stapling_verify',
  'ssl_stapling_file',
  'ssl_stapling_responder',
  'ssl_ocsp',
  'ssl_ocsp_responder',
  'ssl_ocsp_cache',
  'ssl_verify_client',
]);
// Passes to a backend, and which the lab turns into its HTTP backend's proxy_pass.
const PASSES = new Set(['proxy_pass', 'fastcgi_pass', 'uwsgi_pass', 'scgi_pass']);
const NOT_HTTP = new Set(['grpc_pass', 'memcached_pass']);
const CACHE_PATHS = new Set(['proxy_cache_path', 'fastcgi_cache_path', 'uwsgi_cache_path', 'scgi_cache_path']);

export const d = (directive, args = [], block) => ({
  directive,
  args: args.map(String),
  ...(block ? { block } : {}),
});

/** `nginx -v`'s version as [major, minor, patch]. */
const atLeast = (version, [a, b, c]) =>
  version[0] !== a ? version[0] > a : version[1] !== b ? version[1] > b : version[2] >= c;

/** The refusals of a tree for running it: backends the lab cannot stand in for, lua it cannot see into. */
export function refusedToRun(tree) {
  const out = [];
  const walk = (dirs) =>
    dirs.forEach((x) => {
      if (NOT_HTTP.has(x.directive))
        out.push(
          `${x.at}: ${x.directive}: the lab's backend speaks HTTP; a proxy_pass, fastcgi_pass or uwsgi_pass runs`,
        );
      if (/^(content|init|init_worker|balancer|ssl_certificate|log|header_filter|body_filter)_by_lua/.test(x.directive))
        out.push(
          `${x.at}: ${x.directive}: lua code whose network use the lab cannot see (it counts with its own log_by_lua)`,
        );
      if (x.block) walk(x.block);
    });
  walk(tree);
  return out;
}

/** A path the file serves from or writes to, in the lab's folder `base`. */
const within = (base, path) => (isAbsolute(path) ? join(base, path) : join(base, 'relative', path));

/** One listen directive at the lab's place for it. */
function listenMoved(x, ctx, server) {
  const [where, ...flags] = x.args;
  const place = ctx.placeOf(where);
  const at = ctx.listenAt(place);
  if (server.placesDone.has(at)) return [];
  server.placesDone.add(at);
  const keep = flags.filter((f) => ['ssl', 'http2', 'default_server', 'default'].includes(f));
  if (server.http2On && keep.includes('ssl') && !keep.includes('http2')) keep.push('http2');
  return [d('listen', [at, ...keep.map((f) => (f === 'default' ? 'default_server' : f))])];
}

/** A directive moved, or [] where it goes; `where`: {server, location} it stands in. */
function moveOne(x, ctx, where) {
  const note = (what) => ctx.notes.push({ at: x.at, what });
  if (MOVED.has(x.directive)) return [];
  if (x.directive === 'listen') return listenMoved(x, ctx, where.server);
  if (TLS_FILES.has(x.directive)) {
    if (x.directive === 'ssl_certificate')
      note(`${x.directive} ${x.args[0]}: the lab's self-signed certificate in its place`);
    else if (x.directive !== 'ssl_certificate_key' && x.args[0] !== 'off')
      note(`${x.directive} ${x.args.join(' ')}: gone (the lab's self-signed certificate serves, nothing is fetched)`);
    return [];
  }
  if (x.directive.startsWith('acme_')) {
    note(`${x.directive}: gone (the lab's certificate serves; ACME would reach the network)`);
    return [];
  }
  if (x.directive === 'http2' && !ctx.http2Directive) {
    note(
      `http2 ${x.args[0]}: nginx ${ctx.version.join('.')} predates it: the server's TLS listeners get the http2 flag`,
    );
    return [];
  }
  if (x.directive === 'resolver') {
    note(`resolver ${x.args.join(' ')}: gone (every backend is the lab's, by address)`);
    return [];
  }
  if (PASSES.has(x.directive)) {
    if (x.directive !== 'proxy_pass') note(`${x.directive} ${x.args[0]}: the lab's HTTP backend (proxy_pass)`);
    return [d('proxy_pass', [`http://${ctx.backend}`])];
  }
  if (x.directive === 'root' || x.directive === 'alias')
    return [d(x.directive, [within(ctx.www, x.args[0]).replace(/\/?$/, x.args[0].endsWith('/') ? '/' : '')])];
  // In the service's own folder, which is there (nginx makes a cache's folder, not its parents).
  if (CACHE_PATHS.has(x.directive))
    return [d(x.directive, [join(ctx.prefix, `cache_${ctx.caches++}`), ...x.args.slice(1)])];
  if (x.directive === 'load_module') return loadModule(x, ctx, note);
  if (x.directive === 'error_page') return [errorPage(x, ctx, note)];
  if (x.directive === 'upstream') return [upstream(x, ctx)];
  if (x.directive === 'set_real_ip_from' && !/^([\d.:a-f]+(\/\d+)?|unix:)$/i.test(x.args[0])) {
    note(`set_real_ip_from ${x.args[0]}: gone (a name nginx would look up)`);
    return [];
  }
  if (x.directive === 'server') return [serverMoved(x, ctx)];
  if (!x.block) return [d(x.directive, x.args)];
  if (x.directive !== 'location') return [d(x.directive, x.args, moveAll(x.block, ctx, where))];
  // The lab's additions first in each location (render.mjs: the probe's trail, the run's clock).
  return [d('location', x.args, [...ctx.locationExtra(x), ...moveAll(x.block, ctx, { ...where, location: x })])];
}

/** A load_module by the installed nginx's path; one that is not installed is refused, ACME's dropped. */
function loadModule(x, ctx, note) {
  const path = isAbsolute(x.args[0]) ? x.args[0] : join(NGINX_PREFIX, x.args[0]);
  if (existsSync(path)) return [d('load_module', [path])];
  if (/acme/.test(path)) {
    note(`load_module ${x.args[0]}: gone (the lab's certificate serves)`);
    return [];
  }
  ctx.refused.push(`${x.at}: load_module ${x.args[0]}: ${path} is not installed here`);
  return [];
}

/** An error_page that would answer a limiter's status with another one (`=`) keeps the limiter's. */
function errorPage(x, ctx, note) {
  const codes = x.args.filter((a) => /^\d{3}$/.test(a)).map(Number);
  const eq = x.args.find((a) => a.startsWith('='));
  if (!eq || !codes.some((c) => ctx.limitStatuses.has(c))) return d('error_page', x.args);
  note(
    `error_page ${x.args.join(' ')}: a limited request keeps its ${codes.filter((c) => ctx.limitStatuses.has(c)).join(', ')} (as written, it would answer ${eq === '=' ? "with the page's status" : eq.slice(1)}, which k6 could not tell from a passed one)`,
  );
  return d(
    'error_page',
    x.args.filter((a) => a !== eq),
  );
}

/** An upstream whose servers are the lab's backend. */
function upstream(x, ctx) {
  const servers = x.block.filter((y) => y.directive === 'server');
  return d(
    'upstream',
    x.args,
    x.block.flatMap((y) => {
      if (y.directive !== 'server') return y.directive === 'resolver' ? [] : [d(y.directive, y.args)];
      // One server per upstream: several at one address would be one peer counted twice.
      if (y !== servers[0]) return [];
      return [
        d('server', [ctx.backend, ...y.args.slice(1).filter((a) => /^(weight|max_fails|fail_timeout)=/.test(a))]),
      ];
    }),
  );
}

/** One server: its listeners at the lab's places, the lab's additions (`ctx.serverExtra`) first. */
function serverMoved(x, ctx) {
  const server = {
    placesDone: new Set(),
    http2On:
      !ctx.http2Directive && (x.block.some((y) => y.directive === 'http2' && y.args[0] === 'on') || ctx.http2OnAll),
  };
  const body = moveAll(x.block, ctx, { server, location: null });
  if (!x.block.some((y) => y.directive === 'listen')) body.unshift(...listenMoved(d('listen', ['80']), ctx, server));
  return d('server', [], [...ctx.serverExtra(x), ...body]);
}

const moveAll = (dirs, ctx, where) => dirs.flatMap((x) => moveOne(x, ctx, where));

/**
 * The tree moved: `ctx` {listenAt(place) -> 'address:port' or 'unix:path', backend, prefix, www,
 * version ([1, 22, 1]), limitStatuses (Set), serverExtra(server) and locationExtra(location) ->
 * directives put first in them}. Returns {tree, notes, refused}.
 */
export function moveTree(tree, ctx) {
  const http = tree.find((x) => x.directive === 'http');
  const full = {
    ...ctx,
    notes: [],
    refused: [],
    caches: 0,
    placeOf: placeOf,
    http2Directive: atLeast(ctx.version, [1, 25, 1]),
    http2OnAll: Boolean(http?.block.some((y) => y.directive === 'http2' && y.args[0] === 'on')),
  };
  const moved = tree.flatMap((x) => moveOne(x, full, { server: null, location: null }));
  return { tree: moved, notes: full.notes, refused: full.refused };
}

/** Where a listen's first argument listens, as the lab tells places apart: an address and a port, or a socket. */
export function placeOf(where) {
  if (where.startsWith('unix:')) return where;
  const m = /^(?:(\[[^\]]+\]|[^:]+):)?(\d+)$/.exec(where);
  if (!m) return `*:${/^\d+$/.test(where) ? where : 80}`;
  const addr = !m[1] || m[1] === '*' || m[1] === '0.0.0.0' || m[1].startsWith('[') ? '*' : m[1];
  return `${addr}:${m[2]}`;
}
