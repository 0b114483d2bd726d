/*
 * The first stage of a phase: its plan written where k6 and `just verdict` read it, its stack
 * started (fresh folders per phase), the stack's CPU sampled from now on, and every child the
 * run starts (k6) tracked in the run's state file.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stackTargets, stackOf } from '../../thresholds/plan.js';
import { startStack } from '../stack/start-stop.mjs';
import { parseCaps } from '../stack/cgroups.mjs';
import { sampleCpu } from '../stack/cpu.mjs';
import { runName } from '../lib/run-names.mjs';
import { exportOptions } from '../export/options.mjs';
import { k6Plan } from '../../thresholds/k6-options.js';

export async function startPhase(plan, { root, env, topology, run, say, running }) {
  const { dir, tmp, state } = run;
  const planFile = join(dir, `${runName(plan)}.plan.json`);
  writeFileSync(planFile, JSON.stringify(plan, null, 1));
  const capped = plan.factor < plan.requestedFactor ? ` (--quick capped at x${plan.factor} for this experiment)` : '';
  say(
    `${plan.experiment}: starting stack${capped}${plan.phase ? ` for ${plan.phase}${plan.policy.caps ? ` (caps ${plan.policy.caps})` : ''}` : ''}`,
  );
  const targets = stackTargets(plan.experiment, plan.knobs, plan.stackPolicy ?? plan.policy);
  // A phase starts from empty folders: nothing (an edge's cache) carried over from the last.
  // A perturbed run: the stack runs the untold knobs and the slowed services (lab/cli/args.mjs).
  if (plan.stackPolicy || plan.slowed)
    say(
      `${plan.experiment}: PERTURBED stack, the model is not told: ${[...Object.entries(plan.untold || {}).map(([k, v]) => `${k}=${v}`), ...Object.entries(plan.slowed || {}).map(([s, n]) => `${s} at ${n} % of a core`)].join(', ')}`,
    );
  const stack = await startStack({
    root,
    env,
    topology,
    profile: stackOf(plan.experiment),
    policy: plan.stackPolicy ?? plan.policy,
    slowed: plan.slowed,
    targets,
    tmpDir: plan.phase ? join(tmp, plan.phase) : tmp,
    logDir: join(dir, 'logs'),
    state,
    log: (m) => say(`  ${m}`),
  });
  // The options k6 runs, as a k6 user reads them (the run page's Script tab): scenarios and
  // thresholds, each threshold's model figure and tolerance.
  writeFileSync(
    join(dir, `${runName(plan)}.options.json`),
    JSON.stringify(exportOptions(k6Plan(plan), stack.baseUrls, { constant: false }), null, 1),
  );
  const sampler = sampleCpu(stack.procs);
  const caps = Object.fromEntries(stack.procs.filter((p) => p.cgroup).map((p) => [p.name, parseCaps(p.caps)]));
  const setChild = (k6, label = 'k6') => {
    running.add(k6);
    state.add({ name: `${label} ${plan.experiment}`, pid: k6.pid });
    sampler.track(label, k6.pid);
  };
  return { planFile, stack, sampler, caps, setChild };
}
