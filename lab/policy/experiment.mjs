/*
 * A team's policy (lab/policy/index.mjs) as an experiment of the limiter kind: a target per
 * limited route, with the model of what it meets (several limit_req, Envoy's local rate limit),
 * and cases that tell its numbers apart, shaped by the suite: under its rate, filling its burst,
 * a sustained overload, and where the cases share a bucket, the recovery right after it.
 *
 * Every case must meet the limiter state the model gives it. Where nginx computed a key of its own
 * for each case (its slot's client: lab/policy/nginx/explore.mjs), each meets a fresh bucket, and
 * the cases run together. A bucket cases share (a constant or $server_name key, Envoy's buckets,
 * which are per route or per listener) is met fresh by each case only after it has drained: those
 * cases run one after another, each after a pause that empties (nginx) or refills (Envoy) the
 * bucket, but the recovery, which meets it as the overload before it left it (the model runs the
 * two on one bucket: a case's `follows`). The plan says which, per route.
 */
import { policyName, slug } from './name.mjs';
import { proxyOf } from './proxies/index.mjs';
import { placePorts } from './ports.mjs';
import { pauseAt } from './words.mjs';
import machineRate from '../../thresholds/machine-rate.js';
import { FORGET_MS } from '../../thresholds/models/accept-rate.js';
import { runsLength } from '../../thresholds/key-runs.js';
import { JITTER_MS } from '../../thresholds/models/limiter-replay.js';

// The highest rate this machine kind sends and judges exactly (generated from `bench limiter-rate`).
/** What this machine judges exactly behind `proxy`, r/s (its recorded `bench limiter-rate`). */
const judgedRateOf = (proxy) => machineRate.judgedRates?.[proxy] ?? machineRate.unbenchedRate;
// What TLS costs per request against plain HTTP, at most (`bench tls`).
const TLS_COST = machineRate.tlsCost ?? 1;

/** What the machine judges behind a target's place, r/s of the run: `judged`, less TLS's cost on a TLS listener. */
const placeTop = (t, judged) => judged / (t.place?.ssl ? TLS_COST : 1);

/** Every place the policy listens on, in the file's order (the stack's ports follow it). */
export const policyPlaces = (policy) => proxyOf(policy).places(policy);

/**
 * A fill of a bucket of `burst` refilled at `R` r/s, at most `top` r/s (the machine's judged rate
 * at the run's --quick): twice burst and rate, for a second or as long as 24 requests take (5 s
 * at most); where that is more than the machine judges, `top`, as long as it takes to empty the
 * burst and 2 s more of limiting (a minute at most): the 200s past the burst tell its size, and a
 * longer fill only holds the machine at its top longer than the bench measured it (10 s a rate).
 * Null where even `top` cannot reach the limit.
 */
function fillStep(R, burst, top) {
  const at = (x) => Math.max(1, Math.round(x));
  const want = at(2 * (R + burst));
  if (want <= top) return { rate: want, seconds: Math.min(5, Math.max(1, Math.ceil(24 / want))) };
  const rate = Math.floor(top);
  if (rate <= R * 1.1) return null;
  return { rate, seconds: Math.min(60, Math.max(1, Math.ceil((burst + 1) / (rate - R)) + 2)) };
}

/** Where a fill needs more than the machine judges, the refusal naming the rate it needs. */
function tooFast(id, t, top, factor, judged) {
  throw new Error(
    `${id}: its bucket (${t.burst} refilled at ${t.rate} r/s) fills only above ${Math.ceil(t.rate * 1.1 * factor)} r/s, and this machine judges at most ${judged} r/s exactly behind this proxy (thresholds/machine-rate.js, \`./labw bench limiter-rate\`)${factor > 1 ? `; without --quick it needs ${Math.ceil(t.rate * 1.1)} r/s` : ''}`,
  );
}

