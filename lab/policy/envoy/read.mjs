/*
 * A team's Envoy bootstrap (YAML or JSON), read as the model needs it: per listener, its HTTP
 * local rate limit (the listener-wide bucket), and per route the bucket it meets: its own, where
 * its typed_per_filter_config replaces the listener's, else the listener's; with each bucket's
 * token_bucket, whether it is per downstream connection, the share of requests it is enabled
 * and enforced for, and its status. Each figure keeps its file:line (the yaml package's ranges).
 * Envoy validates the file first (`envoy --mode validate`). Descriptors are read with the
 * rate_limits actions that make them (local_ratelimit's own, else the route's, else its virtual
 * host's); enum fields by name or number (envoy/enums.mjs). The global rate limit service, and any
 * action or value the model cannot read, are refused, naming where they are.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { LineCounter, parseDocument, isMap, isSeq } from 'yaml';
import { statusCode, denominator } from './enums.mjs';

const LOCAL = 'envoy.filters.http.local_ratelimit';
const GLOBAL = 'envoy.filters.http.ratelimit';
const HCM = 'envoy.filters.network.http_connection_manager';

/** A fractional percent ({numerator, denominator}) as a share of requests; Envoy's default when unset is 0. */
function share(fp, at) {
  if (!fp) return 0;
  return Number(fp.default_value?.numerator ?? 0) / denominator(fp.default_value?.denominator, at);
}

// The rate_limits actions the model reads: what a request must carry to make each entry.
const ACTIONS = new Set(['request_headers', 'generic_key', 'remote_address', 'header_value_match', 'query_parameters']);

/** A rate_limits list's entries as [{actions: [{type, ...}]}]; an action the model cannot read is refused. */
function rateLimitsOf(list, at) {
  return (list ?? []).map((rl) => ({
    actions: (rl.actions ?? []).map((a) => {
      const [type] = Object.keys(a);
      if (!ACTIONS.has(type))
        throw new Error(`${at}: rate_limits action ${type}: not modelled (${[...ACTIONS].join(', ')} are)`);
      return { type, ...a[type] };
    }),
  }));
}

/** A local_ratelimit descriptor: its entries, its bucket, whether a shadow. */
function descriptorOf(d, at) {
  const tb = d.token_bucket ?? {};
  return {
    entries: (d.entries ?? []).map((e) => ({ key: e.key, value: e.value ?? '' })),
    maxTokens: Number(tb.max_tokens),
    tokensPerFill: Number(tb.tokens_per_fill ?? 1),
    fillIntervalMs: durationMs(tb.fill_interval, at),
    shadow: Boolean(d.shadow_mode),
  };
}

/** A duration ('1s', '0.5s', '250ms' as protobuf JSON writes it, or {seconds, nanos}) in ms. */
function durationMs(v, at) {
  if (typeof v === 'string' && /^\d+(\.\d+)?s$/.test(v)) return Number(v.slice(0, -1)) * 1000;
  if (v && typeof v === 'object') return Number(v.seconds ?? 0) * 1000 + Number(v.nanos ?? 0) / 1e6;
  throw new Error(`${at}: fill_interval ${JSON.stringify(v)}: a duration like 1s`);
}

/** One local_ratelimit config as the model needs it (null when it has neither a bucket nor descriptors). */
function bucketOf(cfg, at, path) {
  if (!cfg.token_bucket && !cfg.descriptors?.length) return null;
  const tb = cfg.token_bucket;
  const status = cfg.status?.code === undefined ? 429 : statusCode(cfg.status.code, at);
  return {
    stat: cfg.stat_prefix,
    // No top-level bucket: no default bucket (a request its descriptors do not match passes).
    maxTokens: tb ? Number(tb.max_tokens) : null,
    tokensPerFill: tb ? Number(tb.tokens_per_fill ?? 1) : null,
    fillIntervalMs: tb ? durationMs(tb.fill_interval, at) : null,
    perConnection: Boolean(cfg.local_rate_limit_per_downstream_connection),
    enabled: share(cfg.filter_enabled, at),
    enforced: share(cfg.filter_enforced, at),
    // Envoy answers a status below 400 with 429.
    status: status < 400 ? 429 : status,
    descriptors: (cfg.descriptors ?? []).map((d) => descriptorOf(d, at)),
    // Unset is true: the default bucket is spent beside a descriptor's.
    alwaysConsumeDefault: cfg.always_consume_default_token_bucket !== false,
    // Its own rate_limits (1.33+) replace the route's and the virtual host's.
    rateLimits: cfg.rate_limits?.length ? rateLimitsOf(cfg.rate_limits, at) : null,
    at,
    // Where it stands in the bootstrap (keys and indices): the rendered config's numbers go there.
    path,
  };
}

