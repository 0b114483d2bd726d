/*
 * What is in results/: which folders are runs (a checked testid and a run.json), and what one
 * run holds, read once into one object: run.json (older runs' missing fields derived), the
 * outcomes, the nothing-lost counts, the boards' data, and per experiment its phases' files.
 */
import { existsSync, lstatSync, readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { kindOfPlan } from '../../thresholds/plan.js';
import { refusedWrites } from '../stores/refusals.mjs';
import { TESTID, TESTID_FORM } from '../lib/run-names.mjs';

// The form is the runner's, beside stamp() which makes it (one place).
export { TESTID };

/** A testid as given on the command line or by a caller, refused unless it has the form. */
export function checkTestid(id) {
  if (typeof id !== 'string' || !TESTID.test(id))
    throw new Error(`not a testid: '${String(id).slice(0, 80)}' (the form is ${TESTID_FORM})`);
  return id;
}

/** The folder of a run: a checked testid that is a folder (not a link) under `results`. */
export function runDir(results, id) {
  checkTestid(id);
  const dir = join(results, id);
  let st = null;
  try {
    st = lstatSync(dir);
  } catch {
    // reported below
  }
  if (!st?.isDirectory()) throw new Error(`no run ${id} under ${results}`);
  return dir;
}

/** A run named on the command line: a testid, or 'latest' (what results/latest points at). */
export function runNamed(results, word) {
  if (word === undefined || word === 'latest') {
    let target;
    try {
      target = readlinkSync(join(results, 'latest'));
    } catch {
      throw new Error(`no results/latest: run './labw test smoke' first, or name a testid`);
    }
    runDir(results, checkTestid(target));
    return target;
  }
  runDir(results, word);
  return word;
}

export const readJson = (path, dflt = null) => {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return dflt;
  }
};

/** The runs under `results`, newest first, and the folders skipped (no run.json: under way, or not a test run). */
export function listRuns(results) {
  const names = existsSync(results)
    ? readdirSync(results)
        .filter((n) => TESTID.test(n))
        .sort()
        .reverse()
    : [];
  const runs = [];
  const skipped = [];
  for (const n of names) {
    const dir = runDir(results, n);
    if (existsSync(join(dir, 'run.json'))) runs.push(n);
    else skipped.push(n);
  }
  return { runs, skipped };
}

/** The epoch ms a testid names (UTC, as the runner stamps it). */
export const testidMs = (id) =>
  Date.UTC(
    +id.slice(0, 4),
    +id.slice(4, 6) - 1,
    +id.slice(6, 8),
    +id.slice(9, 11),
    +id.slice(11, 13),
    +id.slice(13, 15),
  );

/**
 * An experiment's kind name, as its plan says (a team's policy is in no list), or by the
 * experiment's declaration; null for an experiment the model no longer has.
 */
export function kindName(experiment, plan = null) {
  try {
    return kindOfPlan(plan?.kind ? plan : { experiment }).name;
  } catch {
    return null;
  }
}

/** The first and last time of any of a list of series ([[epochMs, ...], ...]), or null. */
const span = (list) => {
  const ts = list.flatMap((s) => (s?.length ? [s[0][0], s[s.length - 1][0]] : []));
  return ts.length ? [Math.min(...ts), Math.max(...ts)] : null;
};

/** The text of logs/<name>.log and of its segments' logs/<name>.seg<i>.log. */
function logsOf(dir, name) {
  const logs = join(dir, 'logs');
  if (!existsSync(logs)) return [];
  return readdirSync(logs)
    .filter((f) => f === `${name}.log` || (f.startsWith(`${name}.seg`) && f.endsWith('.log')))
    .map((f) => readFileSync(join(logs, f), 'utf8'));
}

/** Per experiment its phases' files: <suite>.<experiment>[.<phase>].{plan,summary,cpu,resources,wrk,options}.json. */
function experimentFiles(dir, files, suite, name) {
  const prefix = `${suite}.${name}.`;
  const bases = files
    .filter((f) => f.startsWith(prefix) && f.endsWith('.plan.json'))
    .map((f) => f.slice(0, -'.plan.json'.length))
    .sort();
  const phases = bases.map((base) => {
    const plan = readJson(join(dir, `${base}.plan.json`));
    return {
      base,
      phase: base.length > prefix.length ? base.slice(prefix.length) : null,
      plan,
      summary: readJson(join(dir, `${base}.summary.json`)),
      cpu: readJson(join(dir, `${base}.cpu.json`)),
      resources: readJson(join(dir, `${base}.resources.json`)),
      wrk: readJson(join(dir, `${base}.wrk.json`)),
      options: readJson(join(dir, `${base}.options.json`)),
      sends: readJson(join(dir, `${base}.sends.json`)),
      report: files.includes(`${base}.report.html`) ? `${base}.report.html` : null,
      refusals: logsOf(dir, `k6.${base}`).flatMap(refusedWrites),
    };
  });
  // The phases in the order they ran: by their first CPU sample, else by k6's scenario start.
  const at = (p) => span(Object.values(p.cpu || {}))?.[0] ?? p.summary?.setup_data?.t0 ?? 0;
  return phases.sort((a, b) => at(a) - at(b));
}

// Around the CPU sampler's span: the stores' rates trail the load by their window (the
// boards' $__rate_interval, 4 s at the runs' 1 s step) and a step.
const LEAD_MS = 2000;
const TRAIL_MS = 6000;
// The k6 board counts each step's growth (no rate window trails it): one step before k6's
// first CPU sample is enough, and another experiment's series are told apart by their labels.
const STEP_MS = 1000;

