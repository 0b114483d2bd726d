/*
 * The one list of the lab's experiments: adding one is its file beside this one and one line
 * below (docs/adding-an-experiment.md). Everything that names experiments iterates over this
 * list: the runner, the command line, the docs, the dashboards, the benches and the tests.
 * The order is the order in which a suite runs them.
 */
import burst from './burst.js';
import envoyVsNginx from './envoy-vs-nginx.js';
import caching from './caching.js';
import cdn from './cdn.js';
import jsonFilter from './json-filter.js';

export const list = [burst, envoyVsNginx, caching, cdn, jsonFilter];

/** The experiments by name. */
export const experiments = Object.fromEntries(list.map((e) => [e.name, e]));

/**
 * A team's policy, read from its file for one command (lab/policy/experiment.mjs), added by name
 * beside the list's: the plan, the kinds and the judges find it as they find any. It joins no suite
 * listing (it is not in `list`), and its name may not be one of the list's.
 */
export function addExperiment(e) {
  if (list.some((x) => x.name === e.name))
    throw new Error(`a policy cannot be named '${e.name}': an experiment of the lab has that name`);
  experiments[e.name] = e;
  return e;
}
