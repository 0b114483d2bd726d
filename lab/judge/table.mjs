/*
 * How the lab prints what it judged: one table formatter and the few ways a figure is written
 * in a cell (a pass mark, a range, a share, a duration). Every judge and command uses these.
 */

/**
 * A row's mark: ok, FAIL, or 'shown' for a figure that is shown, not judged (null): a measured
 * figure no range bounds, or a range that admits every value the case could produce
 * (thresholds/kinds/judged.js). A shown row never says ok.
 */
export const SHOWN = 'shown';
export const mark = (b) => (b === null ? SHOWN : b ? 'ok' : 'FAIL');

/** A number with `d` decimals, or '-' when there is none. */
export const fixed = (x, d = 1) => (x === null || x === undefined || Number.isNaN(x) ? '-' : x.toFixed(d));

/** A share as a percentage with `d` decimals ('-' for none). */
export const pct = (x, d = 2) => (x == null || Number.isNaN(x) ? '-' : `${(x * 100).toFixed(d)} %`);

/** A range lo..hi (one value when they are equal), each written by `f`. */
export const range = (r, f = (x) => x) => (r.lo === r.hi ? `${f(r.lo)}` : `${f(r.lo)}..${f(r.hi)}`);

/** A duration in ms as 12.3ms or 4.56s. */
export const ms = (v) => (v == null ? '-' : v >= 1000 ? `${(v / 1000).toFixed(2)}s` : `${v.toFixed(1)}ms`);

/** Is a measured value within a judged range? */
export const within = (v, r) => v !== null && v !== undefined && v >= r.lo && v <= r.hi;

export const CASE_HEAD = ['case', 'measure', 'seed', 'expected', 'measured', 'pass'];

/** Rows as aligned columns under a head. */
export function formatTable(rows, head = CASE_HEAD) {
  const all = [head, ...rows].map((r) => r.map(String));
  const w = head.map((_, i) => Math.max(...all.map((r) => r[i].length)));
  return all
    .map((r) =>
      r
        .map((c, i) => c.padEnd(w[i]))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** Rows for one case: the case's name on its first row only, the pass mark last. */
export function caseRows(name, rows) {
  return rows.map((r, i) => [i ? '' : name, ...r.slice(0, -1), mark(r[r.length - 1])]);
}

/**
 * The judged figures that failed, one line each, for the end of a run's output (the part a CI
 * log keeps): case, measure, what was measured and the bounds it missed.
 */
export function failedLines(outcomes) {
  const num = (x) => (typeof x === 'number' ? String(Number(x.toPrecision(4))) : String(x));
  return outcomes
    .filter((o) => !o.pass)
    .flatMap((o) => {
      const figs = (o.figures || []).filter((f) => f.pass === false);
      if (!figs.length)
        return [
          `  ${o.case}: failed (${
            Object.entries(o.checks || {})
              .filter(([, v]) => v === false)
              .map(([k]) => k)
              .join(', ') || 'no figure recorded'
          })`,
        ];
      const bounds = (f) =>
        f.lo != null && f.lo === f.hi
          ? `${num(f.lo)}`
          : [f.lo == null ? null : `>= ${num(f.lo)}`, f.hi == null ? null : `<= ${num(f.hi)}`]
              .filter(Boolean)
              .join(' and ');
      return figs.map((f) => `  ${o.case}: ${f.measure} ${num(f.measured)}, expected ${bounds(f)}`);
    });
}