/**
 * Where the route's cases share its bucket (`t.shared`), or its limiter remembers an overload
 * past it (`t.lingers`), the overload and, with no pause between, half the route's rate for as
 * long as its bucket takes to be fresh again and 2 s more (a minute at most), meeting the bucket
 * as the overload left it (its key, where each case has its own): how soon a client that slowed
 * down is let back in. nginx's and Envoy's buckets let it in at once; HAProxy's window still
 * counts the requests it refused, for up to two periods; a flag set on the overload refuses it
 * until the entry expires. Else the overload alone: a case with a bucket of its own would meet
 * the slower load as the `under` case does.
 */
function overloadSteps(id, t, over) {
  if (!t.shared && !t.lingers) return [over];
  const seconds = Math.min(60, Math.max(5, Math.ceil(t.drainS) + 2));
  return [
    { ...over, afterS: 0 },
    { name: 'recover', rate: Math.max(1, Math.round(t.rate / 2)), seconds, targets: [id], follows: over.name },
  ];
}

/**
 * The load steps of one route, per suite, from its binding rate R and burst B (r/s, requests);
 * the load knobs (LOAD_KNOBS), where set, give the spike's and the soak's rates and length instead.
 */
function steps(id, t, k, factor, judged) {
  // The machine's judged rate, in the seed time the steps are written in (--quick multiplies),
  // less what TLS costs on a TLS listener.
  const top = placeTop(t, judged) / factor;
  // A frontend whose only limit is its accept limit has its sessions cases alone.
  if (t.acceptOnly) return acceptOnlySteps(t, k, factor, top);
  const R = t.rate;
  // Whole requests per second: k6's arrival rates are whole numbers per time unit.
  const at = (x) => Math.max(1, Math.round(x));
  const chosen = k.load_rates.length > 0;
  const fill =
    fillStep(R, t.burst, top) ??
    (t.exempt ? { rate: at(Math.min(top, 2 * (R + t.burst))), seconds: 1 } : tooFast(id, t, top, factor, judged));
  // A class no zone counts (an allow-listed client) has one case: the load its route's others fill with.
  if (t.exempt)
    return {
      smoke: [{ name: 'smoke', rate: at(R / 2), seconds: 2, targets: [id] }],
      spike: [{ name: 'fill', ...fill, targets: [id] }],
      soak: [{ name: 'over-long', rate: at(Math.min(top, 2 * R)), seconds: k.load_seconds || 60, targets: [id] }],
    };
  return {
    smoke: [{ name: 'smoke', rate: at(R / 2), seconds: 2, targets: [id] }],
    spike: chosen
      ? k.load_rates.map((r) => ({ name: `${r}rps`, rate: r, seconds: k.load_seconds || 10, targets: [id] }))
      : [
          // A small table filled past its size, first, while it is empty (evictSteps).
          ...evictSteps(t, k, factor),
          // Under its rate for 10 s: nothing limited, nothing waits long.
          { name: 'under', rate: at(R / 2), seconds: 10, targets: [id] },
          // The burst filled and the rest limited, by the burst's size (fillStep).
          { name: 'fill', ...fill, targets: [id] },
          // Three times its rate (at most the machine's), long enough to fill its burst half as much
          // again (5 s at least, a minute at most): what it lets through in a sustained overload.
          // Where the machine cannot send twice its rate, the fill, past its burst, already says.
          ...(Math.min(3 * R, top) >= 2 * R
            ? overloadSteps(id, t, {
                name: 'over',
                rate: at(Math.min(3 * R, top)),
                seconds: Math.min(60, Math.max(5, Math.ceil((1.5 * t.burst) / (2 * R)))),
                targets: [id],
              })
            : []),
          ...chainSteps(id, t),
          ...connSteps(id, t, k),
          ...sessionSteps(t, k, factor, top),
        ],
    soak: [
      {
        name: 'over-long',
        rate: chosen ? Math.max(...k.load_rates) : at(Math.min(2 * R, top)),
        seconds: k.load_seconds || 60,
        targets: [id],
      },
    ],
  };
}

/**
 * Where a route meets several limit_req, the faster ones hide the slower one's burst from the
 * cases above: per limit but the fastest, a load between its rate and the next one's, in whole
 * r/s, long enough (at most 30 s) to fill its burst half as much again; none where no whole rate
 * lies between.
 */
