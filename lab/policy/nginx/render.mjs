/*
 * A team's nginx config as the lab runs it (renderNginx) and as its probe asks nginx about it
 * (renderProbe, probe.mjs): the tree with what must move moved (move.mjs), the knobs' values
 * where they stand, and what the lab needs added:
 *   - each case plays a client address of its own: the lab stands where the team's load
 *     balancer stands (set_real_ip_from 127.0.0.0/8) and sends the address in the header the
 *     config trusts (real_ip_header), or, where it trusts none, in the lab's (X-Lab-Client);
 *   - run: the lab's counters (stacks/lib/lab_metrics.lua, on a port of their own), its limiter
 *     clock in each limited location (lab_clock.lua: when the limiter saw each request), the
 *     sightings log, and a `location = /healthz` answered by `return` (before any limit) where a
 *     server has none;
 *   - probe: every limit a dry run (nothing rejected, nothing delayed), each location adding its
 *     id to a trail ($lab_via), the lab's backend inside the same nginx, every listener a socket.
 * The tree is written by crossplane's build (the pinned PyPI package), which quotes arguments as
 * nginx reads them.
 */
import { execFileSync } from 'node:child_process';
import { basename, join } from 'node:path';
import { d, moveTree, refusedToRun } from './move.mjs';
import { labCertificate } from './cert.mjs';
import { nginxOutbound, refuseOutbound } from '../outbound.mjs';

const BUILD =
  'import crossplane, json, sys; sys.stdout.write(crossplane.build(json.load(sys.stdin), indent=4) + "\\n")';
const LUA_MODULES = ['/usr/lib/nginx/modules/ndk_http_module.so', '/usr/lib/nginx/modules/ngx_http_lua_module.so'];
// The header a case's client address travels in where the config trusts none of its own.
export const LAB_CLIENT_HEADER = 'X-Lab-Client';
const LAB_TRUSTED = ['127.0.0.0/8', 'unix:'];

/** A limit_req's arguments with its knobs' values; a burst or delay of 0 left out, as nginx reads its absence. */
const limitArgs = (args, v) => [
  args.find((a) => a.startsWith('zone=')),
  ...(v.burst ? [`burst=${v.burst}`] : []),
  ...(v.mode === 'nodelay' ? ['nodelay'] : v.delay ? [`delay=${v.delay}`] : []),
];

/** The tree with each knob's value put where it stands (`placed`: [{at, param, unit, value}]). */
export function withNumbers(tree, placed) {
  const at = new Map();
  for (const p of placed)
    at.set(p.at, { ...at.get(p.at), [p.param]: p.param === 'rate' ? `${p.value}r/${p.unit}` : p.value });
  const edit = (dirs) =>
    dirs.map((x) => {
      const v = at.get(x.at);
      if (v && x.directive === 'limit_req_zone')
        return { ...x, args: x.args.map((a) => (a.startsWith('rate=') ? `rate=${v.rate}` : a)) };
      if (v && x.directive === 'limit_req') return { ...x, args: limitArgs(x.args, v) };
      if (v && x.directive === 'limit_conn' && v.conn !== undefined) return { ...x, args: [x.args[0], String(v.conn)] };
      if (v && (x.directive === 'limit_req_dry_run' || x.directive === 'limit_conn_dry_run'))
        return { ...x, args: [v.dry_run] };
      return x.block ? { ...x, block: edit(x.block) } : x;
    });
  return edit(tree);
}

/** The header each case's client address travels in: the config's real_ip_header, its default, or the lab's. */
export function clientHeader(tree) {
  const found = { header: null, trusts: false };
  const walk = (dirs) =>
    dirs.forEach((x) => {
      if (x.directive === 'real_ip_header' && !found.header) found.header = x.args[0];
      if (x.directive === 'set_real_ip_from') found.trusts = true;
      if (x.block) walk(x.block);
    });
  walk(tree);
  if (found.trusts) return found.header ?? 'X-Real-IP';
  return found.header ?? LAB_CLIENT_HEADER;
}

