/*
 * The figures in the READMEs come from the model, never by hand: each table sits between
 *   <!-- lab:generated NAME -->  and  <!-- lab:end -->
 * and `just docs` rewrites it from the plans and the sensitivity search; a unit test fails when
 * a committed table differs from what the model gives now.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { plan, experiments, suites, QUICK_FACTOR } from '../../thresholds/plan.js';
import { sensitivity } from '../../thresholds/sensitivity.js';
import { comparisonBounds } from '../../thresholds/kinds/capacity.js';
import { loadTopology } from '../stack/topology.mjs';

const span = (r) => (r.min === r.max ? `${r.min}` : `${r.min}..${r.max}`);
const secs = (ms) => `${(ms / 1000).toFixed(ms >= 10_000 ? 1 : 2)} s`;
const table = (head, rows) => [head, head.map(() => '---'), ...rows].map((r) => `| ${r.join(' | ')} |`).join('\n');
const byId = (p) => Object.fromEntries(p.cases.map((c) => [c.id, c]));

/** What a case must give: 200s / limited, and the longest wait where it queues. */
function outcome(c) {
  const wait = c.expected.maxMs ? `, wait ${secs(c.model.maxDelayMs.max)}` : '';
  return `${span(c.expected.ok)} / ${span(c.expected.limited)}${wait}${c.expected.timingSensitive ? ' (ms clock)' : ''}`;
}

function burstExpected() {
  const spike = plan({ experiment: 'burst', suite: 'spike' });
  const soak = plan({ experiment: 'burst', suite: 'soak' });
  const bursts = spike.knobs.bursts;
  const steps = [...new Set(spike.cases.map((c) => c.step))];
  const c = byId(spike);
  const rows = steps.map((s) => {
    const first = spike.cases.find((x) => x.step === s);
    return [`${first.rate} r/s, ${first.durationMs / 1000} s`, ...bursts.map((b) => (c[`b${b}-${s}`] ? outcome(c[`b${b}-${s}`]) : ''))];
  });
  for (const x of soak.cases) rows.push([`${x.rate} r/s, ${x.durationMs / 1000} s (soak)`, ...bursts.map((b) => (x.target === `b${b}` ? outcome(x) : ''))]);
  return table(['load', ...bursts.map((b) => `burst ${b}: 200 / 503`)], rows);
}

function envoyVsNginxExpected() {
  const p = plan({ experiment: 'envoy-vs-nginx', suite: 'spike' });
  const c = byId(p);
  const steps = [...new Set(p.cases.map((x) => x.step))];
  return table(['burst at 400 r/s', 'Envoy 200 / 429', 'nginx 200 / 429, longest wait'],
    steps.map((s) => [s, outcome(c[`envoy-${s}`]), outcome(c[`nginx-${s}`])]));
}

const change = (d) => (d ? `${d.delta} (${d.by})` : 'not seen');
const knobRow = (k, v) => (v.any !== undefined
  ? [k, v.any ? `any (unexpected status, ${v.cases} cases)` : 'not seen', '']
  : [k, v.atMin ? '- (at its minimum)' : change(v.down), change(v.up)]);

/** One experiment's sensitivity as markdown: per knob, or per case and knob with `perCase`. */
export function formatSensitivity(s, { perCase = false } = {}) {
  const out = [`**${s.suite} / ${s.experiment}**${s.factor > 1 ? ` (--quick x${s.factor})` : ''}${s.unseen.length ? `: no case sees ${s.unseen.join(', ')}` : ''}\n`];
  out.push(table(['knob', 'smallest change caught, down', 'up'], Object.entries(s.knobs).map(([k, v]) => knobRow(k, v))));
  const why = Object.entries(s.knobs).filter(([, v]) => v.why).map(([k, v]) => `- ${k}: ${v.why}`);
  if (why.length) out.push(`\n${why.join('\n')}`);
  if (perCase && s.cases.length) {
    out.push(`\n${table(['case', 'knob', 'down', 'up'], s.cases.flatMap((c) => Object.entries(c.knobs).map(([k, v]) => [c.id, k, change(v.down), change(v.up)])))}`);
  }
  return out.join('\n');
}

/** Per suite: what each knob's smallest caught change is, and what no case sees. */
function sensitivityTable() {
  const suites = ['spike', 'soak', 'breakpoint'];
  return suites.flatMap((suite) => Object.keys(experiments).filter((e) => experiments[e].suites[suite])
    .map((experiment) => formatSensitivity(sensitivity({ experiment, suite })))).join('\n\n');
}

/** Which expected counts --quick changes, and to what. */
function quickChanges() {
  const rows = [];
  for (const [experiment, suite] of [['burst', 'spike'], ['burst', 'soak'], ['envoy-vs-nginx', 'spike']]) {
    const slow = byId(plan({ experiment, suite }));
    const quick = plan({ experiment, suite, factor: QUICK_FACTOR });
    for (const q of quick.cases) {
      const s = slow[q.id];
      if (span(s.expected.ok) !== span(q.expected.ok) || span(s.expected.limited) !== span(q.expected.limited)) {
        rows.push([`${experiment}/${q.id}`, `x${quick.factor}`, `${span(s.expected.ok)} / ${span(s.expected.limited)}`, `${span(q.expected.ok)} / ${span(q.expected.limited)}`]);
      }
    }
  }
  return table(['case', '--quick', 'seed timing 200 / limited', 'quick 200 / limited'], rows);
}

