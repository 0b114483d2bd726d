/*
 * A team's policy (lab/policy/index.mjs) as an experiment of the limiter kind: a target per
 * limited route, with the model of what it meets (several limit_req, Envoy's local rate limit),
 * and cases that tell its numbers apart, shaped by the suite: under its rate, filling its burst,
 * a sustained overload.
 *
 * Every case must meet the limiter state the model gives it. A key a case can carry on its own
 * (a header, an argument, a client address the rendered config keys by the case) gives each case
 * a fresh bucket, and the cases run together. A bucket every case shares (a constant or
 * $server_name key, Envoy's buckets, which are per route or per listener) is met fresh by each
 * case only after it has drained: those cases run one after another, each after a pause that
 * empties (nginx) or refills (Envoy) the bucket. The plan says which, per route.
 */
import { policyName, slug } from './name.mjs';

/** A knob's name from its parts: lower case letters, digits and underscores. */
const knobName = (...parts) =>
  parts
    .join('_')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_');

// Who shares a bucket, by the zone key's kind: a case can carry its own key, or all share one.
const OWN_KEY = {
  header: 'the case sends its own value of the header',
  argument: 'the case sends its own value of the argument',
  client: 'each case is one client: the rendered config keys the zone by the case',
};

/** The line of a file:line. */
const lineOf = (at) => at.split(':').pop();

/**
 * The knob of a number read from a directive: `<zone>_<param>` where the zone's limit_req (or
 * Envoy's bucket) appears once in the file, else `<zone>_l<line>_<param>`: one knob per place in
 * the file, however many routes meet it (an http-level limit_req, a listener's bucket).
 */
const knobAt = (base, at, unique, param) => knobName(base, ...(unique ? [] : [`l${lineOf(at)}`]), param);

/** A limit_req's numbers as knobs: its zone's rate, its burst, nodelay or delay, and the delay without nodelay. */
function limitNumbers(l, zone, knob) {
  const numbers = [
    {
      knob: knobName(zone.name, 'rate'),
      kind: 'rate',
      value: zone.perUnit,
      at: zone.at,
      param: 'rate',
      unit: zone.unit,
      doc: `${zone.name}: limit_req_zone rate (r/${zone.unit}, ${zone.at})`,
    },
    {
      knob: knob(l, 'burst'),
      kind: 'count',
      value: l.burst,
      at: l.at,
      param: 'burst',
      doc: `limit_req zone=${l.zone} burst (${l.at})`,
    },
    // nodelay or not, a switch: the sensitivity tries the other way too.
    {
      knob: knob(l, 'mode'),
      kind: 'choice',
      values: ['nodelay', 'delay'],
      value: l.nodelay ? 'nodelay' : 'delay',
      at: l.at,
      param: 'mode',
      doc: `limit_req zone=${l.zone} nodelay, or delay (${l.at})`,
    },
  ];
  if (!l.nodelay)
    numbers.push({
      knob: knob(l, 'delay'),
      kind: 'count',
      value: l.delay,
      at: l.at,
      param: 'delay',
      doc: `limit_req zone=${l.zone} delay (${l.at})`,
    });
  return numbers;
}

/** limit_req_dry_run as a switch knob, where the file sets it (`dry`), else none. */
const dryRunNumbers = (r, dry) =>
  dry
    ? [
        {
          knob: dry.knob,
          kind: 'choice',
          values: ['on', 'off'],
          value: r.dryRun.on ? 'on' : 'off',
          at: dry.at,
          param: 'dry_run',
          doc: `limit_req_dry_run (${dry.at})`,
        },
      ]
    : [];

/** The model's policy from the knobs' values: the route's limits as a limit_req chain. */
const chainFrom = (r, zones, knob, dry) => (k) => ({
  kind: 'limit_req_chain',
  dryRun: dry ? k[dry.knob] === 'on' : r.dryRun.on,
  limits: r.limits.map((l, i) => ({
    rateMilli: Math.floor((k[knobName(zones[i].name, 'rate')] * 1000) / (zones[i].unit === 'm' ? 60 : 1)),
    burst: k[knob(l, 'burst')],
    // Without nodelay, the file's delay (nginx's default, 0: every excess request waits).
    delay: k[knob(l, 'mode')] === 'nodelay' ? Infinity : (k[knob(l, 'delay')] ?? 0),
  })),
});

