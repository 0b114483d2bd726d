/*
 * A team's Traefik config as the lab runs it, one YAML file that is both the static config and
 * the file provider's dynamic config:
 *   - the team's entry points, each on a port of the lab's on 127.0.0.1 (`ports`, by where it
 *     listened), their middlewares ahead of their routers' own, trusting k6's X-Forwarded-For
 *     where they trust a forwarder's, and the lab's own (`lab_own`): ping for readiness,
 *     Prometheus's metrics;
 *   - the team's HTTP routers, middlewares and services as written (from every file read), with
 *     every load balancer's servers at the lab's backend and the knobs' values where they stand;
 *   - an access log in JSON of each request's start (Traefik's nanosecond clock), status and
 *     case: the sightings the replay reads, and the proxy's own count of each case;
 *   - /healthz on every entry point answered by Traefik's ping before any router of the team's;
 *   - TLS where the team's routers or entry points have it, served with the lab's certificate
 *     (the team's resolvers, certificates and TLS options left out);
 *   - what the lab does itself left out: other providers, the API's insecure entry point, tracing.
 */
import { stringify } from 'yaml';
import { labCertificate } from '../nginx/cert.mjs';
import { labForwards, usersFiles } from './read.mjs';

// A user no one logs in as, in each middleware's format: htpasswd's {SHA} and htdigest's.
const LAB_USER = {
  basicAuth: 'lab:{SHA}2jmj7l5rSw0yVb/vlWAYkK/YBwk=',
  digestAuth: 'lab:traefik:d41d8cd98f00b204e9800998ecf8427e',
};

const ROUTER_KEYS = new Set(['rule', 'service', 'middlewares', 'priority', 'entryPoints', 'ruleSyntax']);

/** The dynamic HTTP config with the backend and the knobs placed (`tls`: whether any of it is served over TLS). */
function dynamicHttp(policy, { backend, placed, tls: anyTls }) {
  const http = structuredClone(policy.http);
  for (const s of Object.values(http.services)) {
    for (const server of s.loadBalancer?.servers ?? []) server.url = `http://${backend}`;
    // The lab's backend speaks plain HTTP: a transport's TLS to the team's servers means nothing to it.
    if (s.loadBalancer) delete s.loadBalancer.serversTransport;
  }
  const teams = policy.entryPoints.map((e) => e.name);
  for (const r of Object.values(http.routers)) {
    const tls = Boolean(r.tls);
    for (const k of Object.keys(r)) if (!ROUTER_KEYS.has(k)) delete r[k];
    if (tls) r.tls = {};
    // A router naming no entry point is on all of them: the team's, not the lab's own.
    r.entryPoints ??= teams;
  }
  // A users file of the host's: a user of the lab's instead (its routers get no cases).
  for (const { m, type } of usersFiles(http.middlewares)) {
    delete m[type].usersFile;
    m[type].users = [LAB_USER[type]];
  }
  // The lab's readiness and warm-up requests, answered by Traefik before any of the team's routers.
  const healthz = { rule: 'Path(`/healthz`)', priority: 2 ** 31 - 1, service: 'ping@internal', entryPoints: teams };
  http.routers.lab_healthz = healthz;
  // Over TLS only TLS routers match: the same answer there, or the team's router would count it.
  if (anyTls) http.routers.lab_healthz_tls = { ...healthz, tls: {} };
  for (const p of placed) {
    const [, , name, type, key] = p.path;
    // Traefik reads a number as seconds for a period; a key as the file spells it (any case).
    const spec = http.middlewares[name][type];
    const spelled = Object.keys(spec).find((k) => k.toLowerCase() === key.toLowerCase()) ?? key;
    spec[spelled] = key === 'period' ? `${Math.round(p.value * 1e6) / 1e3}ms` : p.value;
  }
  return http;
}

/** An entry point's http: TLS on every router, its middlewares ahead of theirs, as written. */
function entryPointHttp(e) {
  const http = { ...(e.tls ? { tls: {} } : {}), ...(e.middlewares?.length ? { middlewares: e.middlewares } : {}) };
  return Object.keys(http).length ? { http } : {};
}

/**
 * An entry point's forwardedHeaders: as written, with k6's 127.0.0.1 among the forwarders it
 * trusts where it trusts any (k6 stands for the team's load balancer), or where no static config
 * was read.
 */
function forwardedHeaders(f) {
  if (f.insecure) return { forwardedHeaders: { insecure: true } };
  if (!labForwards(f)) return {};
  return { forwardedHeaders: { trustedIPs: [...f.trustedIPs, '127.0.0.1/32'] } };
}

/**
 * The traefik.yml the lab runs for `policy`: `ports` each entry point's port by where it
 * listened, `ownPort` the lab's, `backend` host:port, `prefix` the service's folder (the config
 * is there, its own file provider), `placed` the knobs' values where they stand.
 */
export function renderTraefik(policy, { ports, ownPort, backend, prefix, placed = [] }) {
  const entryPoints = Object.fromEntries(
    policy.entryPoints.map((e) => [
      e.name,
      {
        address: `127.0.0.1:${ports[e.place]}`,
        ...entryPointHttp(e),
        ...forwardedHeaders(e.forwarded),
      },
    ]),
  );
  // TLS where a router or an entry point has it.
  const tls = policy.entryPoints.some((e) => e.tls) || policy.routes.some((r) => r.tls);
  const hosts = policy.routes.map((r) => r.host).filter(Boolean);
  const cert = tls ? labCertificate(prefix, hosts) : null;
  const config = {
    global: { checkNewVersion: false, sendAnonymousUsage: false },
    entryPoints: { ...entryPoints, lab_own: { address: `127.0.0.1:${ownPort}` } },
    providers: { file: { filename: `${prefix}/traefik.yml`, watch: false } },
    ping: { entryPoint: 'lab_own' },
    // The team's API, where its static config enables it, for its routers to api@internal.
    ...(policy.api ? { api: { ...policy.api, insecure: false } } : {}),
    metrics: { prometheus: { entryPoint: 'lab_own', addRoutersLabels: true } },
    log: { level: 'ERROR', format: 'json' },
    accessLog: {
      filePath: `${prefix}/seen.log`,
      format: 'json',
      fields: {
        defaultMode: 'drop',
        names: { StartUTC: 'keep', Duration: 'keep', DownstreamStatus: 'keep', RouterName: 'keep' },
        headers: { defaultMode: 'drop', names: { 'X-Lab-Case': 'keep' } },
      },
    },
    http: dynamicHttp(policy, { backend, placed, tls }),
    ...(cert ? { tls: { certificates: [{ certFile: cert.cert, keyFile: cert.key }] } } : {}),
  };
  return `# ${policy.file}, as the lab runs it (lab/policy/traefik/render.mjs says what moved)\n${stringify(config)}`;
}
