/*
 * `keep <experiment|metrics> [knobs]` (internal, spawned by `up` and `metrics up`): start the
 * stack, write its endpoints for the caller, and own it until SIGTERM, SIGINT or SIGHUP.
 */
import { join } from 'node:path';
import { rmSync, writeFileSync } from 'node:fs';
import { parseRunArgs, stackWords } from './args.mjs';
import { policyFor } from './context.mjs';
import { labEnv } from '../run/suite.mjs';
import { startStack, stopStack } from '../stack/start-stop.mjs';
import { StateFile } from '../stack/procs.mjs';
import { METRICS_PROFILE, storesPolicy, applyRetention, storeUrls } from '../stores/stores.mjs';
import { stackOf, experiments } from '../../thresholds/plan.js';

/** What `keep` serves: an experiment's stack with its knobs, or the metrics stores. */
function keptStack(words, root) {
  if (words[0] === METRICS_PROFILE)
    return {
      name: METRICS_PROFILE,
      profile: METRICS_PROFILE,
      kind: METRICS_PROFILE,
      policy: storesPolicy(),
      targets: [],
    };
  const req = parseRunArgs(stackWords(words, root), { target: 'experiment' });
  return { name: req.name, profile: stackOf(req.name), kind: 'up', ...policyFor(req) };
}

export default async function keep(words, { root, stateDir, say, topology }) {
  const { name, profile, kind, policy, targets } = keptStack(words, root);
  // An experiment may bring its stack with it (a team's policy: lab/policy/stack.mjs).
  const services = { ...topology().services, ...(experiments[name]?.services ?? {}) };
  const dir = join(root, '.lab', 'tmp', `up-${name}`);
  const state = new StateFile(stateDir, `up-${name}`, { kind, tmp: dir });
  let stack;
  try {
    stack = await startStack({
      root,
      env: labEnv(root),
      topology: { ...topology(), services },
      profile,
      policy,
      targets,
      tmpDir: dir,
      logDir: join(dir, 'logs'),
      state,
    });
    if (kind === METRICS_PROFILE) await applyRetention(storeUrls(topology()), policy.retention);
  } catch (e) {
    state.remove();
    throw e;
  }
  const lines = [
    ...targets.map((t) => `${name}/${t.id} ${stack.baseUrls[t.service]}${t.path}`),
    ...Object.entries(stack.baseUrls).map(([svc, url]) => `${svc} ${url}`),
  ];
  writeFileSync(join(dir, 'endpoints.txt'), `${lines.join('\n')}\n`);
  stack.died.then((p) => say(`${p.name} exited (code ${p.exited.code}, signal ${p.exited.signal}); see ${p.logFile}`));
  await new Promise((resolve) => ['SIGTERM', 'SIGINT', 'SIGHUP'].forEach((sig) => process.once(sig, resolve)));
  await stopStack(stack);
  state.remove();
  rmSync(dir, { recursive: true, force: true });
  process.exit(0); // the signal listeners would keep it alive
}
