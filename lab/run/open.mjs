/*
 * Where a run lives, before anything starts: its id, its results folder (kept; results/latest
 * points at it), its scratch folder in .lab/tmp (removed by close()), its state file (so that a
 * later command reaps what a killed run left), the run lock (one run at a time: lock.mjs), the
 * tools' environment and the plans it runs.
 */
import { mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { plan as makePlan } from '../../thresholds/plan.js';
import { StateFile, reapStale } from '../stack/procs.mjs';
import { takeRunLock } from './lock.mjs';
import { stamp } from '../lib/run-names.mjs';

export function labEnv(root) {
  const env = { ...process.env, K6_NO_USAGE_REPORT: 'true' };
  env.PATH = [join(root, '.lab', 'bin'), '/usr/sbin', '/sbin', env.PATH].join(':');
  return env;
}

export { stamp, TESTID, TESTID_FORM, testidName } from '../lib/run-names.mjs';

/** The plans of a request (a suite, or one experiment of it), as `expect` prints and `test` runs. */
export const plansFor = (request) =>
  request.experiments.map((experiment) =>
    makePlan({
      experiment,
      suite: request.name,
      factor: request.factor,
      overrides: request.overrides[experiment],
      segments: request.segments || 1,
      untold: request.untold?.[experiment],
    }),
  );

/**
 * A run's lock, folders and state file: the lock first (a run refused while another is live
 * makes nothing), then what dead runs left is reaped, then results/<run-id>/ (kept, and
 * results/latest points at it) and .lab/tmp/<run-id>/. close() removes the scratch folder and
 * the state file and releases the lock; every caller calls it in a `finally` (the suite's
 * SIGINT/SIGTERM handler lets the run get there too).
 */
export async function openRun(root, name, { kind, say, latest = true }) {
  const stateDir = join(root, '.lab', 'state');
  const id = `${stamp()}-${name}`;
  const lock = takeRunLock(root, { id, kind });
  try {
    await reapStale(stateDir, { log: say });
    const dir = join(root, 'results', id);
    const tmp = join(root, '.lab', 'tmp', id);
    mkdirSync(join(root, 'results'), { recursive: true });
    try {
      mkdirSync(dir); // not recursive: a folder already there is another run's, never shared
    } catch (e) {
      throw e.code === 'EEXIST'
        ? new Error(`results/${id} exists already: one process opened two runs in the same millisecond`)
        : e;
    }
    mkdirSync(tmp, { recursive: true });
    const state = new StateFile(stateDir, id, { kind, tmp });
    if (latest) {
      rmSync(join(root, 'results', 'latest'), { force: true });
      symlinkSync(id, join(root, 'results', 'latest'));
    }
    return {
      id,
      dir,
      tmp,
      state,
      close() {
        rmSync(tmp, { recursive: true, force: true });
        state.remove();
        lock.release();
      },
    };
  } catch (e) {
    lock.release();
    throw e;
  }
}