/** The lab trusted as the load balancer wherever the config trusts one, or at the http level with its header. */
function trustLab(http, header) {
  let trusts = false;
  // The lab's k6 on loopback, and its probe on a socket.
  const lab = () => LAB_TRUSTED.map((from) => d('set_real_ip_from', [from]));
  const walk = (dirs) =>
    dirs.flatMap((x) => {
      const block = x.block ? walk(x.block) : null;
      const own = block?.some((y) => y.directive === 'set_real_ip_from') ? lab() : [];
      if (x.directive === 'set_real_ip_from') trusts = true;
      return [block ? { ...x, block: [...own, ...block] } : x];
    });
  const body = walk(http.block);
  const top = http.block.some((y) => y.directive === 'set_real_ip_from') ? lab() : [];
  const labOwn = trusts ? [] : [...lab(), d('real_ip_header', [header])];
  return [...top, ...labOwn, ...body];
}

/** Every server name the tree gives (for the certificate's names). */
const serverNames = (tree) => {
  const out = [];
  const walk = (dirs) =>
    dirs.forEach((x) => {
      if (x.directive === 'server_name') out.push(...x.args);
      if (x.block) walk(x.block);
    });
  walk(tree);
  return out;
};

/** Is any listener of the tree a TLS one? */
const hasTls = (tree) => JSON.stringify(tree).includes('"ssl"');

/** The statuses a limiter of the policy answers with: an error_page for them keeps them (move.mjs). */
const limitStatuses = (policy) =>
  new Set(policy.routes.flatMap((r) => [r.status?.code, r.connStatus?.code]).filter(Boolean));

/** crossplane's build of a tree (the lab's `at` and route ids stripped). */
export function build(python, tree, header) {
  const strip = (dirs) =>
    dirs.map((x) => ({ directive: x.directive, args: x.args, ...(x.block ? { block: strip(x.block) } : {}) }));
  return `${header}\n${execFileSync(python, ['-c', BUILD], { input: JSON.stringify(strip(tree)), encoding: 'utf8' })}`;
}

/**
 * The moved tree of `policy` with `add` ({http(body) -> http directives before it, serverExtra,
 * locationExtra, main -> main-level directives}), every refusal thrown together.
 */
export function assemble(policy, opts, add) {
  const refused = refusedToRun(policy.tree);
  const tree = withNumbers(policy.tree, opts.placed ?? []);
  const moved = moveTree(tree, {
    listenAt: opts.listenAt,
    backend: opts.backend,
    prefix: opts.prefix,
    www: join(opts.prefix, 'www'),
    version: opts.version,
    limitStatuses: limitStatuses(policy),
    serverExtra: add.serverExtra,
    locationExtra: add.locationExtra,
  });
  refused.push(...moved.refused);
  if (refused.length) throw new Error(`${policy.file}: the lab cannot run:\n  ${refused.join('\n  ')}`);
  const header = clientHeader(tree);
  const tls = hasTls(moved.tree) ? labCertificate(opts.prefix, serverNames(tree)) : null;
  // By file name: the stock modules-enabled loads the lua modules by another path to the same files.
  const modules = new Set(moved.tree.filter((x) => x.directive === 'load_module').map((x) => basename(x.args[0])));
  const main = moved.tree.flatMap((x) => {
    if (x.directive !== 'http') return [x];
    const body = trustLab(x, header);
    const certs = tls ? [d('ssl_certificate', [tls.cert]), d('ssl_certificate_key', [tls.key])] : [];
    return [d('http', [], [...add.http(body), ...certs, ...body])];
  });
  const out = [
    ...LUA_MODULES.filter((m) => !modules.has(basename(m))).map((m) => d('load_module', [m])),
    d('pid', [join(opts.prefix, 'nginx.pid')]),
    ...add.main(main),
  ];
  // Nothing leaves the machine: checked on what nginx will read, before it reads it.
  refuseOutbound(policy.file, nginxOutbound(out));
  return { tree: out, notes: moved.notes, clientHeader: header, tls: Boolean(tls) };
}