function chainSteps(id, t) {
  return (t.chain ?? []).slice(0, -1).flatMap((l, i) => {
    const rate = Math.ceil(t.chain[i + 1].rate) - 1;
    if (rate <= l.rate) return [];
    const seconds = Math.min(30, Math.ceil((1.5 * l.burst + 2) / (rate - l.rate)));
    return [{ name: `fill-${l.zone.replace(/_/g, '-')}`, rate, seconds, targets: [id] }];
  });
}

/**
 * Per limit_conn a class meets, two loads under its limit_req's rate (half of it, 20 r/s at most;
 * 20 r/s where no limit_req counts it), each answer held by the backend so that the requests in
 * progress are twice its number (it binds: about half are rejected) or half of it (it must not),
 * for three holds or 5 s at least. The hold is the load knob conn_hold_s where set.
 */
function connSteps(id, t, k) {
  return (t.conns ?? []).flatMap((c) => {
    const n = k[c.knob];
    const { rate, hold } = connLoad(t, k);
    // Where twice its number in progress takes more than a third of a minute's case, it cannot bind.
    if (!k.conn_hold_s && hold(2 * n) > CONN_HOLD_MOST_S) return [];
    const step = (name, holdS) => ({
      name,
      rate,
      seconds: Math.min(60, Math.max(5, Math.ceil(3 * holdS))),
      holdS,
      status: c.status,
      targets: [id],
    });
    const zone = c.zone.replace(/_/g, '-');
    return [step(`conn-${zone}`, hold(2 * n)), step(`conn-${zone}-free`, hold(n / 2))];
  });
}

// How long a sessions case sends, s of the run's own (its limit's second does not shrink with
// --quick): its waits grow from the second second on.
const SESSIONS_S = 2;

/**
 * Where the route's frontend accepts at most N connections a second (HAProxy's rate-limit
 * sessions), one load that opens a connection per request at 1.5 N (at most the machine's top,
 * none below 1.25 N) for SESSIONS_S: the first N are accepted at once, the next wait for the
 * second to pass, and the rest are accepted N a second, the wait growing as the load goes on; the
 * rules see each request only then.
 */
function sessionSteps(t, k, factor, top) {
  if (!t.sessions || t.sessions.unplanned) return [];
  const n = k[t.sessions.knob];
  const rate = Math.floor(Math.min(1.5 * n, top));
  if (rate < 1.25 * n) return [];
  return [{ name: 'sessions', rate, seconds: SESSIONS_S * factor, connects: true, targets: [t.id] }];
}

/**
 * A route whose only limit is its frontend's accept limit: a connection per request under it
 * (half of N, for SESSIONS_S: none waits) for a smoke, then over it (sessionSteps) for a spike;
 * a soak under it for a minute (four fifths of N: the counter never reaches it).
 */
function acceptOnlySteps(t, k, factor, top) {
  const n = k[t.sessions.knob];
  const under = (name, share, seconds) => ({
    name,
    rate: Math.max(1, Math.floor(Math.min(share * n, top))),
    seconds,
    connects: true,
    targets: [t.id],
  });
  return {
    smoke: [under('sessions-under', 0.5, SESSIONS_S * factor)],
    spike: [under('sessions-under', 0.5, SESSIONS_S * factor), ...sessionSteps(t, k, factor, top)],
    soak: [under('sessions-long', 0.8, k.load_seconds || 60)],
  };
}

// How much of its limit's window an evict case takes at most: its own key's count, all in the
// window's first period (the counter's grid starts at its first request), still holds it over the
// limit when it comes back.
const EVICT_WINDOW_SHARE = 3 / 4;
// The least rate of an evict case, r/s of the seed's time, and past which its rate climbs without
// end (its gaps, which grow with it, outgrow its window).
const EVICT_LEAST_RATE = 10;
const EVICT_RATE_MOST = 100_000;

