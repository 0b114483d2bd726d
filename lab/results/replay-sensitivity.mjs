/*
 * How small a policy change a recorded run catches, judged by the replay: the run's own sends
 * and the proxies' sightings of them replayed under the policy changed one knob at a time, in
 * growing steps either way, until some case's count or wait no longer fits what was measured.
 * The same schedule throughout: what the run could have told apart, not what a plan assumed.
 */
import { plan as makePlan, experimentNamed } from '../../thresholds/plan.js';
import { kinds } from '../kinds/index.mjs';
import { measuredFromFolder } from './cases.mjs';
import { policyNumbers, withNumber } from '../../thresholds/models/limiter-replay.js';

// Relative steps tried in each direction, smallest first.
export const STEPS = [0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.33, 0.5];

/** A policy number moved by a relative step: whole ones stay whole and move by at least one. */
function moved(value, whole, f) {
  if (!whole) return value * (1 + f);
  const v = Math.max(0, Math.round(value * (1 + f)));
  return v === value ? Math.max(0, value + Math.sign(f)) : v;
}

/** The judged checks a plan fails on the recorded phase, as 'case measure', for the cases of `target`. */
function failures(plan, measured, target) {
  const { outcomes } = kinds.limiter.judge(plan, measured);
  return outcomes
    .filter((o, i) => plan.cases[i].target === target)
    .flatMap((o) => ['ok', 'limited', 'latency'].filter((k) => o.checks[k] === false).map((k) => `${o.case} ${k}`));
}

/**
 * The plan a run's phase is replayed on, and its targets ({id, policy}): a team's policy as its
 * recorded plan says it (the file is not needed again), an experiment's planned anew.
 */
function judgedPlan(run, e, phase) {
  const recorded = phase.plan?.targetPolicies;
  if (recorded) return { base: phase.plan, targets: Object.entries(recorded).map(([id, policy]) => ({ id, policy })) };
  const base = makePlan({
    experiment: e.name,
    suite: run.info.suite,
    factor: run.info.factor,
    overrides: run.info.knobs?.[e.name] ?? {},
  });
  return { base, targets: experimentNamed(e.name).targets(base.policy) };
}

/**
 * Per limiter target of a run ({info, experiments} as readRun gives it) and number of its policy:
 * the smallest step either way that some of its cases fail, and what they fail.
 */
export function replaySensitivity(run) {
  const rows = [];
  for (const e of run.experiments) {
    const phase = e.phases[0];
    if (!phase?.sends) continue;
    const { base, targets } = judgedPlan(run, e, phase);
    const measured = measuredFromFolder({ ...phase, plan: base });
    for (const target of targets) {
      const ran = base.cases.filter((c) => c.target === target.id);
      if (!ran.length) continue;
      const unchanged = failures(base, measured, target.id);
      for (const { path, value, whole } of policyNumbers(target.policy)) {
        const found = {};
        for (const dir of [-1, 1]) {
          for (const f of STEPS) {
            const next = moved(value, whole, dir * f);
            if (next === value) continue;
            const policy = withNumber(target.policy, path, next);
            const changed = { ...base, targetPolicies: { ...base.targetPolicies, [target.id]: policy } };
            const failed = failures(changed, measured, target.id).filter((x) => !unchanged.includes(x));
            if (failed.length) {
              found[dir < 0 ? 'down' : 'up'] = { step: f, value: next, failed };
              break;
            }
          }
        }
        rows.push({
          experiment: e.name,
          target: target.id,
          field: path.join('.'),
          value,
          cases: ran.length,
          ...found,
        });
      }
    }
  }
  return rows;
}
