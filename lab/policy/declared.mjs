/*
 * A team's policy kept in the repository as an experiment (`./labw new`): its entry in the list
 * names only its file (thresholds/experiments/<name>.js: {name, policyFile}), and the lab reads
 * that file whenever a command starts, so an edit to the config changes the expectations. Here
 * each such entry gets what a --policy run's experiment has (lab/policy/use.mjs): its cases, its
 * knobs, its stack. k6 never needs it: the runner hands k6 the plan.
 */
import { join } from 'node:path';
import { list } from '../../thresholds/experiments/index.js';
import { readPolicy, policyTools } from './index.mjs';
import { policyExperiment } from './experiment.mjs';
import { policyServices } from './stack.mjs';
import { asRead } from './use.mjs';

/**
 * Every declared policy of the list read from its file and completed in place; throws naming the one
 * that cannot be.
 */
export function completeDeclared(root) {
  const tools = policyTools(root);
  for (const e of list.filter((x) => x.policyFile && !x.kind)) {
    let policy;
    try {
      policy = readPolicy(join(root, e.policyFile), tools);
    } catch (err) {
      throw new Error(`experiment ${e.name} (thresholds/experiments/${e.name}.js): ${err.message}`, { cause: err });
    }
    const { experiment, routes } = policyExperiment(policy, { name: e.name });
    Object.assign(e, experiment, { policyFile: e.policyFile });
    e.services = policyServices(e, policy, tools);
    e.asRead = asRead(e, policy, routes, null);
  }
}
