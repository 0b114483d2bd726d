/*
 * `new <name> --policy=FILE`: a team's nginx.conf or Envoy bootstrap made an experiment of the
 * repository, so that its test lives beside its config and gets the seeds' history, baseline and
 * CI. The lab reads the file from stacks/<name>/ whenever it plans (lab/policy/declared.mjs).
 * Writes, and refuses to overwrite:
 *   stacks/<name>/<file> (and the files it includes), stacks/<name>/README.md
 *   thresholds/experiments/<name>.js, one import and one list entry in thresholds/experiments/index.js
 *   k6/<name>.js, dashboards/src/<name>.mjs (its board) and the boards' JSON (dashboards/build.mjs)
 */
import { existsSync, mkdirSync, copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { dirname, join, relative, resolve } from 'node:path';
import { policyFlags } from './args.mjs';
import { experiments } from '../../thresholds/experiments/index.js';
import { readPolicy, policyTools } from '../policy/index.mjs';
import { proxyOf } from '../policy/proxies/index.mjs';
import { policyExperiment } from '../policy/experiment.mjs';

const USAGE =
  './labw new <name> --policy=FILE (name: lower case letters, digits and -, 2 to 31 of them, starting with a letter)';

/** index.js with the experiment's import after the last one and its entry at the end of `list`. */
function listed(text, name) {
  const id = name.replace(/-([a-z0-9])/g, (_, c) => c.toUpperCase());
  const imports = [...text.matchAll(/^import .* from '\.\/[a-z0-9-]+\.js';$/gm)];
  const last = imports.at(-1);
  const at = last.index + last[0].length;
  const withImport = `${text.slice(0, at)}\nimport ${id} from './${name}.js';${text.slice(at)}`;
  if (!/^export const list = \[[^\]]*\];$/m.test(withImport))
    throw new Error('thresholds/experiments/index.js: no `export const list = [...];` line to add to');
  // The list as Prettier left it, on one line or one item per line: the items, then this one.
  return withImport.replace(/^export const list = \[([^\]]*)\];$/m, (_, items) => {
    const names = items
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean);
    return `export const list = [${[...names, id].join(', ')}];`;
  });
}

const experimentFile = (name, proxy, file) => `/*
 * ${name}: a team's own ${proxy} policy, stacks/${name}/${file} (made by \`./labw new\`). The lab
 * reads that file whenever it plans (lab/policy/declared.mjs), so an edit to the config changes
 * the cases and what each must give: \`./labw expect spike/${name}\`. k6 gets its plan from the runner.
 */
export default { name: '${name}', policyFile: 'stacks/${name}/${file}' };
`;

const scriptFile = (name) => `/*
 * A team's own policy, stacks/${name}/: run it with \`./labw test spike/${name}\` (the runner reads
 * the policy and hands k6 the plan).
 */
import { experimentRun } from './lib/run.js';

export const { options, setup, warm, hit, teardown, handleSummary } = experimentRun('${name}');
`;

const readmeFile = (name, proxy, file) => `# ${name}

A team's own ${proxy} policy: [${file}](${file}), kept here as written. The lab reads it whenever it
plans: every limited route gets cases under its rate, filling its burst and in a sustained
overload, each judged against the model of what the policy does (README.md, "Your own policy").

- \`./labw expect spike/${name}\`: the policy as the model read it, and what each case must give
- \`./labw expect spike/${name} --sensitivity\`: which change of each number a case catches
- \`./labw test spike/${name} [--quick]\`: run it, natively, and judge it
- \`./labw test spike/${name} --stack-knob <knob>=<value>\`: a perturbed stack that must fail
`;

// The proxy's own counts of a policy's stack are in its nothing-lost table: the stores scrape
// what docker-compose.yml declares, and a policy's stack is read from its file instead.
const boardFile = (name, proxy) => `/*
 * ${name}: a team's own ${proxy} policy (stacks/${name}/): k6's view of each case, and the longest
 * wait against the model's. The proxy's own counts are in each run's nothing-lost table.
 */
import { limiterBoard } from './lib.mjs';

export default () => limiterBoard('${name}', "A team's own ${proxy} policy, stacks/${name}/.", []);
`;

export default async function newExperiment(words, { root, say }) {
  const flags = policyFlags(words);
  const [name, ...extra] = flags.rest;
  if (!flags.policy || flags.stackPolicy || !name || extra.length)
    throw new Error(`usage: ${USAGE}; got '${words.join(' ')}'`);
  if (flags.includeDirs.length)
    throw new Error(
      `new keeps a policy's files in stacks/${name}/ and reads them there: put what --include-dir reads beside the config, under its folder, and include it from there`,
    );
  if (!/^[a-z][a-z0-9-]{1,30}$/.test(name)) throw new Error(`'${name}' is not a name the lab takes: ${USAGE}`);
  if (experiments[name]) throw new Error(`an experiment named '${name}' is already in thresholds/experiments/index.js`);
  const tools = policyTools(root);
  const policy = readPolicy(flags.policy, tools);
  // Plannable, or refused here, before anything is written.
  policyExperiment(policy, { name });
  const files = proxyOf(policy).ownFiles(policy);
  const own = files[0];
  const written = [
    ...files.map((f) => join('stacks', name, f)),
    join('stacks', name, 'README.md'),
    join('thresholds', 'experiments', `${name}.js`),
    join('k6', `${name}.js`),
    join('dashboards', 'src', `${name}.mjs`),
  ];
  const there = written.filter((f) => existsSync(join(root, f)));
  if (there.length) throw new Error(`'${name}': ${there.join(', ')} exist already`);
  const from = dirname(resolve(flags.policy));
  for (const f of files) {
    mkdirSync(dirname(join(root, 'stacks', name, f)), { recursive: true });
    copyFileSync(join(from, f), join(root, 'stacks', name, f));
  }
  writeFileSync(join(root, 'stacks', name, 'README.md'), readmeFile(name, policy.proxy, own));
  writeFileSync(join(root, 'thresholds', 'experiments', `${name}.js`), experimentFile(name, policy.proxy, own));
  writeFileSync(join(root, 'k6', `${name}.js`), scriptFile(name));
  writeFileSync(join(root, 'dashboards', 'src', `${name}.mjs`), boardFile(name, policy.proxy));
  const index = join(root, 'thresholds', 'experiments', 'index.js');
  writeFileSync(index, listed(readFileSync(index, 'utf8'), name));
  // Its board's JSON beside the others' (a unit test checks they are current).
  const built = spawnSync(process.execPath, [join(root, 'dashboards', 'build.mjs')], { cwd: root, encoding: 'utf8' });
  if (built.status !== 0) throw new Error(`dashboards/build.mjs: ${built.stderr || built.stdout}`);
  // The written modules as the tree's formatter writes them (./labw lint checks every module).
  const modules = [...written.filter((f) => /\.m?js$/.test(f)), relative(root, index)];
  const formatted = spawnSync(join(root, 'node_modules', '.bin', 'prettier'), ['--write', ...modules], {
    cwd: root,
    encoding: 'utf8',
  });
  if (formatted.status !== 0) throw new Error(`prettier: ${formatted.error?.message ?? formatted.stderr}`);
  say(
    `${name}: ${policy.proxy} policy ${relative(root, resolve(flags.policy))} made an experiment; written:\n  ${[...written, `${relative(root, index)} (one import, one list entry)`, `dashboards/${name}.json`].join('\n  ')}\nnext: ./labw expect spike/${name}, then ./labw test spike/${name} --quick`,
  );
  return 0;
}
