/*
 * The targets the lab loads in a team's nginx config, from nginx's own word (explore.mjs): one per
 * limiting location and class of client, with the model of what that class meets there (the
 * limit_req of its zones whose keys are not empty, in the location's order), the numbers as
 * knobs named as the config reads (zone, parameter, and the location or level the limit stands
 * at), the request each case sends (its place, Host, path, and its slot's client), and which
 * cases share a bucket (the keys nginx computed for each slot).
 */
/** A knob's name from its parts: lower case letters, digits and underscores. */
export const knobName = (...parts) =>
  parts
    .filter((p) => p !== '' && p !== null && p !== undefined)
    .join('_')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_|_$/g, '');

const slug = (text) =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '') || 'root';

/** Where a limit stands, as a knob reads it: the location's path, the server's name, or the level. */
export function placeWords(policy, at) {
  for (const r of policy.routes) {
    if (r.limitsFrom === 'own' && (r.limits ?? []).some((l) => l.at === at)) return r.match.pattern;
    if (r.connsFrom === 'own' && (r.conns ?? []).some((l) => l.at === at)) return r.match.pattern;
  }
  const server = policy.routes.find((r) => (r.limits ?? []).some((l) => l.at === at) && r.limitsFrom === 'server');
  return server ? (server.server.names[0] ?? 'server') : 'http';
}

/**
 * Per place in the file a number stands (a limit_req's at), its knob's name: `<zone>_<param>` where
 * the zone's limit_req stands once, else `<zone>_<param>_<where>` (where: placeWords), numbered
 * only where two places read the same.
 */
export function knobNamer(policy) {
  const places = new Map();
  for (const r of policy.routes)
    for (const l of [...(r.limits ?? []), ...(r.conns ?? [])]) {
      const set = places.get(l.zone) ?? new Map();
      set.set(l.at, placeWords(policy, l.at));
      places.set(l.zone, set);
    }
  return (zone, at, param) => {
    const mine = places.get(zone);
    if (!mine || mine.size === 1) return knobName(zone, param);
    const where = mine.get(at);
    const same = [...mine].filter(([, w]) => slug(w) === slug(where));
    const n = same.length > 1 ? same.findIndex(([a]) => a === at) + 1 : null;
    return knobName(zone, param, slug(where), n);
  };
}

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
      knob: knob(l.zone, l.at, 'burst'),
      kind: 'count',
      value: l.burst,
      at: l.at,
      param: 'burst',
      doc: `limit_req zone=${l.zone} burst (${l.at})`,
    },
    // nodelay or not, a switch: the sensitivity tries the other way too.
    {
      knob: knob(l.zone, l.at, 'mode'),
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
      knob: knob(l.zone, l.at, 'delay'),
      kind: 'count',
      value: l.delay,
      at: l.at,
      param: 'delay',
      doc: `limit_req zone=${l.zone} delay (${l.at})`,
    });
  return numbers;
}

/** limit_req_dry_run as a switch knob, where the file sets it, else none. */
const dryRunNumbers = (r, knob) =>
  r.dryRun.at.startsWith('(')
    ? []
    : [
        {
          knob,
          kind: 'choice',
          values: ['on', 'off'],
          value: r.dryRun.on ? 'on' : 'off',
          at: r.dryRun.at,
          param: 'dry_run',
          doc: `limit_req_dry_run (${r.dryRun.at})`,
        },
      ];

/** A limit_conn's number as a knob. */
const connNumbers = (l, knob) => [
  {
    knob: knob(l.zone, l.at, 'conn'),
    kind: 'count',
    // nginx refuses 0 ("invalid number of connections").
    min: 1,
    value: l.conn,
    at: l.at,
    param: 'conn',
    doc: `limit_conn ${l.zone} (${l.at})`,
  },
];

/**
 * The model's policy of a class at a route from the knobs' values: its live limits as a limit_req
 * chain, and the limit_conn it meets (`conn`: {route, limits}).
 */
const chainFrom = (route, zones, liveLimits, knob, dryKnob, conn) => (k) => ({
  kind: 'limit_req_chain',
  ...(conn.limits.length
    ? { conns: conn.limits.map((l) => ({ conn: k[knob(l.zone, l.at, 'conn')] })), connDryRun: conn.route.connDryRun.on }
    : {}),
  // Where limit_conn refuses with another status than limit_req, each refusal counts by its own.
  ...(conn.limits.length && conn.route.connStatus.code !== route.status.code
    ? { statuses: { req: route.status.code, conn: conn.route.connStatus.code } }
    : {}),
  dryRun: dryKnob && k[dryKnob] !== undefined ? k[dryKnob] === 'on' : route.dryRun.on,
  limits: liveLimits.map((l) => {
    const z = zones[l.zone];
    return {
      rateMilli: Math.floor((k[knobName(z.name, 'rate')] * 1000) / (z.unit === 'm' ? 60 : 1)),
      burst: k[knob(l.zone, l.at, 'burst')],
      // nodelay is a delay of the whole burst (no request limit_req lets on waits), written as a
      // number so the plan's file keeps it; without it, the file's delay (nginx's default, 0).
      delay:
        k[knob(l.zone, l.at, 'mode')] === 'nodelay'
          ? k[knob(l.zone, l.at, 'burst')]
          : (k[knob(l.zone, l.at, 'delay')] ?? 0),
    };
  }),
});

/** Who shares a bucket of each live zone among a class's slots: from the keys nginx computed. */
function keyWords(cls, live) {
  return live.map((zone) => {
    const keys = cls.slots.map((s) => s.keys[zone]);
    const distinct = new Set(keys).size;
    return {
      zone,
      how:
        distinct === keys.length
          ? 'each case its own key (nginx computed a different one for each)'
          : distinct === 1
            ? 'one bucket every case shares (nginx computed the same key for each)'
            : `${distinct} keys among ${keys.length} cases`,
    };
  });
}

