/*
 * The targets the lab loads in a team's Envoy bootstrap (lab/policy/envoy/read.mjs's reading): per
 * route that meets an enabled local rate limit, one per class of request its descriptors tell
 * apart (the request a descriptor's rate_limits actions make, and one that makes none), each with
 * the model of the buckets it meets (its descriptors', slowest refill first, then the route's
 * default bucket), its numbers as knobs, and the request each case sends (a path the route takes
 * and no earlier route does, a Host its virtual host takes, what its descriptor needs, on its
 * listener's port). Every case on a bucket shares it: Envoy's buckets are per route or listener.
 */
import { knobName } from '../nginx/targets.mjs';
import { examplesOf } from '../nginx/requests.mjs';

/** A Host for an Envoy virtual host's domains: '*' needs none; a wildcard gets a name it matches. */
const hostFor = (domains) => (domains.includes('*') ? null : domains[0].replace(/^\*/, 'lab').replace(/\*$/, 'lab'));

const slug = (text) =>
  String(text)
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_|_$/g, '')
    .slice(0, 24);

/** Does a route match take `path` (prefix, path, safe_regex)? */
function takes(match, path) {
  if (match.path !== undefined) return path.split('?')[0] === match.path;
  if (match.prefix !== undefined) return path.startsWith(match.prefix);
  if (match.safe_regex) return new RegExp(`^(?:${match.safe_regex.regex})$`).test(path.split('?')[0]);
  return false;
}

/** A path the route takes and none before it in its virtual host does, or null. */
function pathFor(r, wanted = null) {
  const own = r.match.path ?? r.match.prefix;
  const candidates = wanted
    ? [wanted]
    : r.match.safe_regex
      ? examplesOf(r.match.safe_regex.regex, false).map((p) => (p.startsWith('/') ? p : `/${p}`))
      : [own, `${own.replace(/\/?$/, '/')}lab`];
  return candidates.find((p) => takes(r.match, p) && !r.earlier.some((m) => m && takes(m, p))) ?? null;
}

/** A header value a header matcher (HeaderMatcher, v3) takes, or undefined where it wants the header absent. */
function valueFor(h) {
  const m = h.string_match ?? {};
  if (h.present_match !== undefined) return h.present_match === false ? undefined : 'lab';
  if (m.exact !== undefined || h.exact_match !== undefined) return m.exact ?? h.exact_match;
  if (m.prefix !== undefined || h.prefix_match !== undefined) return `${m.prefix ?? h.prefix_match}lab`;
  if (m.suffix !== undefined || h.suffix_match !== undefined) return `lab${m.suffix ?? h.suffix_match}`;
  if (m.contains !== undefined) return `lab${m.contains}lab`;
  if (m.safe_regex) return examplesOf(m.safe_regex.regex, Boolean(m.ignore_case), 1)[0] ?? 'lab';
  return 'lab';
}

/** The header a request carries (`:path`, `:authority` and `:method` its pseudo-headers). */
const headerOf = (req, name) =>
  name === ':path'
    ? req.path
    : name === ':authority'
      ? (req.host ?? 'localhost')
      : name === ':method'
        ? 'GET'
        : req.headers[name.toLowerCase()];

/** What one action gives a request: its entry, 'skip' (left out), or null (the descriptor is dropped). */
function entryOf(a, req) {
  if (a.type === 'generic_key') return { key: a.descriptor_key ?? 'generic_key', value: a.descriptor_value };
  if (a.type === 'remote_address')
    return { key: 'remote_address', value: req.headers['x-forwarded-for'] ?? '127.0.0.1' };
  if (a.type === 'request_headers' || a.type === 'query_parameters') {
    const v = a.type === 'request_headers' ? headerOf(req, a.header_name) : req.query[a.query_parameter_name];
    if (v === undefined) return a.skip_if_absent ? 'skip' : null;
    return { key: a.descriptor_key, value: v };
  }
  const all = (a.headers ?? []).every((h) => {
    const v = headerOf(req, h.name);
    return h.present_match === false ? v === undefined : v !== undefined && v === valueFor(h);
  });
  return all === (a.expect_match !== false)
    ? { key: a.descriptor_key ?? 'header_match', value: a.descriptor_value }
    : null;
}

/** The descriptors a request makes: one per rate_limits entry whose every action gives its entry. */
function descriptorsOf(rateLimits, req) {
  return rateLimits.flatMap((rl) => {
    const entries = rl.actions.map((a) => entryOf(a, req));
    return entries.includes(null) ? [] : [entries.filter((e) => e !== 'skip')];
  });
}