/** Where a request reaches the route: its path (and whether a regex), its Host, whether one can be sent. */
function routePlace(r) {
  const last = r.location.split(' > ').pop();
  return {
    path: last.replace(/^[=^~]+\s*/, ''),
    regex: /^~/.test(last),
    host: plainName(r.server.names),
    addressable: r.server.isDefault || plainName(r.server.names) !== null,
  };
}

/** A route's limits as the model's policy, and what it takes for a bucket to be fresh again. */
function nginxTarget(policy, r, uniqueZone, dryPlaces) {
  const zones = r.limits.map((l) => policy.zones[l.zone]);
  const shared = zones.filter((z) => !OWN_KEY[z.who.kind]);
  const binding = r.limits.reduce(
    (a, l, i) => (zones[i].rateMilli < policy.zones[a.zone].rateMilli ? l : a),
    r.limits[0],
  );
  const rate = policy.zones[binding.zone].rateMilli / 1000;
  // The longest a bucket takes to empty from its fullest: burst + 1 requests at its rate.
  const drainS = Math.max(...r.limits.map((l, i) => ((l.burst + 1) * 1000) / zones[i].rateMilli));
  const knob = (l, param) => knobAt(l.zone, l.at, uniqueZone(l.zone), param);
  const dry = r.dryRun.at.startsWith('(')
    ? null
    : { knob: dryPlaces.size === 1 ? 'dry_run' : knobName('dry_run', `l${lineOf(r.dryRun.at)}`), at: r.dryRun.at };
  return {
    // The numbers the file gives, as knobs: what the sensitivity moves, a what-if sets, and the
    // rendered config takes (at: where in the file, param: which of the directive's).
    numbers: [...r.limits.flatMap((l, i) => limitNumbers(l, zones[i], knob)), ...dryRunNumbers(r, dry)],
    build: chainFrom(r, zones, knob, dry),
    status: r.status.code,
    rate,
    burst: binding.burst,
    // Its limits from the slowest: a load between two rates fills the slower one's burst alone.
    chain: r.limits
      .map((l, i) => ({ zone: l.zone, rate: zones[i].rateMilli / 1000, burst: l.burst }))
      .sort((a, b) => a.rate - b.rate),
    keys: zones.map((z) => ({
      zone: z.name,
      key: z.key,
      ...z.who,
      how: OWN_KEY[z.who.kind] ?? 'one bucket every case shares',
    })),
    shared: shared.length > 0,
    drainS,
    ...routePlace(r),
    // The case's own key, where a zone keys by a header or an argument: the case id in it.
    keyHeaders: zones.filter((z) => z.who.kind === 'header').map((z) => z.who.name),
    keyArguments: zones.filter((z) => z.who.kind === 'argument').map((z) => z.who.name),
  };
}

/** A server name a request can carry as its Host (not a wildcard, a regex or the catch-all '_'), or null. */
const plainName = (names) => names.find((n) => /^[a-z0-9.-]+$/i.test(n) && n !== '_') ?? null;

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

/** An Envoy route's bucket as the model's policy; every case on it shares it. */
function envoyTarget(r, uniqueBucket) {
  const b = r.bucket;
  const rate = b.tokensPerFill / (b.fillIntervalMs / 1000);
  const knob = (param) => knobAt(b.stat, b.at, uniqueBucket(b), param);
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
    rate,
    burst: b.maxTokens,
    keys: [
      {
        bucket: b.stat,
        how:
          r.bucketFrom === 'route'
            ? "the route's own bucket, every case on it shares"
            : "the listener's bucket, every route without its own shares",
      },
    ],
    shared: true,
    drainS: (b.maxTokens / b.tokensPerFill) * (b.fillIntervalMs / 1000),
    path: r.match.path ?? r.match.prefix ?? null,
    regex: Boolean(r.match.safe_regex),
    perConnection: b.perConnection,
    host: hostFor(r.domains),
    addressable: !(r.match.headers?.length || r.match.query_parameters?.length),
    keyHeaders: [],
    keyArguments: [],
  };
}

/** Why a route gets no cases (said, never guessed), or null. */
function unplanned(t) {
  if (t.regex || !t.path) return 'a regular-expression or unnamed match: the lab does not choose a path for it';
  if (t.perConnection)
    return 'a bucket per downstream connection: how k6 spreads its requests over connections is not modelled';
  if (!t.addressable)
    return 'a route matched by more than its path and host (headers, arguments), or a server with no plain name that is not the default: the lab does not choose a request for it';
  return null;
}

