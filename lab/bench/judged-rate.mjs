/*
 * The one rule for the rate a proxy is judged at: over bench rows (`bench limiter-rate`, one run
 * or every recorded one), the highest rate at or below which every rate tried was judged exactly.
 */

/** `rows`: [{proxy, rate, exact}]; the highest rate of `proxy` below its lowest rate not judged exactly (0 if none). */
export function highestJudgedExactly(rows, proxy) {
  const mine = rows.filter((r) => r.proxy === proxy);
  const firstMiss = Math.min(...mine.filter((r) => !r.exact).map((r) => r.rate));
  return Math.max(0, ...mine.filter((r) => r.exact && r.rate < firstMiss).map((r) => r.rate));
}
