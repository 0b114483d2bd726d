/*
 * A model's range of a count widened by a stated tolerance: +-rel of the value or +-abs
 * requests, whichever is larger. The open and the closed-loop plans state different tolerances.
 */
export const countRange = ({ min, max }, { countRel, countAbs }) => ({
  min,
  max,
  lo: Math.max(0, Math.floor(min - Math.max(countAbs, countRel * min))),
  hi: Math.ceil(max + Math.max(countAbs, countRel * max)),
});
