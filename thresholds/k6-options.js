/*
 * A plan as k6 options: its kind's scenarios (exec 'hit' for the load, 'warm' for connections
 * opened before it) and every case's thresholds, which are the plan's expected ranges. Imported
 * by the k6 scripts (k6/lib/run.js) and by the unit tests; k6-safe.
 */
import { kindOfPlan } from './plan.js';

const TREND_STATS = ['avg', 'min', 'med', 'max', 'p(90)', 'p(99)'];

/** The plan k6 runs: a kind may run one case per k6 process (capped: one cap level). */
export const k6Plan = (plan, env = {}) => kindOfPlan(plan).k6Plan?.(plan, env) ?? plan;

export function k6Options(plan, baseUrls) {
  const kind = kindOfPlan(plan);
  for (const c of plan.cases) if (!baseUrls[c.service]) throw new Error(`no address for service ${c.service}`);
  const thresholds = {};
  for (const c of plan.cases) Object.assign(thresholds, kind.thresholds(c, plan));
  const tls = plan.cases.some((c) => String(c.origin ?? '').startsWith('https:'));
  return {
    scenarios: kind.scenarios(plan),
    thresholds,
    discardResponseBodies: true,
    summaryTrendStats: kind.trendStats ?? TREND_STATS,
    setupTimeout: '30s',
    // A team's policy: its names at 127.0.0.1, its TLS listeners with the lab's certificate, and a
    // redirect counted as the answer it is (never followed off the machine).
    ...(plan.hosts ? { hosts: plan.hosts } : {}),
    ...(tls ? { insecureSkipTLSVerify: true } : {}),
    ...(plan.targetPolicies ? { maxRedirects: 0 } : {}),
  };
}

/**
 * What one k6 process runs of a plan: its part (k6Plan), its kind's name and its options. The
 * lab's runner computes it once per phase (lab/run/k6.mjs) for k6/lib/prepared.js; k6 alone,
 * in each VU of an experiment's script (k6/lib/run.js).
 */
export function k6Run(plan, baseUrls, env = {}) {
  const part = k6Plan(plan, env);
  return { plan: part, kind: kindOfPlan(part).name, options: k6Options(part, baseUrls) };
}
