/*
 * How long after k6 stamps a request (its lab_arrival_late_ms sample, taken just before the
 * request is written) the proxy's limiter sees it: what a replay of k6's sends cannot know, as
 * the distribution it draws each request's lag from. k6-safe.
 */

/**
 * Per limiter model, the lag's quantiles [p, ms] pooled over every limited request of the
 * recorded runs, read from the proxies' own logs (docs/model.md#seen-lag: the runs and their
 * pooled quantiles, generated). nginx reads its limiter's millisecond clock, so its readings
 * are up to 1 ms short of the lag (resolutionMs).
 */
export const SEEN_LAG_MS = {
  limit_req: {
    proxy: 'nginx',
    resolutionMs: 1,
    q: [
      [0, -0.93],
      [0.1, -0.61],
      [0.25, -0.38],
      [0.5, -0.04],
      [0.75, 0.35],
      [0.9, 1.23],
      [0.95, 2.44],
      [0.99, 8.87],
      [0.999, 24.59],
      [1, 52.14],
    ],
  },
  token_bucket: {
    proxy: 'Envoy',
    resolutionMs: 0.001,
    q: [
      [0, 0.07],
      [0.1, 0.14],
      [0.25, 0.19],
      [0.5, 0.33],
      [0.75, 0.78],
      [0.9, 1.79],
      [0.95, 3.36],
      [0.99, 9.74],
      [0.999, 18.79],
      [1, 23.69],
    ],
  },
};

/**
 * The least lag of any request: one loopback hop and an event loop's wake-up, as Envoy reads it
 * to the µs; nginx's ms readings bound it no closer, and the same hop is theirs.
 */
export const LEAST_LAG_MS = SEEN_LAG_MS.token_bucket.q[0][1];

/** The value at probability u (0..1) of a quantile table, linear between its points. */
export function atQuantile(q, u) {
  let i = 1;
  while (i < q.length - 1 && q[i][0] < u) i += 1;
  const [[p0, x0], [p1, x1]] = [q[i - 1], q[i]];
  return p1 === p0 ? x1 : x0 + ((u - p0) / (p1 - p0)) * (x1 - x0);
}

/**
 * A draw of one request's lag (ms) from a table: a ms-floored reading gets its lost fraction of
 * a ms back (the lag lies anywhere in the millisecond the proxy read).
 */
export const drawLag = (table, rand) =>
  atQuantile(table.q, rand()) + (table.resolutionMs >= 1 ? rand() * table.resolutionMs : 0);

/**
 * The quantiles at `ps` of several recorded quantile tables pooled ({n, q} each), each weighted
 * by its count: the mixture's distribution function, inverted by bisection.
 */
export function pooledQuantiles(parts, ps) {
  const total = parts.reduce((a, p) => a + p.n, 0);
  const cdf = (x) => parts.reduce((a, p) => a + p.n * fractionBelow(p.q, x), 0) / total;
  const lo = Math.min(...parts.map((p) => p.q[0][1]));
  const hi = Math.max(...parts.map((p) => p.q.at(-1)[1]));
  return ps.map((pr) => {
    if (pr <= 0) return [pr, lo];
    if (pr >= 1) return [pr, hi];
    let [a, b] = [lo, hi];
    for (let k = 0; k < 60; k += 1) {
      const m = (a + b) / 2;
      if (cdf(m) < pr) a = m;
      else b = m;
    }
    return [pr, Math.round(b * 1000) / 1000];
  });
}

/** The share of a quantile table's values at or below x, linear between its points. */
function fractionBelow(q, x) {
  if (x < q[0][1]) return 0;
  if (x >= q.at(-1)[1]) return 1;
  let i = 1;
  while (q[i][1] < x) i += 1;
  const [[p0, x0], [p1, x1]] = [q[i - 1], q[i]];
  return x1 === x0 ? p1 : p0 + ((x - x0) / (x1 - x0)) * (p1 - p0);
}