/**
 * An evict case's keys and rate under the knobs `k` at --quick x`factor`: {runs, rate, seconds},
 * or null where no rate fits it in its window. Its own key goes over the limit (2 L + 1
 * requests); S - 1 fresh keys fill the table (S its size), its own the oldest; its own again is
 * still refused (kept); S fresh keys more trash the oldest, its own last, as it was touched after
 * the first ones (stick-table-store.js); its own again is let in, counted afresh. A table one
 * smaller trashes its own in the fill, one larger keeps it: both give other counts. Between the
 * runs, requests with no key (no table tracks them) for longer than k6's lateness the model
 * allows (JITTER_MS), so that no request of one run lands among the next one's. It takes at most
 * three quarters of the window and half the expire, so that nothing is forgotten meanwhile.
 */
function evictLoad(t, k, factor = 1) {
  const { size, limit, windowS, expireS } = t.evict.load(k);
  const back = Math.max(1, Math.min(5, limit));
  const fresh = (count) => ({ count, fresh: t.evict.type });
  const own = (count) => ({ count, own: true });
  const runsAt = (rate) => {
    const gap = { count: Math.ceil((JITTER_MS * rate * factor) / 1000) + 1, none: true };
    return [own(2 * limit + 1), gap, fresh(size - 1), gap, own(back), gap, fresh(size), gap, own(back)];
  };
  const least = (n) =>
    Math.max(EVICT_LEAST_RATE, Math.ceil(n / (windowS * EVICT_WINDOW_SHARE)), Math.ceil(n / (expireS / 2)));
  // The gaps grow with the rate: the least rate that holds its own runs, found by climbing to it.
  let rate = EVICT_LEAST_RATE;
  for (let need = least(runsLength(runsAt(rate))); need > rate; need = least(runsLength(runsAt(rate)))) {
    rate = need;
    if (rate > EVICT_RATE_MOST) return null;
  }
  const runs = runsAt(rate);
  return { runs, rate, seconds: runsLength(runs) / rate };
}

/** Where the route's table is small enough to fill (t.evict), one evict case (evictLoad), first. */
function evictSteps(t, k, factor) {
  if (!t.evict?.planned) return [];
  const load = evictLoad(t, k, factor);
  if (!load) return [];
  const { header, param } = t.evict;
  return [
    {
      name: 'evict',
      rate: load.rate,
      seconds: load.seconds,
      keyRuns: { ...(header ? { header } : { param }), runs: load.runs },
      targets: [t.id],
    },
  ];
}

/**
 * Whether a route's table size gets its evict case at the file's numbers (`t.evict.planned` and
 * the most --quick it takes, `t.evict.quickMost`, set here), or why not, in words: where its rate
 * is more than the machine judges.
 */
function evictUnplanned(t, judged, knobs) {
  if (!t.evict) return [];
  const top = placeTop(t, judged);
  const fits = (factor) => {
    const load = evictLoad(t, knobs, factor);
    return load !== null && load.rate * factor <= top;
  };
  t.evict.planned = fits(1);
  let most = 1;
  // (Its least rate bounds the climb: the factor times it stays within `top`.)
  while (t.evict.planned && fits(most + 1)) most += 1;
  t.evict.quickMost = most;
  if (t.evict.planned) return [];
  const load = evictLoad(t, knobs);
  return [
    `stick-table size ${t.evict.load(knobs).size} (${t.evict.at}): no evict case: ${load ? `filling it twice within its window takes ${load.rate} r/s, more than this machine judges exactly behind this proxy (${Math.floor(top)} r/s)` : "no rate fills it twice within its window with room for k6's lateness between"}`,
  ];
}

// A name of the lab's own at 127.0.0.1 (k6's hosts option), for the cases that open a connection
// per request: an origin no other case sends to, so that no VU has a connection open to it.
export const CONNECTS_HOST = 'lab-connects.test';

// The longest a conn case holds each answer by the lab's choice, s: three holds fill its minute.
const CONN_HOLD_MOST_S = 20;

/**
 * A conn case's rate (half the route's, 20 r/s at most; 20 r/s where no rate counts it) and its
 * hold for N requests in progress, s (the load knob conn_hold_s where set).
 */
