/*
 * The small languages inside a Traefik config the lab reads: a Go duration (`period: 10s`, or a
 * number of seconds) and a rate limit's sourceCriterion (a router's rule: rule.mjs). What they
 * cannot read is said or refused, never guessed.
 */
import { BlockList, isIP } from 'node:net';

const UNITS = { ns: 1e-9, us: 1e-6, µs: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };

/** A Go duration or a number of seconds, in seconds; throws naming `at`. */
export function parseDuration(v, at) {
  if (typeof v === 'number') return v;
  const text = String(v).trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)];
  if (!parts.length || parts.map((p) => p[0]).join('') !== text)
    throw new Error(`${at}: '${v}' is not a duration (10s, 1m, 500ms)`);
  return parts.reduce((sum, [, n, u]) => sum + Number(n) * UNITS[u], 0);
}

/**
 * Addresses and CIDRs as a BlockList, as Traefik's checker takes them; one that is neither is
 * refused naming `at` and the field (`what`).
 */
export function addressList(ips, at, what = 'ipStrategy.excludedIPs') {
  const list = new BlockList();
  for (const ip of ips) {
    const [address, bits, extra] = String(ip).trim().split('/');
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    const most = family === 'ipv6' ? 128 : 32;
    if (!isIP(address) || extra !== undefined || (bits !== undefined && !(/^\d+$/.test(bits) && Number(bits) <= most)))
      throw new Error(`${at}: ${what} '${ip}' is not an address or a CIDR`);
    if (bits === undefined) list.addAddress(address, family);
    else list.addSubnet(address, Number(bits), family);
  }
  return list;
}

/** An ipStrategy's ipv6Subnet, checked as Traefik checks it, and what it does to the lab's sources. */
function subnetNote(s, at) {
  if (s.ipv6Subnet === undefined) return null;
  const bits = Number(s.ipv6Subnet);
  if (!Number.isInteger(bits) || bits <= 0 || bits > 128)
    throw new Error(`${at}: ipStrategy.ipv6Subnet ${s.ipv6Subnet}: from 1 to 128`);
  return `ipv6Subnet ${bits} changes nothing here: the lab's sources are IPv4`;
}

/**
 * An ipStrategy, as Traefik's IPStrategy.Get chooses: a depth above 0 reads X-Forwarded-For's
 * depth-th address from the right (excludedIPs then unread); else excludedIPs reads its
 * right-most address not excluded; else the client address.
 */
function ipStrategyOf(s, at) {
  const note = subnetNote(s, at);
  const depth = Number(s.depth ?? 0);
  if (!Number.isInteger(depth) || depth < 0) throw new Error(`${at}: ipStrategy.depth ${s.depth}: a whole number >= 0`);
  const excluded = s.excludedIPs ?? [];
  if (!Array.isArray(excluded)) throw new Error(`${at}: ipStrategy.excludedIPs: a list of addresses or CIDRs`);
  const notes = [note, depth > 0 && excluded.length ? 'excludedIPs unread: a depth above 0 wins' : null];
  const said = { notes: notes.filter(Boolean) };
  if (depth > 0) return { by: 'forwarded', depth, ...said };
  if (excluded.length)
    return { by: 'forwarded', depth: 0, excluded: addressList(excluded, at), excludedIPs: excluded, ...said };
  return { by: 'address', ...said };
}

/**
 * A rateLimit's sourceCriterion: {by: 'address' | 'forwarded' | 'header' | 'host', header?,
 * depth?, excluded?, notes?}. 'forwarded' reads X-Forwarded-For (an ipStrategy with a depth or
 * excludedIPs), which reaches the limit only from a client its entry point trusts.
 */
export function readCriterion(c, at) {
  if (!c) return { by: 'address' };
  if (c.ipStrategy) return ipStrategyOf(c.ipStrategy, at);
  if (c.requestHeaderName) return { by: 'header', header: c.requestHeaderName };
  if (c.requestHost) return { by: 'host' };
  return { by: 'address' };
}
