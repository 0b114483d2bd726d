/*
 * Where a run lives, before anything starts: its id, its results folder (kept; results/latest
 * points at it), its scratch folder in .lab/tmp (removed by close()), its state file (so that a
 * later command reaps what a killed run left), the tools' environment and the plans it runs.
 */
import { mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { plan as makePlan } from '../../thresholds/plan.js';
import { StateFile, reapStale } from '../stack/procs.mjs';

export function labEnv(root) {
  const env = { ...process.env, K6_NO_USAGE_REPORT: 'true' };
  env.PATH = [join(root, '.lab', 'bin'), '/usr/sbin', '/sbin', env.PATH].join(':');
  return env;
}

export const stamp = () => new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);

/** The plans of a request (a suite, or one experiment of it), as `expect` prints and `test` runs. */
export const plansFor = (request) =>
  request.experiments.map((experiment) => makePlan({ experiment, suite: request.name, factor: request.factor, overrides: request.overrides[experiment], segments: request.segments || 1 }));

/**
 * A run's folders and state file, after reaping what dead runs left: results/<run-id>/ (kept,
 * and results/latest points at it) and .lab/tmp/<run-id>/ (removed by close(), with the state).
 */
export async function openRun(root, name, { kind, say, latest = true }) {
  const stateDir = join(root, '.lab', 'state');
  await reapStale(stateDir, { log: say });
  const id = `${stamp()}-${name}`;
  const dir = join(root, 'results', id);
  const tmp = join(root, '.lab', 'tmp', id);
  mkdirSync(dir, { recursive: true });
  mkdirSync(tmp, { recursive: true });
  const state = new StateFile(stateDir, id, { kind, tmp });
  if (latest) {
    rmSync(join(root, 'results', 'latest'), { force: true });
    symlinkSync(id, join(root, 'results', 'latest'));
  }
  return {
    id, dir, tmp, state,
    close() {
      rmSync(tmp, { recursive: true, force: true });
      state.remove();
    },
  };
}
