/*
 * A team's Envoy bootstrap (YAML or JSON), read as the model needs it: per listener, its HTTP
 * local rate limit (the listener-wide bucket), and per route the bucket it meets: its own, where
 * its typed_per_filter_config replaces the listener's, else the listener's; with each bucket's
 * token_bucket, whether it is per downstream connection, the share of requests it is enabled
 * and enforced for, and its status. Each figure keeps its file:line (the yaml package's ranges).
 * Envoy validates the file first (`envoy --mode validate`); descriptors and the global rate
 * limit service are refused, naming where they are.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { LineCounter, parseDocument, isMap, isSeq } from 'yaml';

const LOCAL = 'envoy.filters.http.local_ratelimit';
const GLOBAL = 'envoy.filters.http.ratelimit';
const HCM = 'envoy.filters.network.http_connection_manager';

/** A fractional percent ({numerator, denominator}) as a share of requests; Envoy's default when unset is 0. */
function share(fp) {
  if (!fp) return 0;
  const d = { HUNDRED: 100, TEN_THOUSAND: 10000, MILLION: 1e6 }[fp.default_value?.denominator ?? 'HUNDRED'];
  return (fp.default_value?.numerator ?? 0) / d;
}

/** A duration ('1s', '0.5s', '250ms' as protobuf JSON writes it, or {seconds, nanos}) in ms. */
function durationMs(v, at) {
  if (typeof v === 'string' && /^\d+(\.\d+)?s$/.test(v)) return Number(v.slice(0, -1)) * 1000;
  if (v && typeof v === 'object') return Number(v.seconds ?? 0) * 1000 + Number(v.nanos ?? 0) / 1e6;
  throw new Error(`${at}: fill_interval ${JSON.stringify(v)}: a duration like 1s`);
}

/** One local_ratelimit config as the model needs it (null when it has no bucket). */
function bucketOf(cfg, at, path) {
  if (cfg.descriptors?.length)
    throw new Error(`${at}: local_ratelimit descriptors: which requests share a descriptor's bucket is not modelled`);
  if (!cfg.token_bucket) return null;
  const tb = cfg.token_bucket;
  return {
    stat: cfg.stat_prefix,
    maxTokens: Number(tb.max_tokens),
    tokensPerFill: Number(tb.tokens_per_fill ?? 1),
    fillIntervalMs: durationMs(tb.fill_interval, at),
    perConnection: Boolean(cfg.local_rate_limit_per_downstream_connection),
    enabled: share(cfg.filter_enabled),
    enforced: share(cfg.filter_enforced),
    status: Number(cfg.status?.code ?? 429),
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
        listener: l.name,
        host: vh.name,
        domains: vh.domains ?? ['*'],
        match: r.match,
        at: at(rpath),
        bucket,
        bucketFrom: own ? 'route' : 'listener',
      };
    }),
  );
}

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
