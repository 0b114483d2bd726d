/*
 * The targets the lab loads in a team's Traefik config (lab/policy/traefik/read.mjs's reading):
 * per router with a rateLimit middleware, one target whose model is Traefik's bucket
 * (thresholds/models/rate-reservation.js), its numbers (average, period, burst) as knobs. A
 * router's middleware has a bucket per source of its own: keyed by a header, or by
 * X-Forwarded-For that reaches it, each case sends a source of its own and they run together;
 * keyed by the address (k6's 127.0.0.1) or the Host, they share one and run one after another.
 */
import { knobName } from '../nginx/targets.mjs';
import { SLOTS } from '../nginx/explore.mjs';
import { traefikLimits } from '../../../thresholds/models/rate-reservation.js';

/**
 * One number of a router's middleware `m` ({middleware, atOf, via?}), its `type`'s field `key`,
 * where it stands (`path`: the key the render rewrites), as the knob `named`.
 */
const middlewareNumber = (m, type, knob, whose, { named, key, kind, value, what }) => ({
  knob: knob(named),
  kind,
  value,
  ...(kind === 'count' ? { min: 1 } : {}),
  at: m.atOf[key],
  path: ['http', 'middlewares', m.middleware, type, key],
  param: key,
  doc: `${whose}: ${type} ${m.middleware}'s ${what} (${m.atOf[key]})${m.via ? `, put by ${m.via}` : ''}`,
});

/** The numbers of a router's limit, each where it stands: its rateLimit's, and its inFlightReq's amount. */
function numbersOf(r, knob, whose) {
  const l = r.limit;
  const n = (key, kind, value, what) =>
    middlewareNumber(l, 'rateLimit', knob, whose, { named: key, key, kind, value, what });
  return [
    n('average', 'count', l.average, 'average, requests per period'),
    n('period', 'seconds', l.periodS, 'period in s'),
    n('burst', 'count', l.burst, 'burst'),
    ...(l.inFlight
      ? [
          middlewareNumber(l.inFlight, 'inFlightReq', knob, whose, {
            named: 'in_flight',
            key: 'amount',
            kind: 'count',
            value: l.inFlight.amount,
            what: 'amount, requests of a source in progress at once',
          }),
        ]
      : []),
  ];
}

/** The model of a router's limit under the knobs `k`: its bucket, and its inFlightReq in the chain's order. */
function policyOf(l, k, knob) {
  const bucket = { average: k[knob('average')], periodS: k[knob('period')], burst: k[knob('burst')] };
  if (!l.inFlight) return { kind: 'rate_reservation', ...bucket };
  const inFlight = { inFlight: k[knob('in_flight')] };
  return { kind: 'traefik_chain', steps: l.inFlight.first ? [inFlight, bucket] : [bucket, inFlight] };
}

const CLASS = {
  address: () => 'the client address',
  header: (c) => `the header ${c.header}`,
  host: () => 'the Host',
  forwarded: (c) =>
    c.depth > 0
      ? `X-Forwarded-For's address ${c.depth} from the right`
      : `X-Forwarded-For's right-most address not in excludedIPs (${c.excludedIPs.join(', ')})`,
};

// Addresses the lab sends as clients behind a forwarder: the first documentation range none of
// whose addresses a limit excludes.
const RANGES = ['192.0.2', '198.51.100', '203.0.113'];
// What stands right of the client in X-Forwarded-For, for a depth above 1: a forwarder nearer Traefik.
const NEARER = '203.0.113.254';

/** X-Forwarded-For per case, keyed as `c` reads it, or null where no range is free of excludedIPs. */
function forwardedValues(c) {
  const range = RANGES.find((p) =>
    Array.from({ length: SLOTS }, (_, i) => `${p}.${i + 1}`).every((a) => !c.excluded?.check(a)),
  );
  if (!range) return null;
  const nearer = Array(Math.max(c.depth - 1, 0)).fill(NEARER);
  return Array.from({ length: SLOTS }, (_, i) => [`${range}.${i + 1}`, ...nearer].join(', '));
}

