/*
 * The proxies a team's policy can be written for, one module each behind one interface
 * (docs/adding-a-proxy.md says what each field answers). Adding a proxy is one file here and one
 * line in this list; nothing outside this folder branches on a proxy's name (test/extending.test.mjs).
 */
import envoy from './envoy.mjs';
import haproxy from './haproxy.mjs';
import nginx from './nginx.mjs';
import traefik from './traefik.mjs';

// In the order their claims are tried: nginx reads what no other claims.
export const proxies = [envoy, haproxy, traefik, nginx];

/** The proxy of that name; throws naming the ones there are. */
export function proxyNamed(name) {
  const p = proxies.find((x) => x.name === name);
  if (!p) throw new Error(`no proxy '${name}': the lab knows ${proxies.map((x) => x.name).join(', ')}`);
  return p;
}

/** The proxy a read policy is written for. */
export const proxyOf = (policy) => proxyNamed(policy.proxy);

/** The proxy whose file `text` is: the first that claims it. */
export const proxyClaiming = (text) => proxies.find((p) => p.claims(text));
