/*
 * Which policy changes a suite's thresholds catch: per case and per knob, the smallest change
 * in each direction that moves the model's whole predicted range out of the thresholds built
 * for the unchanged policy: the stack running another policy than the model was told, with the
 * load unchanged, which is exactly what a run can and cannot see.
 */
import { plan, experimentNamed } from './plan.js';
import { kindOf } from './kinds/index.js';

/**
 * sensitivity({experiment, suite, factor, overrides}) -> {cases: [{id, knobs: {label: {down, up, by}}}],
 * knobs: {label: {down, up, cases}}, unseen: [labels]}; `down`/`up` are the smallest changes
 * (knob units, seed timing) that some threshold catches for sure, or null within the search.
 * "Catch" is for sure: a change whose predicted range only overlaps the thresholds may fail a
 * run or not, and is not counted. p99 bounds (cases that queue nothing) are not counted either:
 * the model gives the longest wait, not the 99th percentile. Each plan kind computes it its own
 * way (`sensitivity` in thresholds/kinds/); a kind without one says where its README shows it.
 */
export function sensitivity({ experiment, suite, factor = 1, overrides = {} }) {
  const exp = experimentNamed(experiment);
  const kind = kindOf(exp);
  const base = plan({ experiment, suite, factor, overrides });
  if (!kind.sensitivity)
    throw new Error(
      `--sensitivity is not computed for ${experiment} (${kind.sensitivityWhy ?? `a ${kind.name} plan`}); stacks/${experiment}/README.md shows which policy changes its thresholds catch`,
    );
  return kind.sensitivity(exp, base);
}
