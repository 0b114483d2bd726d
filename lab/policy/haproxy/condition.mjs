/*
 * A rule's condition as HAProxy reads it (`if A !B { test }`: every term must hold), split into
 * its terms, and what the lab's own requests make of a term that reads no counter: each case
 * sends GET to `/` (or `/lab-key-N`, where a tracker keys on Host and path) from 127.0.0.1, so a
 * test of the path, the method or the source is true for all of them, false for all, or said to
 * be undecidable.
 */

// The paths the lab's cases send: `/`, and `/lab-key-1`.. where a tracker keys on base (targets.mjs).
const LAB_PATHS = ['/', ...Array.from({ length: 12 }, (_, i) => `/lab-key-${i + 1}`)];
const LAB_METHOD = 'GET';

/**
 * The terms of a condition's words after `if`: [{negated, acl} | {negated, inline}] (an inline
 * test's words between braces, joined), or a refusal where it joins terms with `or`/`||`.
 */
export function termsOf(words, at) {
  const terms = [];
  for (let i = 0; i < words.length; i += 1) {
    let w = words[i];
    if (w === 'or' || w === '||')
      throw new Error(`${at}: a condition with '${w}': the lab reads terms that must all hold yet`);
    const negated = w.startsWith('!');
    if (negated) w = w.slice(1) || words[(i += 1)];
    if (w === '{') {
      const end = words.indexOf('}', i + 1);
      if (end < 0) throw new Error(`${at}: a condition's '{' has no '}'`);
      terms.push({ negated, inline: words.slice(i + 1, end).join(' ') });
      i = end;
    } else terms.push({ negated, acl: w });
  }
  return terms;
}

// Where every request of the lab's comes from: k6 on the loopback.
const LAB_SOURCE = '127.0.0.1';

/** An IPv4 address as a number; null for anything else (a v6 address, a name). */
const ipv4 = (text) => {
  const parts = /^(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)?.slice(1).map(Number);
  return parts && parts.every((n) => n < 256) ? parts.reduce((a, n) => a * 256 + n, 0) : null;
};

/** Whether an IPv4 address is `net` (an address, or address/bits). */
function inNet(address, net) {
  const [base, bits = '32'] = net.split('/');
  const [a, b] = [ipv4(address), ipv4(base)];
  if (b === null || !/^\d+$/.test(bits) || Number(bits) > 32) return false;
  const size = 2 ** (32 - Number(bits));
  return Math.floor(a / size) === Math.floor(b / size);
}

// A test of the request's path (or the start of its URL), method or source: its fetch, its -i
// (case-insensitive), its values;
// any other flag (-m, -f: a file's list) leaves it undecided.
const LAB_TEST = /^(path|path_beg|path_end|url_beg|method|src)((?: -i)*) ([^-].*)$/;
const MATCH = {
  path: (have, v) => have === v,
  path_beg: (have, v) => have.startsWith(v),
  // The lab's URLs are their paths, a query after them: one begins with a value holding no '?'
  // where its path does (a value with one is undecided).
  url_beg: (have, v) => (v.includes('?') ? null : have.startsWith(v)),
  path_end: (have, v) => have.endsWith(v),
  method: (have, v) => have === v,
  src: (have, v) => inNet(have, v),
};
const HAVES = { method: [LAB_METHOD], src: [LAB_SOURCE] };

/**
 * Whether a test that reads no counter holds for the lab's requests: true for every one, false
 * for none, or null (it tests something else, a file's list (-f), or holds for some and not others).
 */
export function labTruth(test) {
  const m = LAB_TEST.exec(test);
  if (!m) return null;
  const [, fetch, flags, list] = m;
  const fold = flags.includes('-i') ? (s) => s.toLowerCase() : (s) => s;
  const values = list.split(/\s+/).map(fold);
  if (values.some((v) => v.startsWith('-'))) return null;
  const haves = HAVES[fetch] ?? LAB_PATHS;
  const matches = haves.map((h) => values.map((v) => MATCH[fetch](fold(h), v)));
  if (matches.flat().includes(null)) return null;
  const hits = matches.map((m) => m.some(Boolean));
  if (hits.every(Boolean)) return true;
  return hits.some(Boolean) ? null : false;
}

/**
 * Whether a condition (`if ...` or `unless ...` and its words) holds for every request of the
 * lab's (true) or none (false), each term decided by labTruth (an acl's by its one line:
 * `aclTest(name)`); a refusal naming the term it cannot decide. `unless` holds where its terms
 * do not all hold.
 */
export function labHolds(words, aclTest, at) {
  const [kw, ...rest] = words;
  if (kw !== 'if' && kw !== 'unless') throw new Error(`${at}: '${words.join(' ')}' is not a condition`);
  const all = termsOf(rest, at).every((t) => termHolds(t, t.inline ?? aclTest(t.acl), at));
  return kw === 'if' ? all : !all;
}

/** A term as written: `!name`, `{ test }`. */
export const termWords = (t) => `${t.negated ? '!' : ''}${t.acl ?? `{ ${t.inline} }`}`;

/**
 * Whether one term (`test` its test: inline, or its acl's) holds for every request of the lab's
 * (true) or none (false); a refusal naming it where the lab cannot decide it.
 */
export function termHolds(t, test, at) {
  const truth = test === undefined ? null : labTruth(test);
  if (truth === null)
    throw new Error(
      `${at}: ${termWords(t)}: the lab cannot tell whether it holds for its requests (GET / from ${LAB_SOURCE}; it reads tests of the path, the method and the source)`,
    );
  return truth !== t.negated;
}