function connLoad(t, k) {
  const rate = Math.max(1, Math.floor(Math.min(20, (t.rate ?? 40) / 2)));
  return { rate, hold: (inFlight) => k.conn_hold_s || Math.round((inFlight / rate) * 1000) / 1000 };
}

/**
 * A target's accept limit no case can judge, and why, said on its route: its proxy's words, or a
 * limit whose sessions case (1.25 N at least: sessionSteps) is more than the machine judges (the
 * file's N; --quick stays within it: maxQuick).
 */
function sessionsUnplanned(t, judged) {
  if (!t.sessions) return [];
  const { at, limit, unplanned } = t.sessions;
  if (unplanned) return [`rate-limit sessions (${at}): ${unplanned}`];
  const top = placeTop(t, judged);
  if (1.25 * limit <= top) return [];
  return [
    `rate-limit sessions ${limit} (${at}): no case over it: ${Math.ceil(1.25 * limit)} connections a second or more is more than this machine judges exactly behind this proxy (${Math.floor(top)} r/s)`,
  ];
}

/** The conn limits of a target its cases cannot bind at the file's numbers, in words (said on its route). */
function connsUnplanned(t) {
  const { rate, hold } = connLoad(t, {});
  return (t.conns ?? [])
    .filter((c) => hold(2 * c.conn) > CONN_HOLD_MOST_S)
    .map(
      (c) =>
        `${c.zone}: no conn case: ${2 * c.conn} in progress at ${rate} r/s would need each answer held ${hold(2 * c.conn)} s (more than ${CONN_HOLD_MOST_S} s; conn_hold_s=S sets one)`,
    );
}

// The load, settable as knobs (not the policy's: the sensitivity leaves them alone).
const LOAD_KNOBS = {
  load_rates: {
    default: [],
    kind: 'counts',
    load: true,
    doc: "spike: one step per rate (r/s) and route, instead of the lab's choice (under its rate, filling its burst, a sustained overload and the recovery after it); soak: the largest",
  },
  load_seconds: {
    default: 0,
    kind: 'count',
    load: true,
    doc: "spike and soak: each step's length in s (0: the lab's, 10 s and 60 s)",
  },
  conn_hold_s: {
    default: 0,
    kind: 'holdSeconds',
    load: true,
    doc: "limit_conn cases: how long the backend holds each answer, in s (0: the lab's, so that twice or half the limit's number are in progress)",
  },
};

/** Every route of the file, as the Policy tab lists it, and the targets the lab plans cases for (ids unique). */
function routeTargets(policy, judged) {
  const { targets, routes: unplanned } = proxyOf(policy).targets(policy);
  const used = new Set();
  const routes = [];
  for (const t of targets) {
    let id = t.id ?? slug(t.path);
    while (used.has(id)) id = `${id}-2`;
    used.add(id);
    t.id = id;
    // What a case cannot judge at the file's numbers, said on the route.
    const fileKnobs = Object.fromEntries(t.numbers.map((n) => [n.knob, n.value]));
    const unplanned = [
      ...connsUnplanned(t),
      ...sessionsUnplanned(t, judged),
      ...(t.unplanned ?? []),
      ...evictUnplanned(t, judged, fileKnobs),
    ];
    routes.push({
      route: t.label,
      class: t.class,
      at: t.at,
      target: id,
      keys: t.keys,
      shared: t.shared,
      ...(t.connShared ? { connShared: true } : {}),
      ...(t.sessions ? { sessions: true } : {}),
      ...(t.evict?.planned ? { evict: true } : {}),
      ...(t.lingers && !t.shared ? { lingers: true } : {}),
      ...(unplanned.length ? { unplanned } : {}),
    });
  }
  routes.push(...unplanned);
  if (!targets.length)
    throw new Error(
      `${policy.file}: no route the lab can plan cases for:\n  ${unplanned.map((r) => `${r.route} (${r.at}): ${r.none}`).join('\n  ')}`,
    );
  return { routes, targets };
}