function jsonFilterBounds() {
  const exp = experiments['json-filter'];
  const { floors, ceilings } = comparisonBounds(exp.measuredSpread, exp.perturbMs);
  const rows = Object.entries(exp.measuredSpread.efficiency).flatMap(([server, refs]) => Object.entries(refs).map(([ref, [min, max]]) =>
    [server, `CPU per request: ${ref}'s / its own`, `${min.toFixed(2)}..${max.toFixed(2)}`, `>= ${floors[server][ref].toFixed(2)}`]));
  for (const [server, [min, max]] of Object.entries(exp.measuredSpread.overheadMs)) {
    rows.push([server, 'relayed p50 over direct at 500 r/s', `${min.toFixed(1)}..${max.toFixed(1)} ms`, `<= ${ceilings[server]} ms`]);
  }
  return `${table(['server', 'measure', 'measured (runs below)', 'threshold'], rows)}\n\nRuns: ${exp.measuredSpread.runs}`;
}

/** Per suite and mode: the seed's figures beside the model's, at the seed's 10 workers and at 4. */
function cachingExpected() {
  const rps = (c, d) => (c.responses * 1000 / d).toFixed(1);
  const pct = (x) => `${Math.round(x * 100)} %`;
  const ms = (x) => (x >= 1000 ? `${(x / 1000).toFixed(2)} s` : `${Math.round(x)} ms`);
  const rows = [];
  for (const suite of ['stress', 'load']) {
    const p = byId(plan({ experiment: 'caching', suite }));
    const four = byId(plan({ experiment: 'caching', suite, overrides: { workers: '4' } }));
    for (const [id, c] of Object.entries(p)) {
      const s = c.seed || {};
      const f = four[id].model;
      const m = c.model;
      rows.push([suite, c.mode,
        s.throughput ?? '-', `${rps(c, m.durationMs.max)}..${rps(c, m.durationMs.min)}`, `${rps(c, f.durationMs.max)}..${rps(c, f.durationMs.min)}`,
        s.limitedShare !== undefined ? pct(s.limitedShare) : '-', `${pct(m.limitedShare.min)}..${pct(m.limitedShare.max)}`,
        s.meanMs !== undefined ? ms(s.meanMs) : '-', `${ms(m.meanMs.min)}..${ms(m.meanMs.max)}`, `${ms(f.meanMs.min)}..${ms(f.meanMs.max)}`,
        span(m.appServed)]);
    }
  }
  return table(['suite', 'mode', 'seed r/s', 'model r/s', 'model r/s, 4 workers', 'seed 503', 'model 503', 'seed mean', 'model mean', 'model mean, 4 workers', 'app served'], rows);
}

export const BLOCKS = {
  'stacks/caching/README.md': { 'caching-expected': cachingExpected },
  'stacks/burst/README.md': { 'burst-expected': burstExpected },
  'stacks/envoy-vs-nginx/README.md': { 'envoy-vs-nginx-expected': envoyVsNginxExpected },
  'stacks/json-filter/README.md': { 'json-filter-bounds': jsonFilterBounds },
  'docs/model.md': { sensitivity: sensitivityTable },
  'docs/knobs.md': { quick: quickChanges },
};

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
  if (missing.length) throw new Error(`${file}: block(s) ${missing.join(', ')} missing; add <!-- lab:generated NAME --> ... <!-- lab:end -->`);
  return out;
}

/**
 * Whole files made from the topology: the k6 scripts' default addresses (k6 cannot read YAML,
 * and a script must run with k6 alone against `just up <experiment>`).
 */
export const FILES = {
  'k6/lib/services.json': (root) => {
    const t = loadTopology(join(root, 'docker-compose.yml'));
    const ports = Object.fromEntries(Object.values(t.services).filter((s) => s.ports.http).map((s) => [s.name, s.ports.http]));
    return `${JSON.stringify({ generatedFrom: 'docker-compose.yml by `just docs`', httpPorts: ports }, null, 1)}\n`;
  },
};

/**
 * Single generated lines, where a file's syntax leaves no room for a block (a Justfile's doc
 * comment must sit right above its recipe): per file and name, the pattern that finds the part
 * to generate, and what it must say.
 */
export const LINES = {
  Justfile: {
    suites: [/^# Run a suite \([^)\n]*\)/m, () => `# Run a suite (${Object.keys(suites).filter((s) => suites[s].length).join(', ')})`],
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
export function docs(root, { check = false } = {}) {
  const stale = [];
  for (const [file, make] of Object.entries(FILES)) {
    const path = join(root, file);
    const text = make(root);
    let before = null;
    try { before = readFileSync(path, 'utf8'); } catch { /* not there yet */ }
    if (before !== text) {
      stale.push(file);
      if (!check) writeFileSync(path, text);
    }
  }
  for (const [file, makers] of Object.entries(BLOCKS)) {
    const path = join(root, file);
    const before = readFileSync(path, 'utf8');
    const after = regenerate(before, makers, file);
    if (after !== before) {
      stale.push(file);
      if (!check) writeFileSync(path, after);
    }
  }
  for (const [file, lines] of Object.entries(LINES)) {
    const path = join(root, file);
    const before = readFileSync(path, 'utf8');
    const after = regenerateLines(before, lines, file);
    if (after !== before) {
      stale.push(file);
      if (!check) writeFileSync(path, after);
    }
  }
  return stale;
}
