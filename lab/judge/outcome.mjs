/*
 * The one record of a judged case, as outcomes.json holds it: suite, case, params, the seed's
 * figures, what was expected and measured, each check, and whether it passed. A case passes
 * when every check the lab made passed and k6 judged every threshold of the case the same way.
 * A check is true, false, or null: shown, not judged (its range admits every value the case
 * could produce, thresholds/kinds/judged.js); a shown check neither passes nor fails a case.
 */
import { within } from './table.mjs';

/** Did k6 pass every threshold it was given for a case (a metric it never saw is not a failure)? */
export function k6Passed(summary, thresholds) {
  const metrics = summary?.metrics || {};
  return Object.entries(thresholds).every(([name, exprs]) =>
    exprs.every((x) => metrics[name]?.thresholds?.[x]?.ok !== false),
  );
}

/** A value of k6's summary: a sub-metric's stat, or `dflt` when k6 has none. */
export const summaryValue = (summary, name, stat, dflt = null) => summary?.metrics?.[name]?.values?.[stat] ?? dflt;

/** Is `value` within expected[key]: null (shown) where that range is among the case's shown ones. */
export const judgedWithin = (shown, key, value, expected) => (shown[key] ? null : within(value, expected[key]));

/** Checks printed as one row: FAIL if a judged one failed, shown if none is judged. */
export const allOf = (...checks) =>
  checks.every((x) => x === null) ? null : checks.every((x) => x === null || x === true);

/**
 * One judged figure of a case, as the stores and the results pages take it: the measure, the
 * expected range (lo or hi null when one-sided), what was measured, and whether it passed.
 * A shown check (null) makes no figure: `judgedFigures` leaves it out.
 */
export const figure = (measure, range, measured, pass) => ({
  measure,
  lo: range?.lo ?? null,
  hi: range?.hi ?? null,
  measured: Number.isFinite(measured) ? measured : null,
  pass: pass === null ? null : Boolean(pass),
});
export const judgedFigures = (figures) => figures.filter((f) => f.pass !== null);

export function outcome({ plan, c, params, measured, checks, summary, thresholds }) {
  return {
    suite: plan.suite,
    case: c.name,
    params,
    seed: c.seed,
    expected: c.expected,
    measured,
    checks,
    pass:
      summary != null &&
      k6Passed(summary, thresholds) &&
      Object.values(checks)
        .filter((x) => x !== null)
        .every(Boolean),
  };
}
