/*
 * `policies [smoke|spike|perturbed ...] [--quick[=N]] [FILE ...]`: every policy of
 * test/policies/tests.json (or those named) through the
 * lab: `test smoke --policy=FILE` and `test spike --policy=FILE` must pass, and `test spike`
 * with one number changed in the stack's copy (--stack-policy) must fail on the cases the entry
 * names. One row per entry and run; the exit code says whether every row came out as it must.
 */
import { readFileSync, writeFileSync, mkdirSync, rmSync, appendFileSync, realpathSync, cpSync } from 'node:fs';
import { basename, dirname, isAbsolute, join } from 'node:path';
import test from './test.mjs';
import { formatTable } from '../judge/table.mjs';

const RUNS = ['smoke', 'spike', 'perturbed'];

/**
 * The stack's copy of an entry's file with its one change, made in `perturb.in` (a file the
 * policy names beside it, or in a folder beside it that it names, as Traefik's file provider
 * names a folder: that folder is copied whole, in its place beside the copy) or the file itself;
 * refused when `from` is not in it once.
 */
export function perturbedCopy(root, entry, dir) {
  const { in: within, from, to } = entry.perturb;
  if (within && (isAbsolute(within) || within.split('/').includes('..')))
    throw new Error(`test/policies/tests.json: ${entry.file}: perturb.in '${within}' is not a path beside the policy`);
  const changed = within ? join(dirname(entry.file), within) : entry.file;
  const text = readFileSync(join(root, changed), 'utf8');
  if (text.split(from).length !== 2)
    throw new Error(`test/policies/tests.json: '${from}' is not in ${changed} exactly once`);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, basename(entry.file));
  if (within) {
    writeFileSync(file, readFileSync(join(root, entry.file)));
    // The first folder of its path, where it has one.
    const [folder, ...below] = within.split('/');
    if (below.length) cpSync(join(root, dirname(entry.file), folder), join(dir, folder), { recursive: true });
  }
  writeFileSync(within ? join(dir, within) : file, text.replace(from, to));
  return file;
}

/** The cases the latest run failed, from its outcomes.json. */
const failedCases = (root) =>
  JSON.parse(readFileSync(join(realpathSync(join(root, 'results', 'latest')), 'outcomes.json'), 'utf8'))
    .filter((o) => !o.pass)
    .map((o) => o.case.split('/').pop());

export default async function policies(words, { root, say }) {
  // --quick[=N] goes to every spike run (a smoke run takes none).
  const quick = words.filter((w) => /^--quick(=\d+)?$/.test(w));
  const files = words.filter((w) => !quick.includes(w) && !RUNS.includes(w));
  const runs = words.filter((w) => RUNS.includes(w));
  const which = runs.length ? runs : RUNS;
  const all = JSON.parse(readFileSync(join(root, 'test', 'policies', 'tests.json'), 'utf8'));
  const unknown = files.filter((f) => !all.some((e) => e.file === f));
  if (unknown.length)
    throw new Error(
      `policies: '${unknown.join(' ')}': name runs among ${RUNS.join(', ')}, --quick[=N], or files of test/policies/tests.json`,
    );
  const entries = files.length ? all.filter((e) => files.includes(e.file)) : all;
  const scratch = join(root, '.lab', 'tmp', `policies-${process.pid}`);
  const log = join(root, '.lab', 'logs', `policies-${process.pid}.log`);
  mkdirSync(join(root, '.lab', 'logs'), { recursive: true });
  const quiet = (line) => appendFileSync(log, `${line}\n`);
  const rows = [];
  try {
    for (const entry of entries) {
      for (const run of which) {
        const flags =
          run === 'perturbed'
            ? [
                'spike',
                ...quick,
                `--policy=${entry.file}`,
                `--stack-policy=${perturbedCopy(root, entry, join(scratch, String(rows.length)))}`,
              ]
            : [run, ...(run === 'spike' ? quick : []), `--policy=${entry.file}`];
        say(`policies: ${entry.file} ${run}`);
        const code = await test(flags, { root, say: quiet });
        const failed = failedCases(root);
        const ok = run === 'perturbed' ? code === 1 && entry.catches.every((c) => failed.includes(c)) : code === 0;
        rows.push([
          entry.file,
          run,
          run === 'perturbed' ? `${entry.perturb.from} -> ${entry.perturb.to}` : '',
          failed.join(' ') || '-',
          run === 'perturbed' ? entry.catches.join(' ') : '-',
          ok ? 'ok' : 'FAIL',
        ]);
      }
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  say(formatTable(rows, ['policy', 'run', 'changed in the stack', 'cases failed', 'must fail', 'as it must']));
  say(`each run's tables: ${log}`);
  return rows.every((r) => r.at(-1) === 'ok') ? 0 : 1;
}
