/*
 * Nothing leaves the machine: before a team's config runs (or is probed), the rendered config is
 * read for every place the proxy could send to or look up: nginx's passes, upstream servers,
 * resolvers and OCSP fetches; Envoy's endpoints, DNS clusters and resolvers. Anything outside
 * 127.0.0.0/8 (or ::1, or a socket) there is the lab's bug, not the team's: it refuses to start,
 * naming it.
 */
import ipaddr from 'ipaddr.js';

/** Is a host a loopback address (or a unix socket)? A name is not: nginx would look it up. */
export function isLoopback(host) {
  if (!host) return false;
  if (host.startsWith('unix:')) return true;
  try {
    return ipaddr.parse(host.replace(/^\[|\]$/g, '')).range() === 'loopback';
  } catch {
    return false;
  }
}

/** The host of `scheme://host[:port]/...`, `host:port`, `unix:...` or `[v6]:port`. */
const hostOf = (target) => {
  const t = target.replace(/^[a-z]+:\/\//, '');
  if (t.startsWith('unix:')) return 'unix:';
  if (t.startsWith('[')) return t.slice(0, t.indexOf(']') + 1);
  return t.split(/[:/]/)[0];
};

/** What in an nginx tree (as rendered) could reach off the machine: ['directive args', ...]. */
export function nginxOutbound(tree) {
  const out = [];
  const say = (x) => out.push(`${x.directive} ${x.args.join(' ')}`);
  const walk = (dirs, inUpstream) =>
    dirs.forEach((x) => {
      if (/_pass$/.test(x.directive) && !isLoopback(hostOf(x.args[0]))) say(x);
      if (inUpstream && x.directive === 'server' && !isLoopback(hostOf(x.args[0]))) say(x);
      if (x.directive === 'resolver') say(x);
      if (/^ssl_(stapling|ocsp)$/.test(x.directive) && x.args[0] !== 'off') say(x);
      if (x.block) walk(x.block, x.directive === 'upstream');
    });
  walk(tree, false);
  return out;
}

/** What in an Envoy bootstrap (as rendered) could reach off the machine: ['where: what', ...]. */
export function envoyOutbound(cfg) {
  const out = [];
  const walk = (node, path) => {
    if (Array.isArray(node)) return node.forEach((x, i) => walk(x, `${path}[${i}]`));
    if (!node || typeof node !== 'object') return;
    if (node.socket_address && !isLoopback(node.socket_address.address))
      out.push(`${path}: ${node.socket_address.address}:${node.socket_address.port_value}`);
    if (['STRICT_DNS', 'LOGICAL_DNS'].includes(node.type)) out.push(`${path}: a ${node.type} cluster`);
    if (node.dns_resolvers || node.dns_resolution_config || node.typed_dns_resolver_config)
      out.push(`${path}: a DNS resolver`);
    for (const [k, v] of Object.entries(node)) if (k !== 'socket_address') walk(v, path ? `${path}.${k}` : k);
  };
  walk(cfg, '');
  return out;
}

/** Throws, naming what could leave the machine, where `found` is not empty. */
export function refuseOutbound(file, found) {
  if (found.length)
    throw new Error(
      `${file}: as the lab renders it, it could reach off the machine (the lab's bug: it moves every backend to 127.0.0.1):\n  ${found.join('\n  ')}`,
    );
}
