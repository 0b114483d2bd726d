/*
 * A rule's condition as HAProxy reads it (`if A !B { test }`: every term must hold), split into
 * its terms, and what the lab's own requests make of a term that reads no counter: each case
 * sends GET to `/` (or `/lab-key-N`, where a tracker keys on Host and path), so a test of the
 * path or the method is true for all of them, false for all, or said to be undecidable.
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

// A test of the request's path or method: its fetch, its -i (case-insensitive), its values.
const PATH_TEST = /^(path|path_beg|path_end|method)((?: -[im])*) (.+)$/;
const MATCH = {
  path: (have, v) => have === v,
  path_beg: (have, v) => have.startsWith(v),
  path_end: (have, v) => have.endsWith(v),
  method: (have, v) => have === v,
};

/**
 * Whether a test that reads no counter holds for the lab's requests: true for every one, false
 * for none, or null (it tests something else, or holds for some and not others).
 */
export function labTruth(test) {
  const m = PATH_TEST.exec(test);
  if (!m) return null;
  const [, fetch, flags, list] = m;
  const fold = flags.includes('-i') ? (s) => s.toLowerCase() : (s) => s;
  const values = list.split(/\s+/).map(fold);
  const haves = fetch === 'method' ? [LAB_METHOD] : LAB_PATHS;
  const hits = haves.map((h) => values.some((v) => MATCH[fetch](fold(h), v)));
  if (hits.every(Boolean)) return true;
  return hits.some(Boolean) ? null : false;
}