/**
 * What every request of a case to target `t` carries beyond the lab's x-lab-case: the route's
 * Host, and the case's own key in each header or argument a zone keys by ({case} stands for the
 * case's id, filled in by the limiter kind's plan).
 */
const caseRequest = (t) => ({
  headers: { ...(t.host ? { host: t.host } : {}), ...Object.fromEntries(t.keyHeaders.map((h) => [h, '{case}'])) },
  query: t.keyArguments.map((a) => `${encodeURIComponent(a)}={case}`).join('&'),
});

/**
 * The load steps of one route, per suite, from its binding rate R and burst B (r/s, requests);
 * the load knobs (LOAD_KNOBS), where set, give the spike's and the soak's rates and length instead.
 */
function steps(id, t, k) {
  const R = t.rate;
  // Whole requests per second: k6's arrival rates are whole numbers per time unit.
  const at = (x) => Math.max(1, Math.round(x));
  const chosen = k.load_rates.length > 0;
  return {
    smoke: [{ name: 'smoke', rate: at(R / 2), seconds: 2, targets: [id] }],
    spike: chosen
      ? k.load_rates.map((r) => ({ name: `${r}rps`, rate: r, seconds: k.load_seconds || 10, targets: [id] }))
      : [
          // Under its rate for 10 s: nothing limited, nothing waits long.
          { name: 'under', rate: at(R / 2), seconds: 10, targets: [id] },
          // Twice burst and rate in one second: the burst fills and the rest is limited, by the burst's size.
          { name: 'fill', rate: at(2 * (R + t.burst)), seconds: 1, targets: [id] },
          // Three times its rate for 5 s: what it lets through in a sustained overload, by its rate.
          { name: 'over', rate: at(3 * R), seconds: 5, targets: [id] },
          ...chainSteps(id, t),
        ],
    soak: [
      {
        name: 'over-long',
        rate: chosen ? Math.max(...k.load_rates) : at(2 * R),
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

// The load, settable as knobs (not the policy's: the sensitivity leaves them alone).
const LOAD_KNOBS = {
  load_rates: {
    default: [],
    kind: 'counts',
    load: true,
    doc: "spike: one step per rate (r/s) and route, instead of the lab's choice (under its rate, filling its burst, a sustained overload); soak: the largest",
  },
  load_seconds: {
    default: 0,
    kind: 'count',
    load: true,
    doc: "spike and soak: each step's length in s (0: the lab's, 10 s and 60 s)",
  },
};

/**
 * Where each zone's limit_req, each Envoy bucket and each limit_req_dry_run stand in the file:
 * a knob per place ({uniqueZone, uniqueBucket, dryPlaces}).
 */
function placesIn(policy) {
  const places = (list) =>
    list.reduce((m, [name, at]) => m.set(name, new Set([...(m.get(name) ?? []), at])), new Map());
  const zonePlaces = places(policy.routes.flatMap((r) => (r.limits ?? []).map((l) => [l.zone, l.at])));
  const bucketPlaces = places(policy.routes.filter((r) => r.bucket).map((r) => [r.bucket.stat, r.bucket.at]));
  return {
    uniqueZone: (zone) => zonePlaces.get(zone).size === 1,
    uniqueBucket: (b) => bucketPlaces.get(b.stat).size === 1,
    dryPlaces: new Set(policy.routes.filter((r) => r.dryRun && !r.dryRun.at.startsWith('(')).map((r) => r.dryRun.at)),
  };
}

/** Why a route gets no target before it is read (answered first, no limit), or null. */
function unlimited(policy, r) {
  if (policy.proxy === 'nginx' && (r.answeredBefore || !r.limits?.length))
    return r.answeredBefore
      ? `answered ${r.answeredBefore.code} before limit_req (${r.answeredBefore.at})`
      : 'no limit_req';
  if (policy.proxy === 'envoy' && !(r.bucket?.enabled > 0)) return 'no local rate limit enabled';
  return null;
}

/** Every route of the file, as the Policy tab lists it, and the targets the lab plans cases for (ids unique). */
function routeTargets(policy) {
  const { uniqueZone, uniqueBucket, dryPlaces } = placesIn(policy);
  const routes = [];
  const targets = [];
  const used = new Set();
  for (const r of policy.routes) {
    const label =
      policy.proxy === 'nginx'
        ? `${r.server.names[0] ?? r.server.listen[0] ?? ''} ${r.location}`.trim()
        : `${r.listener}/${r.host} ${JSON.stringify(r.match)}`;
    const none = unlimited(policy, r);
    if (none) {
      routes.push({ route: label, at: r.at, none });
      continue;
    }
    const t = policy.proxy === 'nginx' ? nginxTarget(policy, r, uniqueZone, dryPlaces) : envoyTarget(r, uniqueBucket);
    const why = unplanned(t);
    if (why) {
      routes.push({ route: label, at: r.at, none: why });
      continue;
    }
    let id = slug(t.path);
    while (used.has(id)) id = `${id}-2`;
    used.add(id);
    targets.push({ id, ...t });
    routes.push({ route: label, at: r.at, target: id, keys: t.keys, shared: t.shared });
  }
  if (!targets.length)
    throw new Error(
      `${policy.file}: no route the lab can plan cases for:\n  ${routes.map((r) => `${r.route} (${r.at}): ${r.none}`).join('\n  ')}`,
    );
  return { routes, targets };
}

/**
 * One shared bucket puts every case one after another, each after the longest a bucket takes to
 * be fresh again (and a second): {sequential, pauseS}, said on each planned route.
 */
function casePacing(routes, targets) {
  const sequential = targets.some((t) => t.shared);
  const pauseS = sequential ? Math.ceil(Math.max(...targets.map((t) => t.drainS))) + 1 : 0;
  // Said where it is shown (lab/policy/words.mjs), at the run's --quick factor.
  for (const r of routes.filter((x) => x.target)) r.pacing = { sequential, pauseS, shared: r.shared };
  return { sequential, pauseS };
}

/** The experiment's knobs (the load's and every number of the file) and where each number stands. */
function knobsOf(targets) {
  const knobs = { ...LOAD_KNOBS };
  const numbers = new Map(); // knob -> where it stands in the file
  for (const n of targets.flatMap((t) => t.numbers)) {
    knobs[n.knob] = {
      default: n.value,
      kind: n.kind,
      doc: n.doc,
      ...(n.values ? { values: n.values } : {}),
      ...(n.min ? { min: n.min, minWhy: 'the proxy refuses less' } : {}),
    };
    numbers.set(n.knob, { at: n.at, path: n.path, param: n.param, unit: n.unit });
  }
  return { knobs, numbers };
}

/**
 * The experiment of a policy read from `file` ({proxy, routes, ...}): {experiment, routes} where
 * routes says, for every route, its target id and how its cases meet their buckets, or why it
 * has no cases. `name`: the experiment's (default: lab/policy/name.mjs's, said in `namedFrom`).
 */
export function policyExperiment(policy, { name: given = null } = {}) {
  const { name, from } = policyName(policy.file, policy.says, given);
  const { routes, targets } = routeTargets(policy);
  const { sequential, pauseS } = casePacing(routes, targets);
  const suites = {};
  for (const suite of ['smoke', 'spike', 'soak']) {
    suites[suite] = (k) =>
      targets.flatMap((t) => steps(t.id, t, k)[suite]).map((s) => ({ ...s, ...(pauseS ? { afterS: pauseS } : {}) }));
  }
  const { knobs, numbers } = knobsOf(targets);
  const experiment = {
    name,
    namedFrom: from,
    kind: 'limiter',
    policyFile: policy.file,
    knobs,
    /**
     * The knobs' values placed where they stand in the file: [{at, path, param, unit, value}],
     * what the rendered config takes (lab/policy/render-<proxy>.mjs), --quick's scaling, a
     * what-if's and a --stack-knob's included.
     */
    placed: (k) => [...numbers].map(([knob, where]) => ({ ...where, value: k[knob] })),
    targets: (k) =>
      targets.map((t) => ({
        id: t.id,
        service: `${name}-${policy.proxy}`,
        path: t.path,
        limitedStatus: t.status,
        policy: t.build(k),
        request: caseRequest(t),
      })),
    // The k6 script that runs any policy's plan (k6/policy.js).
    script: 'policy',
    stepsTogether: !sequential,
    suites,
    seedFigures: {},
  };
  return { experiment, routes };
}