/** The temp paths every nginx of the lab keeps in its own folder. */
export const tempPaths = (prefix) =>
  ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => d(`${t}_temp_path`, [join(prefix, `${t}_temp`)]));

/** The lab's own server on the run: its counters, on a port of their own, and its readiness. */
const labServer = (metricsPort) =>
  d(
    'server',
    [],
    [
      d('listen', [`127.0.0.1:${metricsPort}`]),
      d('location', ['=', '/metrics'], [d('content_by_lua_block', [' require("lab_metrics").serve() '])]),
      d('location', ['=', '/healthz'], [d('return', ['200', 'ok\n'])]),
    ],
  );

/** A server's readiness check, answered in the rewrite phase (no limiter's budget spent), where it has none. */
const healthOf = (server) =>
  server.block.some((x) => x.directive === 'location' && x.args.join(' ') === '= /healthz')
    ? []
    : [d('location', ['=', '/healthz'], [d('return', ['200', 'ok\n'])])];

/**
 * The config text the lab runs for `policy` (read.mjs's reading, with its tree): `ports` per place
 * the file listens on, `metricsPort` its counters', `backend` the lab backend's host:port,
 * `prefix` the service's folder, `root` the repository (for the lab's lua modules), `python`
 * crossplane's, `version` the installed nginx's, `placed` the knobs' values where they stand.
 * Returns {text, notes, clientHeader}.
 */
export function renderNginx(policy, { ports, metricsPort, backend, prefix, root, python, version, placed = [] }) {
  const limited = new Set(policy.routes.filter((r) => r.limits?.length || r.conns?.length).map((r) => r.id));
  const built = assemble(
    policy,
    { listenAt: (place) => `127.0.0.1:${ports[place]}`, backend, prefix, version, placed },
    {
      main: (main) => main,
      serverExtra: healthOf,
      // When the limiter saw the request: stamped where a limit stands (the first such location of a request's).
      locationExtra: (x) =>
        limited.has(x.routeId) ? [d('rewrite_by_lua_block', [' require("lab_clock").stamp() '])] : [],
      http: () => [
        ...tempPaths(prefix),
        d('lua_package_path', [`${root}/stacks/lib/?.lua;/usr/share/lua/5.1/?.lua;;`]),
        d('lua_shared_dict', ['lab_metrics', '4m']),
        d('log_by_lua_block', [' require("lab_metrics").log() ']),
        d('log_format', ['lab_seen', '$http_x_lab_case $http_x_lab_clock $msec $request_time $status']),
        d('access_log', [join(prefix, 'seen.log'), 'lab_seen', 'buffer=64k', 'flush=1s']),
      ],
    },
  );
  built.tree = built.tree.map((x) =>
    x.directive === 'http' ? { ...x, block: [...x.block, labServer(metricsPort)] } : x,
  );
  const text = build(
    python,
    built.tree,
    `# ${policy.file}, as the lab runs it (lab/policy/nginx/move.mjs says what moved)`,
  );
  return { text, notes: built.notes, clientHeader: built.clientHeader };
}

/**
 * What the lab changes of `policy` to run it, in words, with where ({at, what}): what it reads
 * from where (its includes), and what moves or goes (move.mjs), as the Policy tab lists them.
 */
export function changeNotes(policy) {
  const moved = moveTree(policy.tree, {
    listenAt: (place) => place,
    backend: '127.0.0.1:0',
    prefix: '/lab',
    www: '/lab/www',
    version: policy.version,
    limitStatuses: limitStatuses(policy),
    serverExtra: () => [],
    locationExtra: () => [],
  });
  return [
    ...(policy.notes ?? []),
    ...moved.notes,
    {
      at: '(the lab)',
      what: `each client's address travels in ${clientHeader(policy.tree)}, which the lab, at 127.0.0.1, is trusted to send (set_real_ip_from)`,
    },
  ];
}
