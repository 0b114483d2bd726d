/*
 * A team's nginx.conf as the lab runs it: the file as written, its includes spliced in, with only
 * what must move moved, and what the lab needs to watch it added:
 *   - every server listens on the lab's port on 127.0.0.1 (servers are told apart by name);
 *   - upstream servers, and a proxy_pass to an address, go to the lab's backend;
 *   - pid, logs and temp paths go into the service's folder in the run;
 *   - a zone keyed by the client address is keyed by the case (x-lab-case), so that each case is
 *     one client, as the plan models it (k6 sends every request from 127.0.0.1);
 *   - the lab's counters (stacks/lib/lab_metrics.lua, served on a port of their own), its limiter
 *     clock in each limited location (lab_clock.lua: when the limiter saw each request), and a
 *     `location = /healthz` answered by `return` (before limit_req) where a server has none.
 * The tree is edited here and written by crossplane's build (the pinned PyPI package), which
 * quotes arguments as nginx reads them. What cannot be moved is refused, naming its file:line.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

const BUILD =
  'import crossplane, json, sys; sys.stdout.write(crossplane.build(json.load(sys.stdin), indent=4) + "\\n")';

// Directives the lab sets itself (dropped wherever the file has them).
const MOVED = new Set([
  'pid',
  'user',
  'daemon',
  'master_process',
  'error_log',
  'access_log',
  'client_body_temp_path',
  'proxy_temp_path',
  'fastcgi_temp_path',
  'uwsgi_temp_path',
  'scgi_temp_path',
]);
// Passes to a backend that is not HTTP: the lab's backend speaks HTTP/1.1 only.
const NOT_HTTP = ['fastcgi_pass', 'uwsgi_pass', 'scgi_pass', 'grpc_pass', 'memcached_pass'];
const LUA_MODULES = ['/usr/lib/nginx/modules/ndk_http_module.so', '/usr/lib/nginx/modules/ngx_http_lua_module.so'];
const CLIENT_KEY = '$lab_client';

const d = (directive, args = [], block) => ({ directive, args: args.map(String), ...(block ? { block } : {}) });

/**
 * A limit_req's arguments with its knobs' values: zone, burst, then nodelay or delay=N. A burst or
 * delay of 0 is left out, as nginx reads its absence: it refuses `burst=0` ("invalid burst value").
 */
const limitArgs = (args, v) => [
  args.find((a) => a.startsWith('zone=')),
  ...(v.burst ? [`burst=${v.burst}`] : []),
  ...(v.mode === 'nodelay' ? ['nodelay'] : v.delay ? [`delay=${v.delay}`] : []),
];

/** The tree with each knob's value put where it stands (`placed`: [{at, param, unit, value}]). */
function withNumbers(tree, placed) {
  const at = new Map();
  for (const p of placed)
    at.set(p.at, { ...at.get(p.at), [p.param]: p.param === 'rate' ? `${p.value}r/${p.unit}` : p.value });
  const edit = (dirs) =>
    dirs.map((x) => {
      const v = at.get(x.at);
      if (v && x.directive === 'limit_req_zone')
        return { ...x, args: x.args.map((a) => (a.startsWith('rate=') ? `rate=${v.rate}` : a)) };
      if (v && x.directive === 'limit_req') return { ...x, args: limitArgs(x.args, v) };
      if (v && x.directive === 'limit_req_dry_run') return { ...x, args: [v.dry_run] };
      return x.block ? { ...x, block: edit(x.block) } : x;
    });
  return edit(tree);
}

/** The refusals of a tree for running it: what the lab cannot point at its backend. */
function refusedToRun(tree) {
  const out = [];
  const walk = (dirs) =>
    dirs.forEach((x) => {
      if (NOT_HTTP.includes(x.directive)) out.push(`${x.at}: ${x.directive}: the lab's backend speaks HTTP only`);
      if (/^log_by_lua/.test(x.directive))
        out.push(`${x.at}: ${x.directive}: the lab counts every request with its own log_by_lua`);
      if (x.directive === 'proxy_pass' && x.args[0].startsWith('https:'))
        out.push(`${x.at}: proxy_pass ${x.args[0]}: the lab's backend speaks plain HTTP`);
      if (x.directive === 'proxy_pass' && x.args[0].includes('$'))
        out.push(
          `${x.at}: proxy_pass ${x.args[0]}: an address from variables needs a resolver, which the lab does not run`,
        );
      if (x.block) walk(x.block);
    });
  walk(tree);
  return out;
}

/** proxy_pass to an address (not an upstream of the file) goes to the backend, with its URI part kept. */
function passTo(args, upstreams, backend) {
  const m = /^http:\/\/([^/]+)(.*)$/.exec(args[0]);
  if (!m) return args;
  return upstreams.has(m[1]) ? args : [`http://${backend}${m[2]}`];
}

/** The lab's additions to a limited location: its limiter clock, and the sightings log. */
const watched = (prefix) => [
  d('rewrite_by_lua_block', [' require("lab_clock").stamp() ']),
  d('access_log', [join(prefix, 'seen.log'), 'lab_seen', 'buffer=64k', 'flush=1s']),
];

