/*
 * The requests the lab offers nginx for each location of a team's config (probe.mjs asks which
 * ones reach it): where to send them (the places its server listens on, TLS or not), which Host
 * its server answers to, and paths its match takes: the path itself, a file below a prefix,
 * examples of a regular expression (npm randexp, drawn from a seeded generator, in URL-safe
 * characters). nginx, not this module, says which location each really reaches.
 */
import RandExp from 'randexp';
import { seededRandom } from '../../../thresholds/models/random.js';

// What a request carries from a client that no class of the config singles out.
export const BASE_UA = 'Mozilla/5.0 (X11; Linux x86_64) proxy-policy-lab';

/** Every place the config listens on, in the file's order: [{place, ssl, http2}]. */
export function placesOf(routes) {
  const out = new Map();
  for (const r of routes)
    for (const l of r.server.listens) {
      const place = l.place;
      const was = out.get(place) ?? { place, ssl: false, http2: false };
      out.set(place, {
        ...was,
        ssl: was.ssl || l.ssl,
        http2: was.http2 || l.http2 || (r.server.http2On && l.ssl),
      });
    }
  return [...out.values()];
}

/** A PCRE pattern as a JS RegExp, or null where JS reads it otherwise: (?P<n>) named groups, (?i) at the start. */
export function jsRegExp(pattern, caseless) {
  let src = pattern.replace(/^"(.*)"$/, '$1');
  let flags = caseless ? 'i' : '';
  if (src.startsWith('(?i)')) {
    src = src.slice(4);
    flags = 'i';
  }
  src = src.replace(/\(\?P</g, '(?<');
  try {
    return new RegExp(src, flags);
  } catch {
    return null;
  }
}

/** Up to `n` strings a pattern matches, seeded by the pattern, in lower-case letters, digits and '-'. */
export function examplesOf(pattern, caseless, n = 6) {
  const re = jsRegExp(pattern, caseless);
  if (!re) return [];
  const rand = seededRandom(`examples:${pattern}`);
  const out = new Set();
  for (let i = 0; i < n * 4 && out.size < n; i += 1) {
    let gen;
    try {
      gen = new RandExp(re);
    } catch {
      return [];
    }
    gen.max = 3;
    gen.defaultRange.subtract(32, 126);
    gen.defaultRange.add(97, 122);
    gen.defaultRange.add(48, 57);
    gen.randInt = (a, b) => a + Math.floor(rand() * (b - a + 1));
    const s = gen.gen();
    if (re.test(s)) out.add(s);
  }
  return [...out];
}

/** Paths a location's match takes, best first: for a prefix a file below it, for a regex its examples. */
export function pathsOf(route) {
  const { modifier, pattern } = route.match;
  const asPath = (p) => (p.startsWith('/') ? p : `/${p}`);
  if (modifier === '=') return [pattern];
  if (modifier === '' || modifier === '^~')
    return pattern.endsWith('/') ? [`${pattern}lab-probe`, pattern] : [pattern, `${pattern}/lab-probe`];
  if (modifier === '~' || modifier === '~*')
    return examplesOf(pattern, modifier === '~*')
      .map(asPath)
      .filter((p) => jsRegExp(pattern, modifier === '~*').test(p))
      .map((p) => encodeURI(p).replace(/%25/g, '%'));
  if (modifier === 'server') return ['/lab-probe'];
  return [];
}

/** The Host a server answers to: a plain name of it, a name its wildcard or regex takes, or a default's. */
export function hostOf(server) {
  for (const n of server.names) {
    if (/^[a-z0-9][a-z0-9.-]*$/i.test(n) && n !== '_') return n;
    if (/^\*\.[a-z0-9.-]+$/i.test(n)) return `lab${n.slice(1)}`;
    if (/^\.[a-z0-9.-]+$/i.test(n)) return n.slice(1);
    if (/^[a-z0-9.-]+\.\*$/i.test(n)) return `${n.slice(0, -1)}lab`;
    if (n.startsWith('~')) {
      const ex = examplesOf(n.slice(1), true, 1)[0];
      if (ex) return ex;
    }
  }
  return 'localhost';
}

/** The places a server's requests go to, TLS ones first (as its clients reach it). */
export function serverPlaces(server, places) {
  const mine = [...new Set(server.listens.map((l) => l.place))];
  return places.filter((p) => mine.includes(p.place)).sort((a, b) => Number(b.ssl) - Number(a.ssl));
}

/** The URIs an error_page sends to (its own requests create their files, so that the page is served). */
export const errorPageUris = (routes) => [
  ...new Set(routes.flatMap((r) => (r.errorPages || []).map((e) => e.target)).filter((t) => t.startsWith('/'))),
];
