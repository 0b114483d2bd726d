/*
 * `--policy=FILE [--stack-policy=FILE2]` on a command: the team's file read (lab/policy/index.mjs),
 * planned as an experiment (experiment.mjs) with the stack it runs in (stack.mjs), and added beside
 * the lab's experiments for this command. --stack-policy is the perturbation tool for policies, as
 * --stack-knob is for the seeds: the stack runs FILE2's numbers while the model reads FILE's.
 */
import { resolve } from 'node:path';
import { addExperiment } from '../../thresholds/experiments/index.js';
import { resolveKnobs } from '../../thresholds/knobs.js';
import { readPolicy, policyTools, policyRows } from './index.mjs';
import { policyExperiment } from './experiment.mjs';
import { proxyOf } from './proxies/index.mjs';
import { policyServices, preflight } from './stack.mjs';

/** What a policy plans, but for its numbers: targets, statuses, keys and which knobs it has. */
const shape = (experiment) =>
  JSON.stringify({
    targets: experiment.targets(resolveKnobs(experiment)).map((t) => [t.id, t.path, t.limitedStatus, t.request]),
    knobs: Object.keys(experiment.knobs),
  });

/**
 * The stack's file as knobs the model is not told of (--stack-knob's): every number and switch
 * where FILE2 differs from FILE. Anything else that differs is refused: the lab could not say
 * what the stack ran.
 */
function untoldOf(experiment, file, stackFile, tools, includeDirs) {
  const theirs = policyExperiment(readPolicy(stackFile, tools, { includeDirs }), { name: experiment.name }).experiment;
  if (shape(theirs) !== shape(experiment))
    throw new Error(
      `--stack-policy=${stackFile} may differ from ${file} only in the numbers and switches the lab reads as knobs (${Object.keys(experiment.knobs).join(', ')}): its routes, keys, statuses or limits differ`,
    );
  const changed = Object.entries(theirs.knobs).filter(
    ([k, v]) => JSON.stringify(v.default) !== JSON.stringify(experiment.knobs[k].default),
  );
  if (!changed.length)
    throw new Error(`--stack-policy=${stackFile} has the same numbers as ${file}: nothing is perturbed`);
  return Object.fromEntries(changed.map(([k, v]) => [k, String(v.default)]));
}

/** What the run folder keeps of the policy (<name>.policy.json): the run page shows it. */
export function asRead(experiment, policy, routes, stackFile) {
  const [head, rows] = policyRows(policy);
  const proxy = Object.values(experiment.services).find((s) => s.configs.conf);
  return {
    proxy: policy.proxy,
    file: policy.file,
    stackFile: stackFile ? resolve(stackFile) : null,
    table: { head, rows },
    routes,
    // What the lab reads from where and changes to run it, said on the Policy tab.
    changes: proxyOf(policy).changes(policy),
    configs: Object.entries(proxy.configs).map(([key, c]) => ({
      file: c.file,
      path: `config/${proxy.name}/${c.file}`,
      what: key === 'conf' ? 'as the stack ran it' : 'as written',
    })),
  };
}

/**
 * Reads the policy, adds its experiment with its stack; returns {experiment, routes, policy,
 * stackPolicy (FILE2's path, or null), untold (FILE2's numbers as knobs the stack runs with)}.
 */
export function usePolicy({ policy: file, stackPolicy: stackFile, name = null, includeDirs = [] }, root) {
  const tools = policyTools(root);
  const policy = readPolicy(file, tools, { includeDirs });
  const { experiment, routes } = policyExperiment(policy, { name });
  const untold = stackFile ? untoldOf(experiment, file, stackFile, tools, includeDirs) : null;
  experiment.services = policyServices(experiment, policy, tools);
  preflight(experiment, root);
  experiment.asRead = asRead(experiment, policy, routes, stackFile);
  addExperiment(experiment);
  return { experiment, routes, policy, stackPolicy: stackFile ? resolve(stackFile) : null, untold };
}
