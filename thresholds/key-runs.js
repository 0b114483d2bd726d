/*
 * The keys a case's requests send in turn, where one case sends several (the evict case of a
 * small stick table: lab/policy/experiment.mjs evictSteps): runs of requests, each run the case's
 * own key, keys never sent before (one per request), or none (no table tracks the request). k6
 * sends the i-th iteration's key (k6/lib/kinds/limiter.js), and the model offers the i-th request
 * with the same one. k6-safe.
 */

/** The i-th fresh key, as a table of `type` stores it (a benchmarking address for ip, ipv6). */
export function freshKey(type, i) {
  if (type === 'ip') return `198.18.${((i + 1) >> 8) & 255}.${(i + 1) & 255}`;
  if (type === 'ipv6') return `2001:db8:1::${(i + 1).toString(16)}`;
  if (type === 'integer') return String(100_000 + i);
  return `lab-fresh-${i + 1}`;
}

/**
 * The key of a case's i-th request (0-based), from `runs` [{count, own: true} | {count, fresh:
 * type} | {count, none: true}]: null for the case's own (what its headers or path already carry),
 * '' for none, else the fresh key. Past the runs, the case's own.
 */
export function keyAt(runs, i) {
  let start = 0;
  let fresh = 0;
  for (const r of runs) {
    if (i < start + r.count) {
      if (r.fresh) return freshKey(r.fresh, fresh + i - start);
      return r.own ? null : '';
    }
    start += r.count;
    if (r.fresh) fresh += r.count;
  }
  return null;
}

/** How many requests the runs hold. */
export const runsLength = (runs) => runs.reduce((a, r) => a + r.count, 0);
