/*
 * The generated tables of this stack's README (`just docs`): per comparison with the references,
 * what the recorded runs measured (docs/runs/), the spread the experiment states, and the
 * threshold it gives; per suite, which rows are judged or shown.
 */
import { experiments } from '../../thresholds/plan.js';
import { comparisonBounds } from '../../thresholds/kinds/capacity.js';
import { judgedRowsTable } from '../results/judged-rows.mjs';
import { recordedRuns, recordedLine, recordedBenches, table } from '../lib.mjs';
import { perCpuSummary, spread } from '../bench/per-cpu.mjs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

// The judged figures compared with the references, as the measured spread names them.
const MEASURES = [
  [
    /^closed efficiency vs (\w+)$/,
    'closedEfficiency',
    (ref) => `CPU per request at 2500 connections (wrk): ${ref}'s / its own`,
  ],
  [/^efficiency vs (\w+)$/, 'efficiency', (ref) => `CPU per request at 2000 r/s: ${ref}'s / its own`],
  [/^throughput vs (\w+)$/, 'throughput', (ref) => `r/s at 2500 connections (wrk): its / ${ref}'s`],
  [/^overhead ms vs (direct)$/, 'overheadMs', () => 'relayed p50 over direct at 500 r/s in all, ms'],
];

/** The recorded breakpoint runs of json-filter: per measure, server and reference, every value measured. */
export function recordedSpread(root = ROOT) {
  const runs = recordedRuns(
    root,
    (i) => i.suite === 'breakpoint' && i.experiments.includes('json-filter') && !i.perturbed,
  );
  const values = {};
  for (const r of runs) {
    for (const o of r.outcomes.filter((x) => x.case.startsWith('json-filter/'))) {
      const server = o.case.slice('json-filter/'.length).replace(/-(base|cost|closed|ramp)$/, '');
      for (const f of o.figures || []) {
        for (const [re, key] of MEASURES) {
          const m = re.exec(f.measure);
          if (m && typeof f.measured === 'number')
            (((values[key] ||= {})[server] ||= {})[m[1]] ||= []).push(f.measured);
        }
      }
    }
  }
  return { runs, values };
}

function jsonFilterBounds() {
  const exp = experiments['json-filter'];
  const spread = exp.measuredSpread;
  const { floors, ceilings, throughputFloors, closedFloors } = comparisonBounds(spread, exp.perturbMs, exp.slowdowns);
  const { runs, values } = recordedSpread();
  const range = (xs, d) => (xs?.length ? `${Math.min(...xs).toFixed(d)}..${Math.max(...xs).toFixed(d)}` : '-');
  const floorsOf = { efficiency: floors, throughput: throughputFloors, closedEfficiency: closedFloors };
  const rows = [];
  for (const [, key, label] of MEASURES) {
    for (const [server, refs] of Object.entries(spread[key] || {})) {
      // overheadMs is [min, max] per server, against the direct backend.
      const byRef = Array.isArray(refs) ? { direct: refs } : refs;
      for (const [ref, spreadOf] of Object.entries(byRef)) {
        // null: measured beside the case and shown in its table, not judged (the experiment says why).
        if (spreadOf === null) {
          rows.push([server, label(ref), 'shown in each run', '-', 'shown']);
          continue;
        }
        const [min, max] = spreadOf;
        const bound = key === 'overheadMs' ? `<= ${ceilings[server]}` : `>= ${floorsOf[key][server][ref].toFixed(3)}`;
        const d = key === 'overheadMs' ? 2 : 3;
        rows.push([server, label(ref), range(values[key]?.[server]?.[ref], d), `${min}..${max}`, bound]);
      }
    }
  }
  return (
    `${recordedLine(runs, 'just test breakpoint --quick')}:\n\n${table(['server', 'measure', 'recorded runs: min..max', 'measuredSpread', 'threshold'], rows)}\n\n` +
    `Recorded runs (testids): ${runs.map((r) => r.testid).join(', ')}. measuredSpread is their least and most (thresholds/experiments/json-filter-spread.js, generated from them).`
  );
}

/**
 * The recorded per-CPU benches (`./labw bench json-filter`, docs/runs/<testid>/bench.json): per
 * load and server, relayed requests per CPU-second over nginx's in the same repetition, median
 * (min-max) over the repetitions, one column per recorded bench; nginx's own figure below.
 */
export function perCpuRecorded(root = ROOT) {
  const benches = recordedBenches(root, (b) => Array.isArray(b.perCpu));
  if (benches.length === 0) return 'No recorded bench in docs/runs/.';
  const sums = benches.map((r) => perCpuSummary(r.bench.perCpu, 'nginx'));
  const rows = sums[0].map(({ connections, name }) => [
    `${name}, c${connections}`,
    ...sums.map((s) => {
      const r = s.find((x) => x.connections === connections && x.name === name);
      if (!r) return '-';
      return r.ratios ? spread(r.ratios) : `${spread(r.perCpuS.map((x) => x / 1000))} k/CPU-s`;
    }),
  ]);
  const head = [
    'server, wrk -t1 connections',
    ...benches.map(
      (r) => `${r.testid}${r.bench.source ? ` (${r.bench.source.commit}${r.bench.source.dirty ? '+' : ''})` : ''}`,
    ),
  ];
  return `${benches.length} recorded runs of \`./labw bench json-filter\` (docs/runs/ keeps their bench.json); per server and load, relayed requests per CPU-second over nginx's in the same repetition, median (min-max) of the repetitions; nginx's own in thousands per CPU-second. Shown: the bench judges nothing.\n\n${table(head, rows)}`;
}

export default { 'json-filter-bounds': jsonFilterBounds, 'json-filter-judged': () => judgedRowsTable('json-filter') };

// Blocks this experiment generates in other files.
export const files = { 'servers/README.md': { 'json-filter-per-cpu': perCpuRecorded } };

/**
 * The spread the comparisons' bounds come from, as data: per measure, server and reference, the
 * least (rounded down) and the most (rounded up, both to 0.01) the recorded breakpoint runs
 * measured, and those runs' testids. The experiment imports it (k6-safe), and a new recorded
 * run changes it through `./labw docs` alone.
 */
function recordedSpreadModule(root) {
  const { runs, values } = recordedSpread(root);
  const down = (x) => Math.floor(x * 100 + 1e-9) / 100;
  const up = (x) => Math.ceil(x * 100 - 1e-9) / 100;
  const bounds = (xs) => [down(Math.min(...xs)), up(Math.max(...xs))];
  const spread = { runs: runs.map((r) => r.testid) };
  for (const key of ['closedEfficiency', 'throughput'])
    spread[key] = Object.fromEntries(
      Object.entries(values[key] || {}).map(([server, refs]) => [
        server,
        Object.fromEntries(Object.entries(refs).map(([ref, xs]) => [ref, bounds(xs)])),
      ]),
    );
  spread.overheadMs = Object.fromEntries(
    Object.entries(values.overheadMs || {}).map(([server, refs]) => [server, bounds(refs.direct)]),
  );
  return `/*
 * Generated by \`./labw docs\` (lab/docs/json-filter.mjs) from the recorded breakpoint runs of
 * json-filter in docs/runs/: per measure, server and reference, the least and the most measured.
 * Do not edit: record a run (docs/runs/) and run \`./labw docs\`.
 */
export default ${JSON.stringify(spread, null, 1).replace(/\n\s*(-?[0-9.]+),\n\s*(-?[0-9.]+)\n\s*\]/g, ' $1, $2 ]')};
`;
}

export const data = { 'thresholds/experiments/json-filter-spread.js': recordedSpreadModule };
