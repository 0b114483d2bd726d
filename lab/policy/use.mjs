/*
 * `--policy=FILE [--stack-policy=FILE2]` on a command: the team's file read (lab/policy/index.mjs),
 * planned as an experiment (experiment.mjs) with the stack it runs in (stack.mjs), and added beside
 * the lab's experiments for this command. --stack-policy is the perturbation tool for policies, as
 * --stack-knob is for the seeds: the stack runs FILE2 while the model reads FILE.
 */
import { resolve } from 'node:path';
import { addExperiment } from '../../thresholds/experiments/index.js';
import { readPolicy, policyTools } from './index.mjs';
import { policyExperiment } from './experiment.mjs';
import { policyServices } from './stack.mjs';

/** The target ids a policy plans, for telling whether a stack's file is the same policy changed. */
const targetIds = (experiment) => experiment.targets(Object.fromEntries(Object.entries(experiment.knobs).map(([k, v]) => [k, v.default]))).map((t) => t.id).join(', ');

/**
 * Reads the policy (and the stack's, when perturbed), adds its experiment with its stack;
 * returns {experiment, routes, policy, stackPolicy (its file, or null)}.
 */
export function usePolicy({ policy: file, stackPolicy: stackFile }, root) {
  const tools = policyTools(root);
  const policy = readPolicy(file, tools);
  const { experiment, routes } = policyExperiment(policy);
  let run = policy;
  if (stackFile) {
    run = readPolicy(stackFile, tools);
    const theirs = policyExperiment(run, { name: experiment.name }).experiment;
    if (run.proxy !== policy.proxy || targetIds(theirs) !== targetIds(experiment)) {
      throw new Error(`--stack-policy=${stackFile} must be ${file} with numbers changed: it has ${run.proxy} routes ${targetIds(theirs)}, the policy ${policy.proxy} routes ${targetIds(experiment)}`);
    }
  }
  experiment.services = policyServices(experiment.name, run, tools);
  experiment.policyRoutes = routes;
  addExperiment(experiment);
  return { experiment, routes, policy, stackPolicy: stackFile ? resolve(stackFile) : null };
}