/** The request of one slot of a class: its path with its query, and its headers (Host from the URL). */
function slotRequest(t, slot, addressHeader) {
  const c = slot.client;
  const query =
    c.query ??
    Object.entries(c.args)
      .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
      .join('&');
  const cookies = Object.entries(c.cookies).map(([k, v]) => `${k}=${v}`);
  return {
    path: `${t.request.path}${query ? `${t.request.path.includes('?') ? '&' : '?'}${query}` : ''}`,
    headers: {
      ...c.headers,
      ...(cookies.length ? { cookie: cookies.join('; ') } : {}),
      [addressHeader.toLowerCase()]: c.address,
    },
  };
}

/** The target of one class at one explored location (`named`: it takes the route's own name). */
function classTarget(policy, t, cls, named, { knob, dryKnobs }) {
  const route = t.route;
  const live = cls.read.req?.route === route.id ? cls.read.req.zones : [];
  const liveLimits = (route.limits ?? []).filter((l) => live.includes(l.zone));
  const zones = liveLimits.map((l) => policy.zones[l.zone]);
  const dryKnob = route.dryRun.at.startsWith('(')
    ? null
    : dryKnobs.size === 1
      ? 'dry_run'
      : knobName('dry_run', placeWords(policy, route.dryRun.at));
  const slowest = zones.reduce((a, z) => (!a || z.rateMilli < a.rateMilli ? z : a), null);
  const binding = slowest ? liveLimits[zones.indexOf(slowest)] : null;
  // The limit_conn that counts it: in the location where its key is not empty (nginx counts once).
  const connRoute = cls.read.conn ? policy.routes.find((r) => r.id === cls.read.conn.route) : null;
  // Its cases hold a slot by the backend holding the answer: an answer from disk cannot be held.
  const conn = {
    route: connRoute,
    limits: connRoute && cls.read.proxied ? connRoute.conns.filter((l) => cls.read.conn.zones.includes(l.zone)) : [],
  };
  return {
    id: slug(`${route.match.pattern.replace(/^@/, 'named-')}${named ? '' : `-${cls.name}`}`),
    route,
    cls,
    exempt: !liveLimits.length && !conn.limits.length,
    numbers: [
      ...liveLimits.flatMap((l, i) => limitNumbers(l, zones[i], knob)),
      ...(liveLimits.length && dryKnob ? dryRunNumbers(route, dryKnob) : []),
      ...conn.limits.flatMap((l) => connNumbers(l, knob)),
    ],
    build: chainFrom(route, policy.zones, liveLimits, knob, dryKnob, conn),
    status: route.status.code,
    // Its limit_conn cases: each limit's number, and the status it answers a rejection with.
    conns: conn.limits.map((l) => ({
      zone: l.zone,
      conn: l.conn,
      knob: knob(l.zone, l.at, 'conn'),
      status: conn.route.connStatus.code,
    })),
    rate: slowest ? slowest.rateMilli / 1000 : null,
    burst: binding?.burst ?? null,
    chain: liveLimits
      .map((l, i) => ({ zone: l.zone, rate: zones[i].rateMilli / 1000, burst: l.burst }))
      .sort((a, b) => a.rate - b.rate),
    keys: keyWords(cls, live),
    shared: live.some((z) => new Set(cls.slots.map((s) => s.keys[z])).size < cls.slots.length),
    // A limit_conn keyed alike for every case ($server_name): each case's requests in progress
    // count against the others', so its cases run one after another.
    connShared: conn.limits.some(
      (l) => new Set(cls.slots.map((s) => s.keys[`conn:${l.zone}`])).size < cls.slots.length,
    ),
    drainS: Math.max(0, ...liveLimits.map((l, i) => ((l.burst + 1) * 1000) / zones[i].rateMilli)),
    place: t.place,
    host: t.host,
    slots: cls.slots.map((s) => slotRequest(t, s, policy.explored.addressHeader)),
    slotKeys: cls.slots.map((s) => Object.fromEntries(live.map((z) => [z, s.keys[z]]))),
  };
}

/**
 * The nginx targets of `policy` (with its `explored`): [{id, route, cls, numbers, build, status,
 * rate, burst, chain, keys, shared, drainS, place, host, slots, exempt}], per route its counted
 * classes first; a class answered before its limits has none.
 */
export function nginxTargets(policy) {
  const { explored } = policy;
  const ctx = {
    knob: knobNamer(policy),
    dryKnobs: new Set(policy.routes.filter((r) => !r.dryRun.at.startsWith('(')).map((r) => r.dryRun.at)),
  };
  const out = [];
  for (const t of explored.targets) {
    // The route's name goes to its first class its limits count; every other class adds its own.
    const counted = t.classes.find((c) => c.read.status === 200 && c.read.req?.route === t.route.id);
    const answered = t.classes.filter((c) => c.read.status === 200);
    const mine = [...answered.filter((c) => c === counted), ...answered.filter((c) => c !== counted)];
    out.push(...mine.map((cls) => classTarget(policy, t, cls, cls === counted, ctx)));
  }
  // An exempt class (and one only a limit_conn counts) takes its route's first limited class's rate
  // and burst: a load that class would feel.
  for (const t of out.filter((x) => x.rate === null)) {
    const twin = out.find((x) => x.route === t.route && x.rate !== null) ?? out.find((x) => x.rate !== null);
    t.rate = twin?.rate ?? 10;
    t.burst = twin?.burst ?? 10;
  }
  return out;
}
