/*
 * A recorded run judged again by today's model: each experiment's plan rebuilt from the run's
 * suite, factor and knobs (never from its plan files, and without the perturbation it ran with:
 * `--stack-knob` and `--stack-cpu` were not the model's), its phases walked as the runner walks
 * them, each judged on the folder's summary, CPU samples and resources.
 */
import { plan as makePlan } from '../../thresholds/plan.js';
import { measuredFromFolder } from './cases.mjs';
import { walkPhases } from '../kinds/phases.mjs';

/** `run`: readRun's (lab/results/runs.mjs). Returns the outcomes, each with its figures. */
export async function rejudge(run) {
  const { info } = run;
  const outcomes = [];
  for (const exp of run.experiments) {
    const plan = makePlan({
      experiment: exp.name,
      suite: info.suite,
      factor: info.factor,
      overrides: info.knobs?.[exp.name] ?? {},
      segments: info.segments ?? 1,
    });
    const judged = await walkPhases(
      plan,
      (p, kind) => {
        const recorded = exp.phases.find((x) => x.phase === (p.phase ?? null));
        // A phase k6 never loaded (a service died as it started) has no summary, but its resources.
        if (!recorded?.summary && !recorded?.resources)
          throw new Error(`${run.id}: no summary of ${exp.name}${p.phase ? ` ${p.phase}` : ''} in the run folder`);
        const j = kind.judge(p, measuredFromFolder({ ...recorded, plan: p }));
        for (const o of j.outcomes) o.figures = kind.figures(o);
        return j;
      },
      { say: () => {} },
    );
    outcomes.push(...judged.flatMap((j) => j.outcomes));
  }
  return outcomes;
}
