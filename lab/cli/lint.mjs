/*
 * `lint [--fix]`: ESLint (eslint.config.js) and Prettier's check (.prettierrc.json) over every
 * module of the repository; with --fix, each rewrites what it can. The exit code says whether
 * both are clean.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const GLOB = '**/*.{js,mjs}';

export default async function lint(words, { root, say }) {
  const bad = words.filter((w) => w !== '--fix');
  if (bad.length) throw new Error(`usage: ./labw lint [--fix]; cannot read '${bad.join(' ')}'`);
  const fix = words.includes('--fix');
  const bin = (name) => join(root, 'node_modules', '.bin', name);
  const run = (cmd, args) => spawnSync(cmd, args, { cwd: root, stdio: 'inherit' }).status;
  const eslint = run(bin('eslint'), [...(fix ? ['--fix'] : []), '.']);
  const prettier = run(bin('prettier'), [fix ? '--write' : '--check', '--log-level', 'warn', GLOB]);
  say(
    `lint: eslint ${eslint === 0 ? 'clean' : 'FAILED'}, prettier ${prettier === 0 ? 'clean' : fix ? 'FAILED' : 'FAILED (./labw lint --fix rewrites the files)'}`,
  );
  return eslint === 0 && prettier === 0 ? 0 : 1;
}
