/*
 * The one record of a judged case, as outcomes.json holds it: suite, case, params, the seed's
 * figures, what was expected and measured, each check, and whether it passed. A case passes
 * when every check the lab made passed and k6 judged every threshold of the case the same way.
 */

/** Did k6 pass every threshold it was given for a case (a metric it never saw is not a failure)? */
export function k6Passed(summary, thresholds) {
  const metrics = summary?.metrics || {};
  return Object.entries(thresholds).every(([name, exprs]) => exprs.every((x) => metrics[name]?.thresholds?.[x]?.ok !== false));
}

/** A value of k6's summary: a sub-metric's stat, or `dflt` when k6 has none. */
export const summaryValue = (summary, name, stat, dflt = null) => summary?.metrics?.[name]?.values?.[stat] ?? dflt;

/**
 * One judged figure of a case, as the stores and the results pages take it: the measure, the
 * expected range (lo or hi null when one-sided), what was measured, and whether it passed.
 */
export const figure = (measure, range, measured, pass) => ({
  measure, lo: range?.lo ?? null, hi: range?.hi ?? null, measured: Number.isFinite(measured) ? measured : null, pass: Boolean(pass),
});

export function outcome({ plan, c, params, measured, checks, summary, thresholds }) {
  return {
    suite: plan.suite,
    case: c.name,
    params,
    seed: c.seed,
    expected: c.expected,
    measured,
    checks,
    pass: summary != null && k6Passed(summary, thresholds) && Object.values(checks).every(Boolean),
  };
}
