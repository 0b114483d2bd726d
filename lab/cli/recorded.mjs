/*
 * Recorded runs: the measured figures a README prints come from runs kept in docs/runs/<testid>/
 * (their run.json and outcomes.json, as the runner wrote them), never typed by hand. A generated
 * block names the runs it read, their testids and the date, with its table.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TESTID } from '../run/open.mjs';

/** The recorded runs whose run.json `pick` accepts, oldest first: [{testid, info, outcomes}]. */
export function recordedRuns(root, pick = () => true) {
  const dir = join(root, 'docs', 'runs');
  return readdirSync(dir).filter((id) => TESTID.test(id)).sort().map((testid) => ({
    testid,
    info: JSON.parse(readFileSync(join(dir, testid, 'run.json'), 'utf8')),
    outcomes: JSON.parse(readFileSync(join(dir, testid, 'outcomes.json'), 'utf8')),
  })).filter((r) => pick(r.info));
}

/** The line a generated table of recorded runs starts with: what ran, when, which testids. */
export const recordedLine = (runs, command) => `${runs.length} runs of \`${command}\`, ${[...new Set(runs.map((r) => `${r.testid.slice(0, 4)}-${r.testid.slice(4, 6)}-${r.testid.slice(6, 8)}`))].join(', ')} (testids in the table; docs/runs/ keeps them)`;
