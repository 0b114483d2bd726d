/*
 * The figures in the READMEs come from the model, never by hand: each table sits between
 *   <!-- lab:generated NAME -->  and  <!-- lab:end -->
 * and `just docs` rewrites it from the plans and the sensitivity search; a unit test fails when
 * a committed table differs from what the model gives now.
 */
import { machineRateModule, machineRateTable, tlsTable } from '../docs/machine-rate.mjs';
import { recoverTable, replayDifferenceTable, sessionsTable } from '../docs/recover.mjs';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { plan, experiments, suites, SUITES, QUICK_FACTOR } from '../../thresholds/plan.js';
import { kindOf } from '../../thresholds/kinds/index.js';
import { sensitivity } from '../../thresholds/sensitivity.js';
import { loadTopology } from '../stack/topology.mjs';
import { table, byId, span } from '../lib.mjs';
import { latenessTable } from './k6-lateness.mjs';
import { seenLagTable } from './seen-lag.mjs';
import { runSample } from './run-sample.mjs';
import { proxiesDoc } from './proxies-doc.mjs';
import { scriptBlock } from '../export/readme-block.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
// Smoke proves every stack answers; its few requests catch no policy change, and --quick
// leaves them alone.
const JUDGED_SUITES = SUITES.filter((s) => s !== 'smoke');

const change = (d) => (d ? `${d.delta} (${d.by})` : 'not seen');
const knobRow = (k, v) => {
  if (v.any !== undefined) return [k, v.any ? `any (unexpected status, ${v.cases} cases)` : 'not seen', ''];
  // A switch: each other way, caught or not.
  if (v.switch)
    return [
      k,
      v.switch.map((x) => `${x.value}: ${x.cases ? `caught (${x.by}, ${x.cases} cases)` : 'not seen'}`).join('; '),
      '',
    ];
  return [k, v.atMin ? '- (at its minimum)' : change(v.down), change(v.up)];
};

/** One experiment's sensitivity as markdown: per knob, or per case and knob with `perCase`. */
export function formatSensitivity(s, { perCase = false } = {}) {
  const out = [
    `**${s.suite} / ${s.experiment}**${s.factor > 1 ? ` (--quick x${s.factor})` : ''}${s.unseen.length ? `: no case sees ${s.unseen.join(', ')}` : ''}\n`,
  ];
  out.push(
    table(
      ['knob', 'smallest change caught, down', 'up'],
      Object.entries(s.knobs).map(([k, v]) => knobRow(k, v)),
    ),
  );
  const why = Object.entries(s.knobs)
    .filter(([, v]) => v.why)
    .map(([k, v]) => `- ${k}: ${v.why}`);
  if (why.length) out.push(`\n${why.join('\n')}`);
  if (perCase && s.cases.length) {
    out.push(
      `\n${table(
        ['case', 'knob', 'down', 'up'],
        s.cases.flatMap((c) => Object.entries(c.knobs).map(([k, v]) => [c.id, k, change(v.down), change(v.up)])),
      )}`,
    );
  }
  return out.join('\n');
}

/** Per suite: what each knob's smallest caught change is, and what no case sees. */
function sensitivityTable() {
  return JUDGED_SUITES.flatMap((suite) =>
    Object.values(experiments)
      .filter((e) => e.suites[suite] && kindOf(e).sensitivity)
      .map((e) => formatSensitivity(sensitivity({ experiment: e.name, suite }))),
  ).join('\n\n');
}

/** Which expected counts --quick changes, and to what. */
function quickChanges() {
  const rows = [];
  // Experiments that --quick compresses, whose cases expect counts of 200s and limited answers.
  const pairs = Object.values(experiments)
    .filter((e) => (e.maxQuick ?? Infinity) > 1)
    .flatMap((e) => JUDGED_SUITES.filter((suite) => e.suites[suite]).map((suite) => [e.name, suite]));
  for (const [experiment, suite] of pairs) {
    const quick = plan({ experiment, suite, factor: QUICK_FACTOR });
    if (!quick.cases.every((c) => c.expected.ok && c.expected.limited)) continue;
    const slow = byId(plan({ experiment, suite }));
    for (const q of quick.cases) {
      const s = slow[q.id];
      if (span(s.expected.ok) !== span(q.expected.ok) || span(s.expected.limited) !== span(q.expected.limited)) {
        rows.push([
          `${experiment}/${q.id}`,
          `x${quick.factor}`,
          `${span(s.expected.ok)} / ${span(s.expected.limited)}`,
          `${span(q.expected.ok)} / ${span(q.expected.limited)}`,
        ]);
      }
    }
  }
  return table(['case', '--quick', 'seed timing 200 / limited', 'quick 200 / limited'], rows);
}

/**
 * The generated blocks per file: a stack's README gets the blocks its lab/docs/<experiment>.mjs
 * makes (default export {block name: () => markdown}), for every experiment that has one; other
 * files get the blocks its `files` export names ({file: {block name: () => markdown}}).
 */
/**
 * Each experiment's docs module (lab/docs/<experiment>.mjs), for those that have one: loaded when
 * the docs are made, not when this module is.
 */
