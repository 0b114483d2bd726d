/*
 * The plan kinds as the runner sees them: each kind's plan and thresholds (thresholds/kinds/)
 * joined with its judge and how it runs (this folder). The runner, the stores and the commands
 * call a kind only through these properties (thresholds/kinds/README.md states them).
 */
import { kinds as planKinds } from '../../thresholds/kinds/index.js';
import { kindOfPlan } from '../../thresholds/plan.js';
import limiter from './limiter.mjs';
import closedLoop from './closed-loop.mjs';
import capped from './capped.mjs';
import capacity from './capacity.mjs';

/** What every kind has unless it says otherwise. */
const DEFAULTS = {
  // A plan runs as one phase: one stack, one k6 run.
  phases: null,
  // The proxies count each case's requests by status, for the nothing-lost table.
  proxyCounts: true,
  // Without a summary rebuilt from Prometheus, `just verdict` cannot judge it.
  summaryFromPrometheus: null,
  segments: false,
  appServed: false,
  // Judged on the plan's ranges alone: no send times are read back.
  replaysSends: false,
};

export const kinds = Object.fromEntries(
  [limiter, closedLoop, capped, capacity].map((k) => {
    if (!planKinds[k.name]) throw new Error(`lab/kinds/${k.name}.mjs: no thresholds/kinds/${k.name}.js`);
    for (const p of ['judge', 'figures', 'streams'])
      if (!k[p]) throw new Error(`lab/kinds/${k.name}.mjs has no '${p}' (thresholds/kinds/README.md)`);
    return [k.name, { ...DEFAULTS, ...planKinds[k.name], ...k }];
  }),
);
for (const name of Object.keys(planKinds))
  if (!kinds[name]) throw new Error(`thresholds/kinds/${name}.js has no judge in lab/kinds/`);

/** A plan's kind, by its experiment's declaration. */
export const kindFor = (plan) => kinds[kindOfPlan(plan).name];
