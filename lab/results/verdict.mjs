/*
 * `just verdict`: the plans of a run judged from Prometheus alone, by testid, as one would judge
 * a run split over several k6 processes or pods, whose own thresholds each saw a share only.
 * A kind can be judged so when it can rebuild its summary from Prometheus.
 */
import { kindFor, kinds } from '../kinds/index.mjs';
import { experiments } from '../../thresholds/plan.js';

export async function verdict(url, testid, plans) {
  const judged = [];
  for (const plan of plans) {
    const kind = kindFor(plan);
    if (!kind.summaryFromPrometheus) {
      const able = Object.values(experiments)
        .filter((e) => kinds[e.kind].summaryFromPrometheus)
        .map((e) => e.name);
      throw new Error(`verdict judges the ${able.join(', ')} experiments; ${plan.experiment} is a ${kind.name} plan`);
    }
    judged.push(kind.judge(plan, { summary: await kind.summaryFromPrometheus(url, testid, plan) }));
  }
  return { outcomes: judged.flatMap((j) => j.outcomes), rows: judged.flatMap((j) => j.rows) };
}
