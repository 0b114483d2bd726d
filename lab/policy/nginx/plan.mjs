/*
 * An nginx policy's targets (targets.mjs) with its routes' words, as the Policy tab lists them:
 * the planned ones, and why the others get no case.
 */
import { nginxTargets } from './targets.mjs';

/** The nginx targets with the routes' words: planned ones, classes answered before their limits, and the unreached. */
export function nginxPlan(policy) {
  const targets = nginxTargets(policy).map((t) => ({
    ...t,
    label: `${t.host} ${t.route.location}`,
    class: `${t.cls.name}: ${t.cls.why}${t.exempt ? ' (no zone counts it)' : ''}`,
    at: t.route.at,
  }));
  const routes = [];
  for (const r of policy.routes.filter((x) => (x.limits?.length || x.conns?.length) && x.answeredBefore))
    routes.push({
      route: r.location,
      at: r.at,
      none: `answered ${r.answeredBefore.code} by return (${r.answeredBefore.at}) before its limits`,
    });
  for (const t of policy.explored.targets)
    for (const c of t.classes.filter((x) => x.read.status !== 200))
      routes.push({
        route: `${t.host} ${t.route.location}`,
        class: `${c.name}: ${c.why}`,
        at: t.route.at,
        none: `answered ${c.read.status} before its limits count it`,
      });
  for (const u of policy.explored.unreached) routes.push({ route: u.route.location, at: u.route.at, none: u.why });
  for (const t of targets.filter((x) => x.cls.read.conn && !x.cls.read.proxied))
    routes.push({
      route: t.label,
      class: t.class,
      at: t.route.at,
      none: "limit_conn not loaded: its answers come from disk, which the lab cannot hold open (the backend's hold holds a slot)",
    });
  return { targets, routes };
}
