/*
 * `export <suite>/<experiment> [--quick[=N]] [knobs] [--policy=FILE] [--phase=ID] [--out=FILE]`:
 * the test as one standalone k6 script (lab/export/script.mjs), to stdout or FILE.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseRunArgs, policyFlags, valueFlags } from './args.mjs';
import { usePolicy } from '../policy/use.mjs';
import { plansFor } from '../run/open.mjs';
import { gitState } from '../run/suite.mjs';
import { loadTopology } from '../stack/topology.mjs';
import { experimentNamed, kindOfPlan } from '../../thresholds/plan.js';
import { exportScript } from '../export/script.mjs';
import { labWords } from '../lib.mjs';

const USAGE =
  './labw export <suite>/<experiment> [--quick[=N]] [knob=value ...] [--phase=ID] [--out=FILE], or ./labw export <suite> --policy=FILE [...]';

/** The request: one experiment of a suite, or a team's policy's; what-ifs only (nothing to perturb). */
function exportRequest(words, root) {
  const flags = policyFlags(words);
  if (flags.stackPolicy)
    throw new Error(`--stack-policy perturbs a stack the lab starts; an export has none. ${USAGE}`);
  const only = flags.policy ? usePolicy(flags, root).experiment.name : null;
  const request = parseRunArgs(flags.rest, { only });
  if (request.experiments.length !== 1)
    throw new Error(
      `export writes one experiment's test: name it as ${request.name}/<experiment> (${request.experiments.join(', ')}). ${USAGE}`,
    );
  if (request.untold || request.slowed || request.segments > 1)
    throw new Error(
      `--stack-knob, --stack-cpu, --k6-cpu and --segments shape a lab run, not a script: export the what-if knobs only. ${USAGE}`,
    );
  return { request, policyFile: flags.policy };
}

/**
 * The `./labw up` words of the stack this plan was made for: its experiment (or policy), --quick and
 * the what-if knobs.
 */
function upWords(plan, overrides, policyFile) {
  const knobs = Object.entries(overrides ?? {}).map(([k, v]) => `${k}=${v}`);
  return labWords({
    target: [policyFile ? `--policy=${policyFile}` : plan.experiment],
    factor: plan.factor,
    knobs,
  }).join(' ');
}

/** The script's header: what it tests, how it was made, how to run it. */
function about({ plan, overrides, phases, words, commit, policyFile }) {
  const exp = plan.experiment;
  return [
    `${exp}, ${plan.suite} suite${plan.factor > 1 ? `, --quick x${plan.factor}` : ''}${plan.phase ? `, phase ${plan.phase}` : ''}: ${plan.cases.length} cases.`,
    `Exported by \`./labw export ${words.join(' ')}\` from proxy-policy-lab${commit ? ` at ${commit.commit}${commit.dirty ? ' (with changes)' : ''}` : ''}.`,
    ...(policyFile ? [`The policy: ${policyFile}, as the lab read it; its test belongs beside it.`] : []),
    "Each threshold is what the lab's model of the policy expects, with its stated tolerance: one that",
    'fails says the proxy did not do what its policy says (or k6 could not send the schedule).',
    '',
    `Run it:   k6 run script.js                       (the lab's stack: ./labw up ${upWords(plan, overrides, policyFile)})`,
    '          k6 run -e BASE_URL=http://host script.js   (the same ports elsewhere), or each <SERVICE>_URL',
    "Archive:  k6 archive script.js                   (k6-operator's TestRun, Grafana Cloud k6)",
    ...(phases.length > 1
      ? [`This is one k6 process of ${phases.length} (${phases.join(', ')}): --phase=ID exports another.`]
      : []),
    '',
  ];
}

export default async function exportCommand(words, { root, say }) {
  const { rest, values } = valueFlags(words, { '--out': ['out', 'FILE'], '--phase': ['phase', 'ID'] });
  const { request, policyFile } = exportRequest(rest, root);
  const [whole] = plansFor(request);
  const kind = kindOfPlan(whole);
  const phases = kind.phaseIds?.(whole) ?? [];
  if (values.phase && !phases.includes(values.phase))
    throw new Error(
      `--phase=${values.phase}: ${phases.length ? `this plan's phases are ${phases.join(', ')}` : 'this plan runs as one k6 process'}`,
    );
  const plan = kind.k6Plan ? kind.k6Plan(whole, values.phase ? { PHASE: values.phase } : {}) : whole;
  const topology = loadTopology(join(root, 'docker-compose.yml'));
  Object.assign(topology.services, experimentNamed(plan.experiment).services ?? {});
  const ports = Object.fromEntries(Object.entries(topology.services).map(([name, s]) => [name, s.ports?.http]));
  const script = exportScript(root, plan, {
    ports,
    about: about({
      plan,
      overrides: request.overrides[plan.experiment],
      phases,
      words,
      commit: gitState(root),
      policyFile,
    }),
  });
  if (!values.out) {
    process.stdout.write(script);
    return 0;
  }
  writeFileSync(values.out, script);
  say(`${values.out}: ${plan.experiment} ${plan.suite}, ${plan.cases.length} cases, ${script.length} bytes`);
  return 0;
}