/** The configured descriptors a request's descriptors match: exact first, else a wildcard's (empty value). */
function matched(bucket, made) {
  const same = (d, e) =>
    d.entries.length === e.length && d.entries.every((x, i) => x.key === e[i].key && x.value === e[i].value);
  const wild = (d, e) =>
    d.entries.length === e.length &&
    d.entries.every((x, i) => x.key === e[i].key && (x.value === '' || x.value === e[i].value));
  return made
    .map((e) => bucket.descriptors.findIndex((d) => same(d, e)) ?? -1)
    .map((i, j) => (i >= 0 ? i : bucket.descriptors.findIndex((d) => wild(d, made[j]))))
    .filter((i) => i >= 0);
}

/** A request that makes descriptor `d` through one of the route's rate_limits entries, or null. */
function requestFor(r, d, base) {
  for (const rl of r.rateLimits) {
    const keys = rl.actions.map((a) =>
      a.type === 'generic_key'
        ? (a.descriptor_key ?? 'generic_key')
        : a.type === 'remote_address'
          ? 'remote_address'
          : (a.descriptor_key ?? 'header_match'),
    );
    if (keys.length !== d.entries.length || keys.some((k, i) => k !== d.entries[i].key)) continue;
    const req = structuredClone(base);
    let ok = true;
    rl.actions.forEach((a, i) => {
      const value = d.entries[i].value || 'lab';
      if (a.type === 'generic_key') ok &&= a.descriptor_value === d.entries[i].value;
      else if (a.type === 'request_headers' && a.header_name === ':path') {
        const p = pathFor(r, value);
        if (p) req.path = p;
        else ok = false;
      } else if (a.type === 'request_headers') req.headers[a.header_name.toLowerCase()] = value;
      else if (a.type === 'query_parameters') req.query[a.query_parameter_name] = value;
      else if (a.type === 'remote_address') req.headers['x-forwarded-for'] = value;
      else
        for (const h of a.headers ?? []) if (valueFor(h) !== undefined) req.headers[h.name.toLowerCase()] = valueFor(h);
    });
    if (ok) return req;
  }
  return null;
}

/** Why a route gets no cases (said, never guessed), or null. */
function unplanned(r) {
  if (!(r.bucket?.enabled > 0)) return 'no local rate limit enabled';
  if (r.bucket.perConnection)
    return 'a bucket per downstream connection: how k6 spreads its requests over connections is not modelled';
  if (r.match.headers?.length || r.match.query_parameters?.length)
    return 'a route matched by more than its path and host (headers, arguments): the lab does not choose a request for it';
  if (!pathFor(r))
    return 'no path the lab tried reaches it first (an earlier route takes them, or a regex it cannot draw from)';
  return null;
}

/** A token bucket's numbers as knobs (`where`: [] for the default bucket, or the descriptor's index). */
const bucketNumbers = (b, knob, where, doc) =>
  [
    ['max_tokens', 'count', b.maxTokens, 'token_bucket.max_tokens'],
    ['tokens_per_fill', 'count', b.tokensPerFill, 'token_bucket.tokens_per_fill'],
    ['fill_interval', 'seconds', b.fillIntervalMs / 1000, 'token_bucket.fill_interval in s'],
  ].map(([param, kind, value, what]) => ({
    knob: knob(param),
    kind,
    value,
    ...(kind === 'count' ? { min: 1 } : {}),
    at: where.at,
    path: where.path,
    ...(where.descriptor !== undefined ? { descriptor: where.descriptor } : {}),
    param,
    doc: `${doc}: ${what} (${where.at})`,
  }));

/** The classes of request of one route: [{name, why, req, descriptors (indices)}], one per bucket chain. */
function classesOf(r, base) {
  const b = r.bucket;
  const rateLimits = b.rateLimits ?? r.rateLimits;
  const route = { ...r, rateLimits };
  const found = new Map();
  const add = (name, why, req) => {
    const m = b.descriptors.length ? matched(b, descriptorsOf(rateLimits, req)) : [];
    const key = JSON.stringify([...new Set(m)].sort());
    if (!found.has(key)) found.set(key, { name, why, req, descriptors: [...new Set(m)] });
  };
  add('default', b.descriptors.length ? 'a request no descriptor matches' : "the route's bucket", base);
  b.descriptors.forEach((d, i) => {
    const req = requestFor(route, d, base);
    const what = d.entries.map((e) => `${e.key}=${e.value || '*'}`).join(',');
    if (req)
      add(
        `d${i + 1}-${slug(d.entries.map((e) => e.value || 'any').join('-'))}`.replace(/_/g, '-'),
        `descriptor ${what}`,
        req,
      );
  });
  return [...found.values()];
}

