/*
 * An nginx policy as the model read it, for the Policy tab and `./labw expect`: a row per
 * limit_req and limit_conn a route meets, with the file:line it comes from.
 */

export const NGINX_HEAD = ['route', 'limit', 'key', 'rate', 'burst', 'delay', 'status', 'dry run', 'from'];

const delayWords = (l) => (l.nodelay ? 'nodelay' : l.delay ? `delay=${l.delay}` : 'delay all');

/** An nginx route's rows: one per limit_req, then one per limit_conn, the route named on the first. */
function routeRows(policy, r) {
  const route = `${r.server.names[0] ?? r.server.listens[0]?.where ?? '-'} ${r.location}`;
  if (r.answeredBefore)
    return [
      [
        route,
        '-',
        `answered ${r.answeredBefore.code} by return before its limits`,
        '',
        '',
        '',
        '',
        '',
        r.answeredBefore.at,
      ],
    ];
  const from = (z, l, inherited) => `${z.at}, ${l.at}${inherited !== 'own' ? ` (from ${inherited})` : ''}`;
  const req = (r.limits ?? []).map((l) => {
    const z = policy.zones[l.zone];
    const dry = r.dryRun.on ? 'on' : 'off';
    return [
      l.zone,
      z.key,
      z.rate,
      String(l.burst),
      delayWords(l),
      String(r.status.code),
      dry,
      from(z, l, r.limitsFrom),
    ];
  });
  const conn = (r.conns ?? []).map((l) => {
    const z = policy.connZones[l.zone];
    const dry = r.connDryRun.on ? 'on' : 'off';
    return [
      `${l.zone} (limit_conn)`,
      z.key,
      `${l.conn} at once`,
      '',
      '',
      String(r.connStatus.code),
      dry,
      from(z, l, r.connsFrom),
    ];
  });
  return [...req, ...conn].map((row, i) => [i ? '' : route, ...row]);
}

/** Every limited route's rows (every cell shown, not judged). */
export const nginxRows = (policy) =>
  policy.routes.flatMap((r) => (r.limits?.length || r.conns?.length ? routeRows(policy, r) : []));
