/*
 * Relayed requests per CPU-second (the bench's per-CPU points: per load, repetition and server,
 * wrk's rate and the server's process-group CPU), summed up the one way the bench prints them
 * and the README's recorded table shows them: per load and server, the median and spread over
 * the repetitions, alone and as a ratio to nginx's in the same repetition.
 */
export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
export const spread = (xs) => `${median(xs).toFixed(2)} (${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)})`;

/**
 * Per load and server, in the points' order: {connections, name, rps, errors, perCpuS: [..],
 * ratios: [..] against `reference`'s (the server the others are measured against), null for it}.
 */
export function perCpuSummary(points, reference) {
  const out = [];
  for (const connections of [...new Set(points.map((p) => p.connections))]) {
    const at = points.filter((p) => p.connections === connections);
    for (const name of [...new Set(at.map((p) => p.name))]) {
      const mine = at.filter((p) => p.name === name);
      out.push({
        connections,
        name,
        rps: mine.map((p) => p.rps),
        errors: mine.reduce((a, p) => a + p.errors, 0),
        perCpuS: mine.map((p) => p.perCpuS),
        ratios:
          name === reference
            ? null
            : mine.map((p) => p.perCpuS / at.find((q) => q.name === reference && q.rep === p.rep).perCpuS),
      });
    }
  }
  return out;
}
