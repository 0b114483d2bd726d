/*
 * Judged or shown. A range judges a case only if the case could produce a value outside it:
 * burst smoke's "200s 1..5" of 3 requests admits every count a limiter can give (a fresh key
 * passes its first request whatever the policy), so it passed whatever the stack did. Such a
 * range is shown, not judged: the table marks its row "shown", k6 gets only KEEP_ONLY for it (so
 * that its summary still holds the count), and it counts as no pass. Each kind states the values its
 * counts could take (`possible(c, plan)`);
 * a range it states none for (a latency, a rate) is judged. k6-safe.
 */

/** Does the range hold every value the case could produce ({lo, hi}, either end open)? */
export const admitsEvery = (range, possible) =>
  (range.lo ?? -Infinity) <= possible.lo && (range.hi ?? Infinity) >= possible.hi;

/**
 * The expected ranges of a case that judge nothing, by key of `expected`, each with why:
 * {ok: '1..5 admits every value 1..3 (a fresh limiter passes ...)'}.
 */
export function shownRanges(expected, possible) {
  const out = {};
  for (const [key, p] of Object.entries(possible)) {
    const r = expected?.[key];
    if (r && admitsEvery(r, p))
      out[key] = `${r.lo ?? ''}..${r.hi ?? ''} admits every value ${p.lo}..${p.hi} (${p.why})`;
  }
  return out;
}

/**
 * A count range that can fail where that is cheap: where the stated tolerance would admit
 * every value the case could produce and every trial of the model gave the same count, the
 * model's count itself is the range (smoke's few requests, far from any limiter's edge: 3 of 3
 * pass, measured so in every recorded smoke run). Otherwise the widened range, as it is; one
 * that still admits every value is shown (shownRanges).
 */
export function withTeeth(range, possible) {
  if (!possible || !admitsEvery(range, possible) || range.min !== range.max) return range;
  return { ...range, lo: range.min, hi: range.max };
}

/**
 * What a shown count gets instead of a range: k6 keeps a sub-metric in its summary only when it
 * has a threshold, and the tables and the nothing-lost check read the count from there. It holds
 * every count, so it judges nothing; the reports (k6/lib/summary.js, the results pages) leave it
 * out.
 */
export const KEEP_ONLY = 'count>=0';

/**
 * The same for a trend whose figure the lab judges from two of its stats (a spread: max less
 * min), which no single k6 threshold can express: it keeps the sub-metric in the summary and
 * judges nothing, and the reports leave it out too. Lateness is never a day early.
 */
export const KEEP_TREND = 'min>=-86400000';

/** Is a threshold expression one of the keep-only ones above? */
export const keepsOnly = (expr) => expr === KEEP_ONLY || expr === KEEP_TREND;

const num = (v) => (Number.isInteger(v) ? String(v) : String(+Number(v).toFixed(1)));

/**
 * A threshold's comment, as an exported script and the run's Script tab print it: the figure,
 * the model's own range, the stated tolerance that widened it, and the range judged.
 */
export function rangeNote(figure, r, tolerance) {
  const judged = `${r.lo ?? ''}..${r.hi ?? ''}`;
  if (r.min === undefined) return `${figure}: ${judged}`;
  // withTeeth's range: the model's count itself, where the tolerance would judge nothing.
  if (r.min === r.max && r.lo === r.min && r.hi === r.max)
    return `${figure}: ${num(r.min)}, as every trial of the model gave it (the tolerance would admit every count this case can give)`;
  return `${figure}: the model's ${num(r.min)}..${num(r.max)}, ${tolerance}: ${judged}`;
}

/** The comment of a keep-only threshold: what it keeps, and why it judges nothing. */
export const keepNote = (figure, why) =>
  `${figure}: judges nothing (${why}); k6 keeps a sub-metric in its summary only with a threshold (grafana/k6#1321)`;
