/*
 * The small languages inside a Traefik config the lab reads: a Go duration (`period: 10s`, or a
 * number of seconds), a router's rule (Host, Path, PathPrefix joined by &&) and a rate limit's
 * sourceCriterion. What they cannot read is said or refused, never guessed.
 */

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

const MATCHER = /^(Host|Path|PathPrefix)\(\s*`([^`]*)`\s*\)$/;

/** A rule the lab can send to: {host, path} (path '/' when it names none), or {none: why}. */
export function readRule(rule, at) {
  if (!rule.trim()) return { none: `${at}: no rule` };
  const out = { host: null, path: null };
  for (const part of rule.split('&&').map((p) =>
    p
      .trim()
      .replace(/^\((.*)\)$/, '$1')
      .trim(),
  )) {
    const m = part.match(MATCHER);
    if (!m) return { none: `rule ${rule}: '${part}' is not read (Host, Path and PathPrefix joined by && are)` };
    if (m[1] === 'Host') out.host = m[2];
    else out.path = m[2];
  }
  return { host: out.host, path: out.path ?? '/' };
}

/**
 * A rateLimit's sourceCriterion: {by: 'address' | 'header' | 'host', header?}. An address
 * strategy that reads X-Forwarded-For (depth, excludedIPs) is refused by name: the lab sends
 * every request from 127.0.0.1, with no such header.
 */
export function readCriterion(c, at) {
  if (!c) return { by: 'address' };
  if (c.ipStrategy && (c.ipStrategy.depth || c.ipStrategy.excludedIPs?.length || c.ipStrategy.ipv6Subnet))
    throw new Error(
      `${at}: sourceCriterion.ipStrategy with depth, excludedIPs or ipv6Subnet: X-Forwarded-For is not modelled yet`,
    );
  if (c.ipStrategy) return { by: 'address' };
  if (c.requestHeaderName) return { by: 'header', header: c.requestHeaderName };
  if (c.requestHost) return { by: 'host' };
  return { by: 'address' };
}
