/*
 * The targets the lab loads in a team's Envoy bootstrap (lab/policy/envoy.mjs's reading): one per
 * route that meets an enabled local rate limit, with the model of its token bucket, its numbers as
 * knobs, and the request each case sends (the route's path, a Host its virtual host takes, on its
 * listener's port). Every case on a bucket shares it: Envoy's buckets are per route or listener.
 */
import { knobName } from './nginx/targets.mjs';

/** A Host for an Envoy virtual host's domains: '*' needs none; a wildcard gets a name it matches. */
const hostFor = (domains) => (domains.includes('*') ? null : domains[0].replace(/^\*/, 'lab').replace(/\*$/, 'lab'));

/** A token bucket's numbers as knobs: max_tokens, tokens_per_fill and fill_interval (in s). */
const bucketNumbers = (b, knob) =>
  [
    ['max_tokens', 'count', b.maxTokens, 'token_bucket.max_tokens'],
    ['tokens_per_fill', 'count', b.tokensPerFill, 'token_bucket.tokens_per_fill'],
    ['fill_interval', 'seconds', b.fillIntervalMs / 1000, 'token_bucket.fill_interval in s'],
  ].map(([param, kind, value, what]) => ({
    knob: knob(param),
    kind,
    value,
    ...(kind === 'count' ? { min: 1 } : {}),
    at: b.at,
    path: b.path,
    param,
    doc: `${b.stat}: ${what} (${b.at})`,
  }));

/** Why a route gets no cases (said, never guessed), or null. */
function unplanned(r) {
  if (!(r.bucket?.enabled > 0)) return 'no local rate limit enabled';
  if (r.match.safe_regex || !(r.match.path ?? r.match.prefix))
    return 'a regular-expression or unnamed match: the lab does not choose a path for it';
  if (r.bucket.perConnection)
    return 'a bucket per downstream connection: how k6 spreads its requests over connections is not modelled';
  if (r.match.headers?.length || r.match.query_parameters?.length)
    return 'a route matched by more than its path and host (headers, arguments): the lab does not choose a request for it';
  return null;
}

/** An Envoy route's bucket as a target; every case on it shares it. */
function envoyTarget(r, knobOf) {
  const b = r.bucket;
  const knob = (param) => knobOf(b, param);
  const host = hostFor(r.domains);
  return {
    numbers: bucketNumbers(b, knob),
    build: (k) => ({
      kind: 'local_rate_limit',
      enabled: b.enabled,
      enforced: b.enforced,
      maxTokens: k[knob('max_tokens')],
      tokensPerFill: k[knob('tokens_per_fill')],
      fillIntervalMs: k[knob('fill_interval')] * 1000,
    }),
    status: b.status,
    rate: b.tokensPerFill / (b.fillIntervalMs / 1000),
    burst: b.maxTokens,
    keys: [
      {
        zone: b.stat,
        how:
          r.bucketFrom === 'route'
            ? "the route's own bucket, every case on it shares"
            : "the listener's bucket, every route without its own shares",
      },
    ],
    shared: true,
    drainS: (b.maxTokens / b.tokensPerFill) * (b.fillIntervalMs / 1000),
    path: r.match.path ?? r.match.prefix,
    place: { place: r.listener, ssl: false, http2: false },
    host,
    slots: [{ path: r.match.path ?? r.match.prefix, headers: host ? { host } : {} }],
  };
}

/** The Envoy targets of `policy`: {targets, routes} (routes: the Policy tab's words per route). */
export function envoyTargets(policy) {
  const places = new Map();
  for (const r of policy.routes.filter((x) => x.bucket))
    places.set(r.bucket.stat, new Set([...(places.get(r.bucket.stat) ?? []), r.bucket.at]));
  const knobOf = (b, param) =>
    knobName(b.stat, ...(places.get(b.stat).size === 1 ? [] : [`l${b.at.split(':').pop()}`]), param);
  const targets = [];
  const routes = [];
  for (const r of policy.routes) {
    const label = `${r.listener}/${r.host} ${JSON.stringify(r.match)}`;
    const why = unplanned(r);
    if (why) {
      routes.push({ route: label, at: r.at, none: why });
      continue;
    }
    const t = { ...envoyTarget(r, knobOf), label, at: r.at };
    targets.push(t);
  }
  return { targets, routes };
}
