/*
 * Recorded runs: the measured figures a README prints come from runs kept in docs/runs/<testid>/
 * (their run.json and outcomes.json, as the runner wrote them), never typed by hand. A generated
 * block names the runs it read, their testids and the date, with its table.
 */
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { TESTID } from '../run/open.mjs';

/** The recorded runs that hold `file`, oldest first, each as its testid and a reader of its files. */
const recorded = (root, file) => {
  const dir = join(root, 'docs', 'runs');
  return readdirSync(dir).filter((id) => TESTID.test(id) && existsSync(join(dir, id, file))).sort()
    .map((testid) => ({ testid, read: (name) => JSON.parse(readFileSync(join(dir, testid, name), 'utf8')) }));
};

/** The recorded runs whose run.json `pick` accepts, oldest first: [{testid, info, outcomes}]. */
export function recordedRuns(root, pick = () => true) {
  return recorded(root, 'run.json').map(({ testid, read }) => ({ testid, info: read('run.json'), outcomes: read('outcomes.json') }))
    .filter((r) => pick(r.info));
}

/** The line a generated table of recorded runs starts with: what ran, when, which testids. */
export const recordedLine = (runs, command) => `${runs.length} runs of \`${command}\`, ${[...new Set(runs.map((r) => `${r.testid.slice(0, 4)}-${r.testid.slice(4, 6)}-${r.testid.slice(6, 8)}`))].join(', ')} (testids in the table; docs/runs/ keeps them)`;

/** The recorded bench runs (docs/runs/<testid>/bench.json, as `bench` wrote it) whose bench.json `pick` accepts, oldest first: [{testid, bench}]. */
export function recordedBenches(root, pick = () => true) {
  return recorded(root, 'bench.json').map(({ testid, read }) => ({ testid, bench: read('bench.json') })).filter((r) => pick(r.bench));
}