/** Envoy's own word on the file first (`envoy --mode validate`): its message, where it refuses it. */
function validate(envoy, file) {
  try {
    execFileSync(envoy, ['--mode', 'validate', '-c', file, '--log-level', 'error'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 60_000,
    });
  } catch (e) {
    const said = String(e.stderr || e.stdout || e.message)
      .trim()
      .split('\n')
      .pop()
      .replace(/^\[[^\]]*\]\[\d+\]\[\w+\]\[\w+\] \[[^\]]*\] /, '');
    throw new Error(`Envoy refuses ${file}: ${said}`, { cause: e });
  }
}

/** A YAML document's file:line finder for a path of keys and indices. */
function locator(doc, lineCounter, name) {
  return (path) => {
    const node = doc.getIn(path, true);
    const offset = node?.range?.[0] ?? (isMap(node) || isSeq(node) ? node.range?.[0] : undefined);
    return offset === undefined ? name : `${name}:${lineCounter.linePos(offset).line}`;
  };
}

/**
 * The routes of one HTTP connection manager (at `base` in the file), each with the bucket it
 * meets: its own typed_per_filter_config, which replaces the listener's whole, or the listener's.
 * A global rate limit service and routes from RDS are refused, naming where they stand.
 */
function managerRoutes(l, hcm, base, at) {
  const filters = hcm.http_filters || [];
  const global = filters.findIndex((h) => h.name === GLOBAL);
  if (global >= 0)
    throw new Error(`${at([...base, 'http_filters', global])}: ${GLOBAL}, a global rate limit service: not modelled`);
  if (hcm.rds)
    throw new Error(`${at([...base, 'rds'])}: routes from RDS: the lab reads only the file it was pointed at`);
  const local = filters.findIndex((h) => h.name === LOCAL);
  const localPath = [...base, 'http_filters', local];
  const listenerBucket =
    local >= 0 ? bucketOf(filters[local].typed_config || {}, at(localPath), [...localPath, 'typed_config']) : null;
  return (hcm.route_config?.virtual_hosts || []).flatMap((vh, vi) =>
    (vh.routes || []).map((r, ri) => {
      const rpath = [...base, 'route_config', 'virtual_hosts', vi, 'routes', ri];
      const own = r.typed_per_filter_config?.[LOCAL];
      const ownPath = [...rpath, 'typed_per_filter_config', LOCAL];
      const bucket = local < 0 ? null : own ? bucketOf(own, at(ownPath), ownPath) : listenerBucket;
      // A direct_response route is answered by the router, after the rate limit: limited too.
      return {
        listener: l.name ?? listenerPlace(l),
        place: listenerPlace(l),
        host: vh.name,
        domains: vh.domains ?? ['*'],
        match: r.match,
        at: at(rpath),
        bucket,
        bucketFrom: own ? 'route' : 'listener',
        // The route's own rate_limits (stage 0), else its virtual host's (vh_rate_limits OVERRIDE).
        rateLimits: rateLimitsOf(
          (r.route?.rate_limits ?? []).filter((x) => !x.stage).length
            ? r.route.rate_limits.filter((x) => !x.stage)
            : vh.rate_limits,
          at(rpath),
        ),
        earlier: (vh.routes || []).slice(0, ri).map((x) => x.match),
      };
    }),
  );
}

/** Where a listener listens, as the lab tells places apart: its address and port. */
const listenerPlace = (l) =>
  `${l.address?.socket_address?.address ?? '*'}:${l.address?.socket_address?.port_value ?? 0}`;

/** The policy of an Envoy bootstrap, as the model reads it: {proxy, routes}; throws on what it cannot read. */
export function envoyPolicy(file, { envoy }) {
  validate(envoy, file);
  const lineCounter = new LineCounter();
  const doc = parseDocument(readFileSync(file, 'utf8'), { lineCounter });
  if (doc.errors.length) throw new Error(`${file}: ${doc.errors[0].message}`);
  const at = locator(doc, lineCounter, basename(file));
  const root = doc.toJS();
  const routes = (root.static_resources?.listeners || []).flatMap((l, li) =>
    (l.filter_chains || []).flatMap((fc, fi) =>
      (fc.filters || []).flatMap((f, ni) =>
        f.name === HCM
          ? managerRoutes(
              l,
              f.typed_config || {},
              ['static_resources', 'listeners', li, 'filter_chains', fi, 'filters', ni, 'typed_config'],
              at,
            )
          : [],
      ),
    ),
  );
  if (!routes.some((r) => r.bucket && r.bucket.enabled > 0))
    throw new Error(`${file}: no route meets an enabled local rate limit: nothing for the lab to model`);
  // What the file says of itself, for its name (lab/policy/name.mjs): listeners, then virtual hosts.
  const says = [
    ...routes.map((r) => ({ name: r.listener ?? '', what: 'listener', at: r.at })),
    ...routes.map((r) => ({ name: r.host ?? '', what: 'virtual host', at: r.at })),
  ];
  return { proxy: 'envoy', file, routes, config: root, says };
}