/**
 * One shared bucket puts every case one after another, each after the longest a bucket takes to
 * be fresh again (and a second): {sequential, drains (words.mjs's pauseAt)}, said on each planned route.
 */
function casePacing(routes, targets) {
  // Shared within a target (its slots' keys), or across targets (one key met on two routes).
  const seen = new Set();
  const across = targets.some((t) =>
    (t.slotKeys ?? []).some((keys) =>
      Object.entries(keys).some(([zone, key]) => {
        const k = `${zone}\u0000${key}|${t.id}`;
        const other = [...seen].some((x) => x.startsWith(`${zone}\u0000${key}|`) && !x.endsWith(`|${t.id}`));
        seen.add(k);
        return other && key !== '';
      }),
    ),
  );
  // A frontend's accept limit counts every connection to it, whichever case opened it; a small
  // table keeps the entries of every case that came before.
  const sequential = across || targets.some((t) => t.shared || t.connShared || t.sessions || t.evict?.planned);
  // A conn case's last answers are held past its end: the next case waits for them too.
  const holds = targets.flatMap((t) => (t.conns ?? []).map((c) => [connLoad(t, {}).hold(2 * c.conn), null]));
  // An accept limit forgets the connections of a case two of its one-second periods after it, in
  // the run's own seconds (--quick does not shorten HAProxy's second): a drop, never a refill.
  const accepts = targets.some((t) => t.sessions) ? [[Number.MAX_SAFE_INTEGER, FORGET_MS / 1000]] : [];
  const drains = sequential ? [...targets.map((t) => [t.drainS, t.dropS ?? null]), ...holds, ...accepts] : [];
  // Said where it is shown (lab/policy/words.mjs), at the run's --quick factor.
  for (const r of routes.filter((x) => x.target))
    r.pacing = {
      sequential,
      drains,
      shared: r.shared,
      ...(r.connShared ? { connShared: true } : {}),
      ...(r.sessions ? { sessions: true } : {}),
      ...(r.evict ? { evict: true } : {}),
      ...(r.lingers ? { lingers: true } : {}),
    };
  return { sequential, drains };
}

/** The experiment's knobs (the load's and every number of the file) and where each number stands. */
function knobsOf(targets) {
  // The hold of limit_conn's cases, where a class meets one.
  const { conn_hold_s: hold, ...load } = LOAD_KNOBS;
  const knobs = { ...load, ...(targets.some((t) => t.conns?.length) ? { conn_hold_s: hold } : {}) };
  const numbers = new Map(); // knob -> where it stands in the file
  for (const n of targets.flatMap((t) => t.numbers)) {
    knobs[n.knob] = {
      default: n.value,
      kind: n.kind,
      doc: n.doc,
      ...(n.values ? { values: n.values } : {}),
      ...(n.min ? { min: n.min, minWhy: 'the proxy refuses less' } : {}),
    };
    numbers.set(n.knob, { at: n.at, path: n.path, param: n.param, unit: n.unit, descriptor: n.descriptor });
  }
  return { knobs, numbers };
}

/**
 * Each suite's steps over `targets`, at most `judged` r/s, a pause apart where buckets are shared
 * (`afterS`, in the run's seconds at its --quick factor), unless a step asks for its own.
 */
function suitesOf(targets, judged, drains) {
  const suites = {};
  for (const suite of ['smoke', 'spike', 'soak']) {
    suites[suite] = (k, { factor = 1 } = {}) => {
      const all = targets.flatMap((t) => steps(t.id, t, k, factor, judged)[suite]);
      // The holds the knobs give (conn_hold_s), beside the file's: the longest one's answers end first.
      const held = all.filter((s) => s.holdS).map((s) => [s.holdS, null]);
      return all.map((s) => ({ ...(drains.length ? { afterS: pauseAt([...drains, ...held], factor) } : {}), ...s }));
    };
  }
  return suites;
}

/**
 * One target as the plan meets it under the knobs `k`: its service, its policy, and where its
 * cases send (a place of the file's at the lab's `ports`, TLS where it is) and what each sends:
 * its slot's path and headers (its proxy's targets: lab/policy/proxies/).
 */