/**
 * What each case of a router sends and whether its cases share a bucket: {slots, shared, how}.
 * A header of the lab's per case where the limit reads a header, or X-Forwarded-For that reaches
 * it; else one request for all, on the one bucket of 127.0.0.1, the router's Host or the source
 * '' (X-Forwarded-For deleted by an entry point that trusts no forwarder, or every address excluded).
 */
function sourcesOf(r) {
  const c = r.limit.criterion;
  const base = { path: r.path, headers: r.host ? { host: r.host } : {} };
  const perCase = (header, values, how) => ({
    slots: values.map((v) => ({ ...base, headers: { ...base.headers, [header]: v } })),
    shared: false,
    how,
  });
  const one = (how) => ({ slots: [base], shared: true, how });
  if (c.by === 'header')
    return perCase(
      c.header.toLowerCase(),
      Array.from({ length: SLOTS }, (_, i) => `lab-key-${i + 1}`),
      'one bucket per value of the header: each case sends its own',
    );
  if (c.by === 'host') return one("one bucket per Host: every case sends the router's");
  if (c.by === 'address') return one('one bucket per address: every case, from 127.0.0.1, shares it');
  if (!r.keepsForwarded)
    return one(
      `entryPoint ${r.entryPoint} trusts no forwarder (forwardedHeaders): Traefik deletes X-Forwarded-For, so every request's source is '', one bucket for all clients`,
    );
  const values = forwardedValues(c);
  if (!values)
    return one(`every address the lab could send is in excludedIPs: every request's source is '', one bucket for all`);
  return perCase('x-forwarded-for', values, 'one bucket per forwarded address: each case sends its own');
}

/**
 * One router as a target, `sharers` the routers with cases whose limit is its middleware: its
 * knobs are named by the router, or by the middleware where several share it (each router has
 * buckets of its own, as Traefik builds a middleware per router, and one set of numbers).
 */
function routerTarget(r, sharers) {
  const l = r.limit;
  const owner = sharers.length > 1 ? l.middleware : r.router;
  const knob = (param) => knobName(owner, param);
  const { rate, burst, ttlS } = traefikLimits(l);
  const sources = sourcesOf(r);
  const whose = `router${sharers.length > 1 ? 's' : ''} ${sharers.join(', ')}`;
  return {
    id: knobName(r.router) || 'router',
    label: `router ${r.router}`,
    at: r.at,
    numbers: numbersOf(r, knob, whose),
    build: (k) => policyOf(l, k, knob),
    // Its inFlightReq's cases: requests held by the backend, twice its amount in progress, then half.
    ...(l.inFlight
      ? { conns: [{ zone: l.inFlight.middleware, conn: l.inFlight.amount, knob: knob('in_flight'), status: 429 }] }
      : {}),
    exempt: l.average === 0,
    status: 429,
    rate: Number.isFinite(rate) ? rate : 0,
    burst,
    keys: [{ zone: `rateLimit ${l.middleware} (${l.at}), by ${CLASS[l.criterion.by](l.criterion)}`, how: sources.how }],
    shared: sources.shared,
    // A bucket is full again once refilled, or once dropped after its ttl idle (whole seconds,
    // whatever --quick does to the rate), whichever is sooner.
    drainS: Number.isFinite(rate) ? burst / rate : 0,
    dropS: ttlS,
    place: { place: r.place, ssl: r.tls, http2: false },
    host: r.host,
    class: `by ${CLASS[l.criterion.by](l.criterion)}`,
    slots: sources.slots,
  };
}

/** The Traefik targets of `policy`: {targets, routes} (routes: the Policy tab's words per router). */
export function traefikTargets(policy) {
  const targets = [];
  const routes = [];
  const users = new Map(); // a limiting middleware -> its routers with cases
  for (const r of policy.routes.filter((x) => !x.none))
    users.set(r.limit.middleware, [...(users.get(r.limit.middleware) ?? []), r.router]);
  for (const r of policy.routes) {
    if (r.none) routes.push({ route: `router ${r.router}`, at: r.at, none: r.none });
    else targets.push(routerTarget(r, users.get(r.limit.middleware)));
  }
  return { targets, routes };
}
