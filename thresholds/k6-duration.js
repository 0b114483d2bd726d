/* k6's durations, as its options write them. k6-safe: the k6 scripts and the lab both read them. */

/** A k6 duration ('1500ms', '2s', '1m30s', '250us', '59.944444s') in ms. */
export const durationMs = (d) =>
  [...String(d || '0s').matchAll(/([0-9.]+)(us|µs|ms|s|m|h)/g)].reduce(
    (ms, [, n, u]) => ms + Number(n) * { us: 1e-3, µs: 1e-3, ms: 1, s: 1e3, m: 6e4, h: 3.6e6 }[u],
    0,
  );