async function experimentDocs() {
  const loaded = [];
  for (const name of Object.keys(experiments)) {
    const file = join(root, 'lab', 'docs', `${name}.mjs`);
    if (existsSync(file)) loaded.push({ name, mod: await import(pathToFileURL(file).href) });
  }
  return loaded;
}

/**
 * The generated blocks per file: a stack's README gets the blocks its lab/docs/<experiment>.mjs
 * makes (default export {block name: () => markdown}), for every experiment that has one; other
 * files get the blocks its `files` export names ({file: {block name: () => markdown}}).
 */
const stackBlocks = (loaded) =>
  loaded.flatMap(({ name, mod }) => [
    // Every stack README also shows, per suite, one case as k6 code (lab/export/readme-block.mjs).
    [`stacks/${name}/README.md`, { ...mod.default, 'k6-script': () => scriptBlock(name) }],
    ...Object.entries(mod.files || {}),
  ]);

const blocks = (loaded) => ({
  ...Object.fromEntries(stackBlocks(loaded)),
  'docs/model.md': {
    sensitivity: sensitivityTable,
    'k6-lateness': () => latenessTable(root),
    'seen-lag': () => seenLagTable(root),
  },
  'docs/knobs.md': { quick: quickChanges },
  'docs/policies.md': {
    'machine-rate': () => machineRateTable(root),
    'tls-cost': () => tlsTable(root),
    'haproxy-recover': () => recoverTable(root),
    'haproxy-sessions': () => sessionsTable(root),
    'replay-difference': () => replayDifferenceTable(root),
  },
  'README.md': { 'run-sample': () => runSample(root) },
  'docs/compare-proxies.md': { 'compare-proxies': () => proxiesDoc(root) },
});

const BLOCK = /(<!-- lab:generated ([\w-]+) -->\n)[\s\S]*?(<!-- lab:end -->)/g;

/** The file's text with every generated block rewritten; throws on a block nobody makes. */
export function regenerate(text, makers, file) {
  const seen = new Set();
  const out = text.replace(BLOCK, (_, open, name, close) => {
    if (!makers[name]) throw new Error(`${file}: no generator for block '${name}'`);
    seen.add(name);
    return `${open}${makers[name]()}\n${close}`;
  });
  const missing = Object.keys(makers).filter((n) => !seen.has(n));
  if (missing.length)
    throw new Error(
      `${file}: block(s) ${missing.join(', ')} missing; add <!-- lab:generated NAME --> ... <!-- lab:end -->`,
    );
  return out;
}

/**
 * Whole files made from the topology: the k6 scripts' default addresses (k6 cannot read YAML,
 * and a script must run with k6 alone against `just up <experiment>`).
 */
// Whole files an experiment's docs module makes from recorded runs (its `data` export: {path: (root) => text}).
const files = (loaded) => ({
  ...Object.fromEntries(loaded.flatMap(({ mod }) => Object.entries(mod.data || {}))),
  'thresholds/machine-rate.js': machineRateModule,
  'k6/lib/services.json': (root) => {
    const t = loadTopology(join(root, 'docker-compose.yml'));
    const ports = Object.fromEntries(
      Object.values(t.services)
        .filter((s) => s.ports.http)
        .map((s) => [s.name, s.ports.http]),
    );
    return `${JSON.stringify({ generatedFrom: 'docker-compose.yml by `just docs`', httpPorts: ports }, null, 1)}\n`;
  },
});

/**
 * Single generated lines, where a file's syntax leaves no room for a block (a Justfile's doc
 * comment must sit right above its recipe): per file and name, the pattern that finds the part
 * to generate, and what it must say.
 */
export const LINES = {
  Justfile: {
    suites: [
      /^# Run a suite \([^)\n]*\)/m,
      () =>
        `# Run a suite (${Object.keys(suites)
          .filter((s) => suites[s].length)
          .join(', ')})`,
    ],
  },
};

/** The file's text with every generated line rewritten; throws on a line that is not there. */
export function regenerateLines(text, lines, file) {
  let out = text;
  for (const [name, [pattern, make]] of Object.entries(lines)) {
    if (!pattern.test(out)) throw new Error(`${file}: generated line '${name}' missing (${pattern})`);
    out = out.replace(pattern, () => make());
  }
  return out;
}

/** `just docs`: rewrite the blocks, lines and files; with check, only report which files differ. */
export async function docs(root, { check = false } = {}) {
  const loaded = await experimentDocs();
  // Per file, its text now (null: not there yet) to the text it should have.
  const rewrites = [
    ...Object.entries(files(loaded)).map(([file, make]) => [file, () => make(root)]),
    ...Object.entries(blocks(loaded)).map(([file, makers]) => [file, (text) => regenerate(text, makers, file)]),
    ...Object.entries(LINES).map(([file, lines]) => [file, (text) => regenerateLines(text, lines, file)]),
  ];
  const stale = [];
  for (const [file, rewrite] of rewrites) {
    const path = join(root, file);
    let before = null;
    try {
      before = readFileSync(path, 'utf8');
    } catch {
      /* not there yet */
    }
    const after = rewrite(before);
    if (after === before) continue;
    stale.push(file);
    if (!check) writeFileSync(path, after);
  }
  return stale;
}
