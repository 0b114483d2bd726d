/*
 * A plan's phases in the order they run: the plan itself, or its kind's (capped: one per cap
 * level, each planned from what the last one judged). `one(phasePlan)` runs a phase, or reads a
 * recorded one, and returns what it judged; the runner and the re-judging of a recorded run
 * (lab/results/rejudge.mjs) walk a plan the same way.
 */
import { kindFor } from './index.mjs';

export async function walkPhases(plan, one, ctx) {
  const kind = kindFor(plan);
  const judged = [];
  const phases = kind.phases ? kind.phases(plan, ctx) : [plan].values();
  for (let next = phases.next(); !next.done;) {
    const j = await one(next.value, kind);
    judged.push(j);
    next = phases.next(j);
  }
  return judged;
}
