/*
 * `lint [--fix]`: ESLint (eslint.config.js) and Prettier's check (.prettierrc.json) over every
 * module of the repository, and the Erlang sources compiled with every warning an error (into a
 * scratch folder); with --fix, ESLint and Prettier rewrite what they can. The exit code says
 * whether all three are clean.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const GLOB = '**/*.{js,mjs}';

// The Erlang modules of the repository: the filter and the profiling floor.
const ERLANG = ['servers/erlang/src', 'servers/profiles/floor'];

/** erlc +warnings_as_errors over every .erl file: its exit status (erlc's messages go to the terminal). */
function erlangStatus(root, run) {
  const files = ERLANG.flatMap((dir) =>
    readdirSync(join(root, dir))
      .filter((f) => f.endsWith('.erl'))
      .map((f) => join(dir, f)),
  );
  const out = mkdtempSync(join(tmpdir(), 'lab-erlc-'));
  try {
    return run('erlc', ['+warnings_as_errors', '-o', out, ...files]);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

export default async function lint(words, { root, say }) {
  const bad = words.filter((w) => w !== '--fix');
  if (bad.length) throw new Error(`usage: ./labw lint [--fix]; cannot read '${bad.join(' ')}'`);
  const fix = words.includes('--fix');
  const bin = (name) => join(root, 'node_modules', '.bin', name);
  const run = (cmd, args) => spawnSync(cmd, args, { cwd: root, stdio: 'inherit' }).status;
  const eslint = run(bin('eslint'), [...(fix ? ['--fix'] : []), '.']);
  const prettier = run(bin('prettier'), [fix ? '--write' : '--check', '--log-level', 'warn', GLOB]);
  const erlc = erlangStatus(root, run);
  if (erlc === null) say('lint: erlc could not run: ./labw setup installs Erlang');
  say(
    `lint: eslint ${eslint === 0 ? 'clean' : 'FAILED'}, prettier ${prettier === 0 ? 'clean' : fix ? 'FAILED' : 'FAILED (./labw lint --fix rewrites the files)'}, erlc +warnings_as_errors ${erlc === 0 ? 'clean' : 'FAILED'}`,
  );
  return eslint === 0 && prettier === 0 && erlc === 0 ? 0 : 1;
}
