/*
 * The lab's shared helpers, one module for the commands, the benches and the docs: markdown
 * tables and a model's ranges, the recorded runs a README's figures come from (docs/runs/), a
 * folder's size, and (k6-safe, shared with the k6 scripts) durations and HTML escaping.
 */
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { TESTID } from './lib/run-names.mjs';

export { durationMs } from '../thresholds/k6-duration.js';
export { escapeHtml } from '../k6/lib/escape.js';

// Markdown for the generated tables of the docs and the stacks' READMEs (`just docs`): a table,
// a model's range, a duration, and what a limiter case must give.
/**
 * The words of a ./labw command line for one experiment's test: where (`target`: its words, an
 * experiment or a policy file), --quick=N when it ran faster, then its knobs as knob=value.
 */
export const labWords = ({ target, factor, knobs = [] }) => [
  ...target,
  ...(factor > 1 ? [`--quick=${factor}`] : []),
  ...knobs,
];

export const span = (r) => (r.min === r.max ? `${r.min}` : `${r.min}..${r.max}`);
export const secs = (ms) => `${(ms / 1000).toFixed(ms >= 10_000 ? 1 : 2)} s`;
export const table = (head, rows) =>
  [head, head.map(() => '---'), ...rows].map((r) => `| ${r.join(' | ')} |`).join('\n');
export const byId = (p) => Object.fromEntries(p.cases.map((c) => [c.id, c]));

/** What a limiter case must give: 200s / limited, and the longest wait where it queues. */
export function outcome(c) {
  const wait = c.expected.maxMs ? `, wait ${secs(c.model.maxDelayMs.max)}` : '';
  return `${span(c.expected.ok)} / ${span(c.expected.limited)}${wait}${c.expected.timingSensitive ? ' (ms clock)' : ''}`;
}

// Recorded runs: the measured figures a README prints come from runs kept in
// docs/runs/<testid>/ (their run.json and outcomes.json, as the runner wrote them), never typed
// by hand. A generated block names the runs it read, their testids and the date, with its table.
/** The recorded runs that hold `file`, oldest first, each as its testid and a reader of its files. */
const recorded = (root, file) => {
  const dir = join(root, 'docs', 'runs');
  return readdirSync(dir)
    .filter((id) => TESTID.test(id) && existsSync(join(dir, id, file)))
    .sort()
    .map((testid) => ({ testid, read: (name) => JSON.parse(readFileSync(join(dir, testid, name), 'utf8')) }));
};

/** The recorded runs whose run.json `pick` accepts, oldest first: [{testid, info, outcomes}]. */
export function recordedRuns(root, pick = () => true) {
  return recorded(root, 'run.json')
    .map(({ testid, read }) => ({ testid, info: read('run.json'), outcomes: read('outcomes.json') }))
    .filter((r) => pick(r.info));
}

/** The line a generated table of recorded runs starts with: what ran, when, which testids. */
export const recordedLine = (runs, command) =>
  `${runs.length} run${runs.length === 1 ? '' : 's'} of \`${command}\`, ${[...new Set(runs.map((r) => `${r.testid.slice(0, 4)}-${r.testid.slice(4, 6)}-${r.testid.slice(6, 8)}`))].join(', ')} (testids in the table; docs/runs/ keeps them)`;

/**
 * The recorded bench runs (docs/runs/<testid>/bench.json, as `bench` wrote it) whose bench.json `pick`
 * accepts, oldest first: [{testid, bench}].
 */
export function recordedBenches(root, pick = () => true) {
  return recorded(root, 'bench.json')
    .map(({ testid, read }) => ({ testid, bench: read('bench.json') }))
    .filter((r) => pick(r.bench));
}

/** A file's or folder's size as `du -sh` says it ('0' when it is not there). */
export const duSize = (path) =>
  existsSync(path) ? spawnSync('du', ['-sh', path], { encoding: 'utf8' }).stdout.split('\t')[0] : '0';
