/*
 * The targets the lab loads in a team's Traefik config (lab/policy/traefik/read.mjs's reading):
 * per router with a rateLimit middleware, one target whose model is Traefik's bucket
 * (thresholds/models/rate-reservation.js), its numbers (average, period, burst) as knobs. A
 * router's middleware has a bucket per source of its own: k6 sends from 127.0.0.1 (with one Host
 * and one header value), so its cases share one and run one after another.
 */
import { knobName } from '../nginx/targets.mjs';
import { traefikLimits } from '../../../thresholds/models/rate-reservation.js';

/** The numbers of a router's limit, each where it stands (`path`: the key the render rewrites). */
function numbersOf(r, knob) {
  const l = r.limit;
  const n = (param, kind, value, key, what) => ({
    knob: knob(param),
    kind,
    value,
    ...(kind === 'count' ? { min: 1 } : {}),
    at: l.atOf[key],
    path: ['http', 'middlewares', l.middleware, 'rateLimit', key],
    param,
    doc: `router ${r.router}: rateLimit ${l.middleware}'s ${what} (${l.atOf[key]})`,
  });
  return [
    n('average', 'count', l.average, 'average', 'average, requests per period'),
    n('period', 'seconds', l.periodS, 'period', 'period in s'),
    n('burst', 'count', l.burst, 'burst', 'burst'),
  ];
}

const CLASS = {
  address: () => 'the client address',
  header: (c) => `the header ${c.header}`,
  host: () => 'the Host',
};

/** The request of a router's cases: its path, its Host, and the header it is told apart by. */
function slotOf(r) {
  const c = r.limit.criterion;
  return {
    path: r.path,
    headers: { ...(r.host ? { host: r.host } : {}), ...(c.by === 'header' ? { [c.header.toLowerCase()]: 'lab' } : {}) },
  };
}

/** One router as a target. */
function routerTarget(r) {
  const l = r.limit;
  const knob = (param) => knobName(r.router, param);
  const { rate, burst, ttlS } = traefikLimits(l);
  return {
    id: knobName(r.router) || 'router',
    label: `router ${r.router}`,
    at: r.at,
    numbers: numbersOf(r, knob),
    build: (k) => ({
      kind: 'rate_reservation',
      average: k[knob('average')],
      periodS: k[knob('period')],
      burst: k[knob('burst')],
    }),
    exempt: l.average === 0,
    status: 429,
    rate: Number.isFinite(rate) ? rate : 0,
    burst,
    keys: [
      {
        zone: `rateLimit ${l.middleware} (${l.at}), by ${CLASS[l.criterion.by](l.criterion)}`,
        how: 'one bucket per source in this router: every case, from one client, shares it',
      },
    ],
    shared: true,
    // A bucket is full again once refilled, or once dropped after its ttl idle, whichever is sooner.
    drainS: Number.isFinite(rate) ? Math.min(burst / rate, ttlS) : 0,
    place: { place: r.place, ssl: r.tls, http2: false },
    host: r.host,
    class: `by ${CLASS[l.criterion.by](l.criterion)}`,
    slots: [slotOf(r)],
  };
}

/** The Traefik targets of `policy`: {targets, routes} (routes: the Policy tab's words per router). */
export function traefikTargets(policy) {
  const targets = [];
  const routes = [];
  for (const r of policy.routes) {
    if (r.none) routes.push({ route: `router ${r.router}`, at: r.at, none: r.none });
    else targets.push(routerTarget(r));
  }
  return { targets, routes };
}
