/*
 * What every command of the lab's command line shares: where the repository and the keepers'
 * state are, how to print, the topology, the policy a served stack runs with, a folder's size.
 * The entry point (index.mjs) hands this to each command as its `ctx`.
 */
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { plan as makePlan, experiments, stackTargets } from '../../thresholds/plan.js';
import { loadTopology } from '../stack/topology.mjs';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const stateDir = join(root, '.lab', 'state');
export const say = (m) => console.log(m);
export const topology = () => loadTopology(join(root, 'docker-compose.yml'));

export function policyFor(req) {
  // `up` and `render` serve a stack, not a suite: the knobs (and --quick scaling) of any plan of it.
  const exp = experiments[req.name];
  const suite = Object.keys(exp.suites)[0];
  const p = makePlan({ experiment: req.name, suite, factor: req.factor, overrides: req.overrides[req.name] });
  return { policy: p.policy, targets: stackTargets(req.name, p.knobs, p.policy) };
}
