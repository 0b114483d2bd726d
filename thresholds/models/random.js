/* A small seeded PRNG (mulberry32): the model's jitter trials must give the same range every run. */
export function seededRandom(seedText) {
  let h = 2166136261;
  for (const c of String(seedText)) h = Math.imul(h ^ c.charCodeAt(0), 16777619);
  let a = h >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// How many seeded trials make a model's range: a run drawn from the same distribution falls
// outside the range of N trials with odds 2/(N+1), so 256 keeps that under 1 % per figure.
export const RANGE_TRIALS = 256;