/**
 * Each experiment's window of the run: its CPU sampler's span (stack up to stack down), widened
 * a little (the stores' rates trail the load), never into the other experiments' spans (they
 * run one after another). Without CPU samples, the whole run.
 */
function windows(exps, info) {
  const spans = exps.map((e) => span(e.phases.flatMap((p) => Object.values(p.cpu || {}))));
  return exps.map((e, i) => {
    const s = spans[i];
    if (!s) return { fromMs: info.fromMs, toMs: info.toMs };
    const prev = spans.slice(0, i).reverse().find(Boolean);
    const next = spans.slice(i + 1).find(Boolean);
    return {
      fromMs: Math.max(s[0] - LEAD_MS, prev ? prev[1] : -Infinity),
      toMs: Math.min(s[1] + TRAIL_MS, next ? next[0] : Infinity, info.toMs ?? Infinity),
    };
  });
}

/**
 * The window of k6's own series (the overview): from a step before k6's first CPU sample, or
 * once the k6 of the experiment before has ended, to a little after its last; the stack's
 * window without.
 */
function k6Windows(exps) {
  const spans = exps.map((e) => span(e.phases.map((p) => p.cpu?.k6)));
  return exps.map((e, i) => {
    const s = spans[i];
    if (!s) return e.window;
    const prev = spans.slice(0, i).reverse().find(Boolean);
    return {
      fromMs: Math.max(s[0] - STEP_MS, prev ? prev[1] : -Infinity),
      toMs: Math.min(s[1] + TRAIL_MS, e.window.toMs),
    };
  });
}

/** run.json with what older runs lack derived from the rest of the folder. */
function runInfo(raw, id, outcomes, exps) {
  const plan0 = exps.find((e) => e.phases[0]?.plan)?.phases[0].plan;
  const passed = outcomes.filter((o) => o.pass).length;
  const fromMs = raw.fromMs ?? testidMs(id);
  return {
    testid: id,
    suite: raw.suite ?? plan0?.suite ?? '?',
    experiments: raw.experiments ?? exps.map((e) => e.name),
    fromMs,
    toMs: raw.toMs ?? null,
    durationMs: raw.toMs ? raw.toMs - fromMs : null,
    metrics: raw.metrics ?? null,
    influx: raw.influx ?? null,
    factor: raw.factor ?? plan0?.factor ?? 1,
    factors:
      raw.factors ??
      Object.fromEntries(exps.filter((e) => e.phases[0]?.plan).map((e) => [e.name, e.phases[0].plan.factor])),
    perturbed: raw.perturbed ?? null,
    segments: raw.segments ?? 1,
    knobs: raw.knobs ?? null,
    git: raw.git ?? null,
    cases: raw.cases ?? { passed, failed: outcomes.length - passed },
    problems: raw.problems ?? [],
    interrupted: raw.interrupted ?? false,
  };
}

/**
 * The nothing-lost rows of one experiment of a run's counts.json: its cases', the proxy's own
 * counters written after them (rows in parentheses, which follow their experiment's cases), and
 * the run's judged figures.
 */
function countsOf(counts, name) {
  let mine = false;
  return counts.filter((r) => {
    if (!r.case.startsWith('(')) mine = r.case.startsWith(`${name}/`);
    return mine || r.case === '(judged figures)';
  });
}

/**
 * Everything the pages show of one run; `panels: false` leaves the boards' data unread (the lists and
 * histories need none).
 */
export function readRun(results, id, { panels: withPanels = true } = {}) {
  const dir = runDir(results, id);
  const files = readdirSync(dir);
  const raw = readJson(join(dir, 'run.json'), {});
  const outcomes = readJson(join(dir, 'outcomes.json'), []);
  const counts = readJson(join(dir, 'counts.json'), null);
  const panels = withPanels ? readJson(join(dir, 'panels.json'), null) : null;
  const suite = raw.suite ?? files.find((f) => f.endsWith('.plan.json'))?.split('.')[0];
  const names = raw.experiments ?? [
    ...new Set(files.filter((f) => f.endsWith('.plan.json')).map((f) => f.split('.')[1])),
  ];
  const exps = names.map((name) => {
    const phases = experimentFiles(dir, files, suite, name);
    return {
      name,
      kindName: kindName(name, phases[0]?.plan),
      phases,
      policy: readJson(join(dir, `${name}.policy.json`), null),
    };
  });
  const info = runInfo(raw, id, outcomes, exps);
  windows(exps, info).forEach((w, i) => {
    exps[i].window = w;
  });
  k6Windows(exps).forEach((w, i) => {
    exps[i].k6Window = w;
  });
  for (const e of exps) {
    e.cases = e.phases.flatMap((p) => (p.plan?.cases || []).map((c) => ({ ...c, phase: p.phase })));
    e.outcomes = outcomes.filter((o) => o.case.startsWith(`${e.name}/`));
    e.counts = counts ? countsOf(counts, e.name) : null;
    e.services = [...new Set(e.phases.flatMap((p) => Object.keys(p.cpu || {})))].filter((s) => s !== 'k6');
  }
  return {
    id,
    dir,
    info,
    outcomes,
    counts,
    panels,
    experiments: exps,
    refusals: logsOf(dir, 'prometheus').flatMap(refusedWrites),
  };
}
