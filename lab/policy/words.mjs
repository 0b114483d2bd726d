/*
 * How a policy's plan is said, wherever it is shown (`expect`, the run page's Policy tab): pure
 * functions of what the plan holds, so that a --quick run says the times it ran.
 */

const seconds = (s) => `${+s.toFixed(s < 10 ? 1 : 0)} s`;

/**
 * How a route's cases meet their buckets (`pacing`: {sequential, pauseS, shared} from the plan),
 * at --quick x`factor`: the pause is the plan's divided by it, as the cases' times are.
 */
export function pacingWords(pacing, factor = 1) {
  if (!pacing.sequential) return 'together, each with a fresh bucket';
  return `one after another, ${seconds(pacing.pauseS / factor)} apart (${pacing.shared ? 'its bucket' : "another route's bucket"} empties or refills between)`;
}

/** A route's cases as said: its pacing, or why it has none. */
export const casesWords = (route, factor = 1) => (route.pacing ? pacingWords(route.pacing, factor) : route.none);