function targetOf(t, k, service, ports) {
  const scheme = t.place.ssl ? 'https' : 'http';
  const port = ports[t.place.place];
  return {
    id: t.id,
    service,
    path: t.slots[0].path,
    limitedStatus: t.status,
    policy: t.build(k),
    request: {
      origin: `${scheme}://${t.host ?? '127.0.0.1'}:${port}`,
      http2: Boolean(t.place.http2),
      slots: t.slots,
      // Where its sessions cases send, each request on a connection of its own.
      ...(t.sessions ? { connectOrigin: `${scheme}://${CONNECTS_HOST}:${port}` } : {}),
    },
    // Its frontend's accept limit under the knobs, where it has one: what its other cases stay under.
    ...(t.sessions ? { sessions: { ...t.sessions, limit: k[t.sessions.knob] } } : {}),
  };
}

/**
 * The experiment of a policy read from `file` ({proxy, routes, ...}): {experiment, routes} where
 * routes says, for every route, its target id and how its cases meet their buckets, or why it
 * has no cases. `name`: the experiment's (default: lab/policy/name.mjs's, said in `namedFrom`).
 */
export function policyExperiment(policy, { name: given = null } = {}) {
  const { name, from } = policyName(policy.file, policy.says, given);
  const judged = judgedRateOf(policy.proxy);
  const { routes, targets } = routeTargets(policy, judged);
  const { sequential, drains } = casePacing(routes, targets);
  // The stack's ports (lab/policy/stack.mjs), by the same order of places.
  const ports = placePorts(policyPlaces(policy));
  const suites = suitesOf(targets, judged, drains);
  const { knobs, numbers } = knobsOf(targets);
  // --quick multiplies every rate: as far as the judged rate stays twice the fastest refill, so a
  // fill gains on it by its own rate again.
  // An accept limit's case sends 1.5 N (sessionSteps): twice 0.75 N.
  const fastest = Math.max(
    ...targets.filter((t) => !t.exempt).map((t) => Math.max(t.rate ?? 0, 0.75 * (t.sessions?.limit ?? 0))),
    1,
  );
  const experiment = {
    name,
    namedFrom: from,
    kind: 'limiter',
    // An evict case's rate grows with --quick (evictLoad): at most the factor it still fits at.
    maxQuick: Math.min(
      Math.max(1, Math.floor(judged / (2 * fastest))),
      ...targets.filter((t) => t.evict?.planned).map((t) => t.evict.quickMost),
    ),
    // VUs per request in flight: a team's answers may be proxied (its backend shares the cores),
    // and a slow spell of a second at 1,600 r/s outlasts the seeds' quarter more.
    vuHeadroom: 3,
    // The most connections the proxy takes at once, where its config says ({limit, at, what}).
    connections: proxyOf(policy).connections?.(policy) ?? null,
    policyFile: policy.file,
    knobs,
    /**
     * The knobs' values placed where they stand in the file: [{at, path, param, unit, value}],
     * what the rendered config takes (its proxy's service: lab/policy/proxies/), --quick's scaling, a
     * what-if's and a --stack-knob's included.
     */
    placed: (k) => [...numbers].map(([knob, where]) => ({ ...where, value: k[knob] })),
    targets: (k) => targets.map((t) => targetOf(t, k, `${name}-${policy.proxy}`, ports)),
    // Names the cases' origins use, all at 127.0.0.1 (k6's hosts option): SNI and Host as deployed,
    // and the lab's own for the cases that open a connection per request.
    hosts: Object.fromEntries([
      ...targets.filter((t) => t.host).map((t) => [t.host, '127.0.0.1']),
      ...(targets.some((t) => t.sessions) ? [[CONNECTS_HOST, '127.0.0.1']] : []),
    ]),
    // Together where every case has a fresh bucket and their rates together stay within what the
    // machine judges exactly; else one after another.
    stepsTogether: (steps, factor) => !sequential && steps.reduce((a, s) => a + s.rate, 0) * factor <= judged,
    suites,
    seedFigures: {},
  };
  return { experiment, routes };
}