/**
 * The buckets a class spends, in Envoy's order: its matched descriptors' (the slowest refill
 * first), then the default one where there is one and none matched, or always_consume is on.
 */
function chainOf(b, cls) {
  const byRate = (i) => b.descriptors[i].tokensPerFill / b.descriptors[i].fillIntervalMs;
  const descs = [...cls.descriptors].sort((x, y) => byRate(x) - byRate(y));
  const withDefault = b.maxTokens !== null && (!descs.length || b.alwaysConsumeDefault);
  return [...descs.map((i) => ({ i })), ...(withDefault ? [{ i: null }] : [])];
}

/** Who shares each bucket of a chain, in words. */
const chainKeys = (r, b, chain) =>
  chain.map(({ i }) => ({
    zone:
      i === null ? b.stat : `${b.stat} ${b.descriptors[i].entries.map((e) => `${e.key}=${e.value || '*'}`).join(',')}`,
    how:
      i !== null
        ? "the descriptor's bucket, every request that makes it shares"
        : r.bucketFrom === 'route'
          ? "the route's own bucket, every case on it shares"
          : "the listener's bucket, every route without its own shares",
  }));

/** The model's policy of a chain from the knobs' values: Envoy's filter and the chain's buckets. */
const buildOf = (b, chain, knob) => (k) => ({
  kind: 'local_rate_limit',
  enabled: b.enabled,
  enforced: b.enforced,
  buckets: chain.map(({ i }) => ({
    maxTokens: k[knob(i, 'max_tokens')],
    tokensPerFill: k[knob(i, 'tokens_per_fill')],
    fillIntervalMs: k[knob(i, 'fill_interval')] * 1000,
    ...(i !== null && b.descriptors[i].shadow ? { shadow: true } : {}),
  })),
});

/** One class of a route as a target: its buckets in the order Envoy spends them, and its request. */
function classTarget(r, cls, knobOf, first) {
  const b = r.bucket;
  const chain = chainOf(b, cls);
  const knob = (which, param) =>
    which === null
      ? knobOf(b, param)
      : knobName(b.stat, slug(b.descriptors[which].entries.map((e) => e.value || 'any').join('_')), param);
  const bucketOf = (which) => (which === null ? b : b.descriptors[which]);
  const rate = chain.length
    ? Math.min(...chain.map(({ i }) => bucketOf(i).tokensPerFill / (bucketOf(i).fillIntervalMs / 1000)))
    : 20;
  const host = hostFor(r.domains);
  const query = Object.entries(cls.req.query)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
    .join('&');
  return {
    id: `${
      (r.match.path ?? r.match.prefix ?? 'regex')
        .replace(/[^a-z0-9]+/gi, '-')
        .replace(/^-|-$/g, '')
        .toLowerCase() || 'root'
    }${first ? '' : `-${cls.name}`}`,
    numbers: chain.flatMap(({ i }) =>
      bucketNumbers(
        bucketOf(i),
        (p) => knob(i, p),
        { at: b.at, path: b.path, descriptor: i ?? undefined },
        i === null ? b.stat : `${b.stat} ${cls.why}`,
      ),
    ),
    build: buildOf(b, chain, knob),
    exempt: !chain.length,
    status: b.status,
    rate,
    burst: chain.length ? Math.min(...chain.map(({ i }) => bucketOf(i).maxTokens)) : 10,
    keys: chainKeys(r, b, chain),
    shared: true,
    drainS: Math.max(
      0,
      ...chain.map(
        ({ i }) => (bucketOf(i).maxTokens / bucketOf(i).tokensPerFill) * (bucketOf(i).fillIntervalMs / 1000),
      ),
    ),
    place: { place: r.place, ssl: false, http2: false },
    host,
    class: `${cls.name}: ${cls.why}`,
    slots: [
      {
        path: `${cls.req.path}${query ? `?${query}` : ''}`,
        headers: { ...(host ? { host } : {}), ...cls.req.headers },
      },
    ],
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
    const base = { path: pathFor(r), host: hostFor(r.domains), headers: {}, query: {} };
    classesOf(r, base).forEach((cls, i) => targets.push({ ...classTarget(r, cls, knobOf, i === 0), label, at: r.at }));
  }
  return { targets, routes };
}
