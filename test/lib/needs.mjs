/*
 * A test that needs a tool (a program such as nginx or erl, or what the machine allows, such as
 * making cgroups) which is absent. Locally it skips, saying which tool and how to get it. Under
 * CI (CI=true, which GitHub Actions sets) it fails, saying the same: CI is where every test must
 * run, and a skip there is a green that checked nothing. Every such test goes through `needs`.
 */
import { spawnSync } from 'node:child_process';

/** Are we under CI: CI=true (or 1, yes), as GitHub Actions and most CI services set it. */
export const underCI = (env = process.env) => /^(true|1|yes)$/i.test(env.CI ?? '');

/** Why `command` cannot run, from the result of spawning it (spawnSync), or null when it ran. */
export const notRun = (command, result) =>
  result.error ? `${command} is not installed (${result.error.code} on spawn)` : null;

/** Why `command` is missing here: it cannot be spawned, or its probe (`args`) fails; null when it is there. */
export function absent(command, args = ['--version'], options = {}) {
  const r = spawnSync(command, args, { stdio: 'ignore', ...options });
  return notRun(command, r) ?? (r.status === 0 ? null : `${command} ${args.join(' ')} exits ${r.status}`);
}

/**
 * First thing in a test, or right before the assertions that need the tool: `missing` says why
 * the tool is not there (null when it is). Locally the test is marked skipped with that reason
 * and this returns true (return from the test then); under CI it throws, naming the tool.
 */
export function needs(t, missing, hint = 'run ./labw setup') {
  if (!missing) return false;
  const why = `${missing}: ${hint}`;
  if (underCI()) throw new Error(`a tool this test needs is missing, and CI=true fails it: ${why}`);
  t.skip(why);
  return true;
}
