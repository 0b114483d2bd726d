/*
 * `test <suite[/experiment]> [--quick[=N]] [--segments=N] [--no-metrics] [knobs]`: run a suite,
 * print its tables; the exit code says whether every case passed. `test <suite> --policy=FILE
 * [--stack-policy=FILE2]`: a team's nginx.conf or Envoy bootstrap, read, planned, run and judged.
 */
import { parseRunArgs, policyFlags } from './args.mjs';
import { runSuite } from '../run/suite.mjs';
import { usePolicy } from '../policy/use.mjs';

export default async function test(words, { root, say }) {
  const flags = policyFlags(words);
  if (!flags.policy) return runSuite(root, parseRunArgs(words), { say });
  const used = usePolicy(flags, root);
  say(`${used.experiment.name}: the policy's name, from ${used.experiment.namedFrom} (--name=NAME gives another)`);
  const request = parseRunArgs(flags.rest, { only: used.experiment.name });
  if (used.stackPolicy)
    say(
      `${used.experiment.name}: the stack runs the numbers of ${used.stackPolicy}, the model reads ${used.policy.file}`,
    );
  const name = used.experiment.name;
  // FILE2's numbers are knobs the stack runs with and the model is not told of (--stack-knob's way).
  const perturbed = used.untold
    ? {
        untold: { [name]: { ...request.untold?.[name], ...used.untold } },
        slowed: request.slowed ?? {},
        stackPolicy: used.stackPolicy,
      }
    : {};
  return runSuite(root, { ...request, ...perturbed }, { say });
}
