/*
 * How a policy's plan is said, wherever it is shown (`expect`, the run page's Policy tab): pure
 * functions of what the plan holds, so that a --quick run says the times it ran.
 */

const seconds = (s) => `${+s.toFixed(s < 10 ? 1 : 0)} s`;

/**
 * The pause between cases that share a bucket at --quick x`factor`, s: the longest any target's
 * bucket takes to be fresh again, and a second. `drains`: per target [refill s, drop s]: a bucket
 * refills in `refill` (quicker as --quick multiplies the rate), or is dropped after `drop` idle
 * (Traefik's ttl, whole seconds, not scaled), whichever is sooner.
 */
export const pauseAt = (drains, factor = 1) =>
  (Math.ceil(Math.max(0, ...drains.map(([refillS, dropS]) => Math.min(refillS, (dropS ?? Infinity) * factor)))) + 1) /
  factor;

/**
 * How a route's cases meet their buckets (`pacing`: {sequential, drains, shared} from the plan),
 * at --quick x`factor`, as the cases' times are. A run recorded before drains were kept holds
 * its pause at x1 (`pauseS`), which --quick divided.
 */
export function pacingWords(pacing, factor = 1) {
  const words = pacedWords(pacing, factor);
  // Where each case has its own key, the recovery still meets the overload's entry.
  return pacing.lingers
    ? `${words}, but the recovery right after the overload, on its key (its window still counts it)`
    : words;
}

/** How the cases of a route follow each other, as pacingWords says it. */
function pacedWords(pacing, factor) {
  if (!pacing.sequential) return 'together, each with a fresh bucket';
  const pause = pacing.drains ? pauseAt(pacing.drains, factor) : pacing.pauseS / factor;
  const why = pacing.shared
    ? 'its bucket empties or refills between'
    : pacing.connShared
      ? "a limit_conn keyed alike for every case: each one's requests in progress end between"
      : pacing.sessions
        ? "its frontend's accept limit counts every connection to it: its one-second counter forgets them between"
        : pacing.evict
          ? 'its small table keeps every key a case sent: the evict case first, on the empty table, and each after its entry is idle'
          : "another route's bucket empties or refills between";
  return `one after another, ${seconds(pause)} apart (${why})`;
}

/** A route's cases as said: its pacing, or why it has none. */
export const casesWords = (route, factor = 1) =>
  route.pacing ? [pacingWords(route.pacing, factor), ...(route.unplanned ?? [])].join('; ') : route.none;