/** One server's directives, moved: its listens to the lab's port, its limited locations watched. */
function serverBlock(dirs, ctx, isDefault) {
  const edit = (block, inLocation) =>
    block.flatMap((x) => {
      if (MOVED.has(x.directive) || x.directive === 'listen') return [];
      if (x.directive === 'proxy_pass') return [d('proxy_pass', passTo(x.args, ctx.upstreams, ctx.backend))];
      if (x.directive === 'location') {
        const body = edit(x.block, true);
        return [d('location', x.args, ctx.watchedAt.has(x.at) ? [...watched(ctx.prefix), ...body] : body)];
      }
      return [x.block ? d(x.directive, x.args, edit(x.block, inLocation)) : d(x.directive, x.args)];
    });
  const hasHealth = dirs.some((x) => x.directive === 'location' && x.args.join(' ') === '= /healthz');
  return [
    d('listen', [`127.0.0.1:${ctx.port}`, ...(isDefault ? ['default_server'] : [])]),
    d('set', ['$lab_clock', '-']),
    // The lab's readiness check, answered in the rewrite phase: no limiter's budget is spent.
    ...(hasHealth ? [] : [d('location', ['=', '/healthz'], [d('return', ['200', 'ok\n'])])]),
    ...edit(dirs, false),
  ];
}

/** The lab's own server: its counters, on a port of their own, and its readiness. */
const labServer = (ctx) =>
  d(
    'server',
    [],
    [
      d('listen', [`127.0.0.1:${ctx.metricsPort}`]),
      d('location', ['=', '/metrics'], [d('content_by_lua_block', [' require("lab_metrics").serve() '])]),
      d('location', ['=', '/healthz'], [d('return', ['200', 'ok\n'])]),
    ],
  );

/** The http block, moved and watched. */
function httpBlock(http, ctx) {
  const servers = http.block.filter((x) => x.directive === 'server');
  const defaultAt = (
    servers.find((s) => s.block.some((x) => x.directive === 'listen' && x.args.includes('default_server'))) ??
    servers[0]
  ).at;
  const body = http.block.flatMap((x) => {
    if (MOVED.has(x.directive)) return [];
    if (x.directive === 'server') return [d('server', [], serverBlock(x.block, ctx, x.at === defaultAt))];
    if (x.directive === 'upstream')
      return [
        d(
          'upstream',
          x.args,
          x.block.map((y) =>
            y.directive === 'server'
              ? d('server', [ctx.backend, ...y.args.slice(1).filter((a) => a !== 'resolve')])
              : d(y.directive, y.args),
          ),
        ),
      ];
    if (x.directive === 'limit_req_zone' && ctx.clientZones.has(x.at))
      return [d('limit_req_zone', [CLIENT_KEY, ...x.args.slice(1)])];
    return [x];
  });
  return d(
    'http',
    [],
    [
      d('access_log', ['off']),
      ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) =>
        d(`${t}_temp_path`, [join(ctx.prefix, `${t}_temp`)]),
      ),
      d('lua_package_path', [`${ctx.root}/stacks/lib/?.lua;/usr/share/lua/5.1/?.lua;;`]),
      d('lua_shared_dict', ['lab_metrics', '4m']),
      d('log_by_lua_block', [' require("lab_metrics").log() ']),
      d('log_format', ['lab_seen', '$http_x_lab_case $lab_clock $msec $request_time']),
      // Each case one client: its own key where the file keys by the client's address.
      ...(ctx.clientZones.size
        ? [
            d(
              'map',
              ['$http_x_lab_case', CLIENT_KEY],
              [d('', ['$binary_remote_addr']), d('default', ['$http_x_lab_case'])],
            ),
          ]
        : []),
      ...body,
      labServer(ctx),
    ],
  );
}

/**
 * The config text the lab runs for `policy` (lab/policy/nginx.mjs: its tree and routes):
 * `port` the lab's listener, `metricsPort` its counters', `backend` the lab backend's
 * host:port, `prefix` the service's folder, `root` the repository (for the lab's lua modules),
 * `python` crossplane's, `placed` the knobs' values where they stand (lab/policy/experiment.mjs).
 */
export function renderNginx(policy, { port, metricsPort, backend, prefix, root, python, placed = [] }) {
  const refused = refusedToRun(policy.tree);
  if (refused.length) throw new Error(`${policy.file}: the lab cannot run:\n  ${refused.join('\n  ')}`);
  const ctx = {
    port,
    metricsPort,
    backend,
    prefix,
    root,
    upstreams: new Set(
      policy.tree
        .find((x) => x.directive === 'http')
        .block.filter((x) => x.directive === 'upstream')
        .map((x) => x.args[0]),
    ),
    clientZones: new Set(
      Object.values(policy.zones)
        .filter((z) => z.who.kind === 'client')
        .map((z) => z.at),
    ),
    watchedAt: new Set(policy.routes.filter((r) => r.limits?.length && !r.answeredBefore).map((r) => r.at)),
  };
  const tree = withNumbers(policy.tree, placed);
  const modules = new Set(tree.filter((x) => x.directive === 'load_module').map((x) => x.args[0]));
  const main = tree.flatMap((x) => (MOVED.has(x.directive) ? [] : x.directive === 'http' ? [httpBlock(x, ctx)] : [x]));
  const payload = [
    ...LUA_MODULES.filter((m) => !modules.has(m)).map((m) => d('load_module', [m])),
    d('pid', [join(prefix, 'nginx.pid')]),
    ...main,
  ];
  const strip = (dirs) =>
    dirs.map((x) => ({ directive: x.directive, args: x.args, ...(x.block ? { block: strip(x.block) } : {}) }));
  return `# ${policy.file}, as the lab runs it (lab/policy/render-nginx.mjs says what moved)\n${execFileSync(python, ['-c', BUILD], { input: JSON.stringify(strip(payload)), encoding: 'utf8' })}`;
}
