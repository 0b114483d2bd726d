#!/usr/bin/env node
/*
 * The lab's command line, called by the Justfile: this file only picks the command. Each is a
 * file beside it exporting `default async (words, ctx)` that returns the exit code.
 */
import { fileURLToPath } from 'node:url';
import { root, stateDir, say, topology } from './context.mjs';
import { completeDeclared } from '../policy/declared.mjs';

/*
 * The commands, and the words each takes:
 *   test <suite> [--quick[=N]] [--segments=N] [--no-metrics] [knobs]
 *                                          run a suite, print the tables, exit non-zero on failure
 *   expect <suite> [--quick[=N]] [knobs]   the model's plan as JSON, nothing started
 *     --sensitivity                        instead: the smallest policy change each case catches
 *   up <experiment> [--quick[=N]] [knobs]  start a stack and leave it up; prints `name url`
 *   down                                   stop whatever `up` started (and any orphans)
 *   metrics up [--retention=30d]|down|status|series [--write]
 *                                          the metrics stores, kept running between runs; their series per run
 *   clean [--yes]                          list (then, with --yes, delete) the stores' data, results and
 *                                          rendered configs
 *   keep <experiment|metrics> [knobs]      (internal) own an `up` stack until SIGTERM
 *   bench <experiment> [--quick] [knobs]   an experiment's bench, lab/bench/<experiment>.mjs
 *   bench k6 [--quick]                     k6's own CPU per request and memory per VU (sizing)
 *   bench results [--quick]                the results site's build time and page weight at 50 runs (10)
 *   bench stores [--quick]                 the stores through 500 runs' series: series, memory, disk; a last
 *                                          run complete
 *   render <experiment> [knobs]            write configs to .lab/rendered/ for docker compose
 *   render --k8s <suite>/<experiment> [--quick[=N]] [--parallelism N] [--prometheus URL] [knobs]
 *                                          Kubernetes manifests and a k6-operator TestRun, in .lab/rendered/k8s/
 *   docs [--check]                         rewrite (or check) the README figures from the model
 *   verdict <testid> [suite/experiment ...] the limiter cases of a run judged from Prometheus alone
 *   knobs [experiment]                     list knobs with their defaults
 *   results [serve|compare|baseline|check] the results site from results/ (lab/cli/results.mjs)
 *   policies [smoke|spike|perturbed ...]   every policy of test/policies/tests.json run, and perturbed
 *   new <name> --policy=FILE               a team's policy made an experiment of the repository
 *   export <suite>/<experiment> [--quick[=N]] [knobs] [--policy=FILE] [--phase=ID] [--out=FILE]
 *                                          the test as one standalone k6 script (k6 modules only)
 *   lint [--fix]                           ESLint and Prettier's check over every module
 * A flag that needs a value takes it after `=` or a space: --segments=2 or --segments 2.
 */
const commands = {
  test: './test.mjs',
  bench: './bench.mjs',
  expect: './expect.mjs',
  docs: './docs-command.mjs',
  up: './up.mjs',
  metrics: './metrics.mjs',
  panels: './panels.mjs',
  verdict: './verdict.mjs',
  clean: './clean.mjs',
  keep: './keep.mjs',
  down: './down.mjs',
  render: './render.mjs',
  knobs: './knobs.mjs',
  results: './results.mjs',
  policies: './policies.mjs',
  'compare-proxies': './compare-proxies.mjs',
  new: './new.mjs',
  export: './export.mjs',
  lint: './lint.mjs',
};

const [cmd, ...words] = process.argv.slice(2);
if (!Object.hasOwn(commands, cmd ?? '')) {
  console.error(`usage: lab <${Object.keys(commands).join('|')}> ...; unknown command '${cmd ?? ''}'`);
  process.exit(2);
}
// The teams' policies the list declares by their file, read before any command plans (the
// commands' modules list the experiments when they load).
// ctx: context.mjs's root, stateDir, say and topology(), and `entry`, this file (the keeper
// runs it).
try {
  completeDeclared(root);
  const { default: command } = await import(commands[cmd]);
  process.exitCode = await command(words, { root, stateDir, say, topology, entry: fileURLToPath(import.meta.url) });
} catch (e) {
  console.error(`error: ${e.message}`);
  process.exitCode = 2;
}
