/*
 * A team's Envoy bootstrap as the lab runs it: the file as written, with only what must move
 * moved, and what the lab needs to watch it added:
 *   - each listener on a port of the lab's on 127.0.0.1 (`ports`, by where it listened), its
 *     admin on the lab's admin port;
 *   - every cluster's endpoints at the lab's backend (plain HTTP: an upstream TLS socket goes);
 *   - its access logs replaced by the lab's: per request its case, when Envoy began it (µs)
 *     and the status it answered, in the service's folder: the sightings the replay reads, and
 *     the proxy's own count of each case (its rate-limit stats are per bucket, not per case);
 *   - a `/healthz` route first in each virtual host, answered by Envoy with its rate limit off
 *     there, for the lab's readiness check (and a virtual host for any name, if none is).
 * What cannot be moved is refused, naming where it is.
 */
import YAML from 'yaml';
import { join } from 'node:path';
import { envoyOutbound, refuseOutbound } from '../outbound.mjs';

const LOCAL = 'envoy.filters.http.local_ratelimit';
const HCM = 'envoy.filters.network.http_connection_manager';
const LRL_TYPE = 'type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit';

/** The lab's access log: case, start (s.µs), status, one line per request. */
const labLog = (prefix) => [
  {
    name: 'envoy.access_loggers.file',
    typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog',
      path: join(prefix, 'seen.log'),
      log_format: { text_format_source: { inline_string: '%REQ(X-LAB-CASE)% %START_TIME(%s.%6f)% %RESPONSE_CODE%\n' } },
    },
  },
];

// Not enabled (no filter_enabled: 0 %), so a readiness check spends no token of the route's bucket.
const healthRoute = () => ({
  match: { path: '/healthz' },
  direct_response: { status: 200, body: { inline_string: 'ok\n' } },
  typed_per_filter_config: {
    [LOCAL]: {
      '@type': LRL_TYPE,
      stat_prefix: 'lab_healthz',
      token_bucket: { max_tokens: 1, tokens_per_fill: 1, fill_interval: '1s' },
    },
  },
});

const at = (port) => ({ socket_address: { address: '127.0.0.1', port_value: port } });

/** Every cluster's endpoints at the backend, over plain HTTP. */
function moveClusters(clusters, backendPort) {
  for (const c of clusters) {
    delete c.transport_socket;
    if (c.type === 'STRICT_DNS' || c.type === 'LOGICAL_DNS') c.type = 'STATIC';
    const endpoints = c.load_assignment?.endpoints ?? [];
    for (const e of endpoints)
      for (const lb of e.lb_endpoints ?? []) if (lb.endpoint?.address) lb.endpoint.address = at(backendPort);
  }
}

/** Each knob's value in its bucket's token_bucket (a descriptor's where `descriptor` says which). */
function placeNumbers(cfg, placed) {
  for (const p of placed) {
    const holder = p.path.reduce((o, k) => o[k], cfg);
    const bucket = p.descriptor === undefined ? holder.token_bucket : holder.descriptors[p.descriptor].token_bucket;
    bucket[p.param] = p.param === 'fill_interval' ? `${p.value}s` : p.value;
  }
}

/**
 * The YAML the lab runs for `policy` (lab/policy/envoy/read.mjs: its parsed bootstrap): `ports` each
 * listener's port by where it listened, `adminPort` its admin, `backend` the backend's host:port,
 * `prefix` the service's folder, `placed` the knobs' values where they stand (lab/policy/experiment.mjs).
 */
export function renderEnvoy(policy, { ports, adminPort, backend, prefix, placed = [] }) {
  const cfg = structuredClone(policy.config);
  placeNumbers(cfg, placed);
  cfg.admin = { address: at(adminPort) };
  for (const l of cfg.static_resources.listeners ?? []) moveListener(l, ports, policy, prefix);
  moveClusters(cfg.static_resources.clusters ?? [], Number(backend.split(':')[1]));
  // Nothing leaves the machine: checked on what Envoy will read, before it reads it.
  refuseOutbound(policy.file, envoyOutbound(cfg));
  return `# ${policy.file}, as the lab runs it (lab/policy/envoy/render.mjs says what moved)\n${YAML.stringify(cfg, { lineWidth: 0 })}`;
}

/** One listener at its lab port, with the lab's access log and readiness route in each connection manager. */
function moveListener(l, ports, policy, prefix) {
  const place = `${l.address?.socket_address?.address ?? '*'}:${l.address?.socket_address?.port_value ?? 0}`;
  if (l.filter_chains?.some((fc) => fc.transport_socket))
    throw new Error(
      `${policy.file}: listener ${l.name ?? place}: a TLS listener: the lab runs Envoy's over plain HTTP/1.1`,
    );
  l.address = at(ports[place]);
  for (const fc of l.filter_chains ?? []) {
    for (const f of (fc.filters ?? []).filter((x) => x.name === HCM)) {
      f.typed_config.access_log = labLog(prefix);
      const hosts = f.typed_config.route_config?.virtual_hosts ?? [];
      for (const vh of hosts) vh.routes = [healthRoute(), ...(vh.routes ?? [])];
      // The readiness check names no host: where no virtual host takes any, one of the lab's does.
      if (f.typed_config.route_config && !hosts.some((vh) => vh.domains?.includes('*')))
        hosts.push({ name: 'lab_healthz', domains: ['*'], routes: [healthRoute()] });
    }
  }
}
