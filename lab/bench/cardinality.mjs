/*
 * How many series a run adds to each store, computed from the tag sets the lab's own k6 code
 * gives its samples, never listed by hand: the plan's k6 run (k6/lib/run.js, the kinds'
 * executors) runs in Node against stand-ins for k6's modules (lab/bench/k6-shim.mjs), which
 * record every sample's tags, and the stores' rules turn tag sets into series:
 *   - InfluxDB, database k6 (k6's influxdb output, for the kinds that stream to it): one series
 *     per measurement and tag set, `url` being a field there (k6's K6_INFLUXDB_TAGS_AS_FIELDS);
 *   - Prometheus (k6's experimental-prometheus-rw): a counter is k6_<name>_total, a gauge
 *     k6_<name>, a rate k6_<name>_rate, a trend one series per stat the lab asks for
 *     (K6_PROMETHEUS_RW_TREND_STATS in stores.mjs), with every tag a label;
 *   - InfluxDB, database prometheus: what Prometheus forwards (the keep regex of
 *     stacks/metrics/prometheus.yml), one series per forwarded series;
 *   - the judged figures (lab/stores/outcomes.mjs): lab_outcome in InfluxDB, one series per
 *     figure; lab_outcome_{pass,measured,expected_low,expected_high} in Prometheus.
 * A store's series are what its memory and its series limit grow with (issue 21), so a tag whose
 * values grow with the VUs or the iterations must not exist: checkBounded() says so, and the
 * unit test (test/stores.test.mjs) fails on one. The answers are the plan's (each case's 200 or
 * 204 and its limited status where the model expects some), so these are the series of a run
 * that went as planned: a network error or a dropped iteration adds a series per case.
 */
import { register } from 'node:module';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { plan as makePlan, kindOfPlan, experiments, suites } from '../../thresholds/plan.js';
import { kindFor } from '../kinds/index.mjs';
import { k6Outputs } from '../stores/stores.mjs';
import { sim, modules, resetSamples, installGlobals, record } from './k6-shim.mjs';
import { table } from '../lib.mjs';
import { durationMs } from '../../thresholds/k6-duration.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Every tag a sample may carry, and what bounds its values: none grows with the VUs, the
 * iterations or the time a run takes. A tag that is not here fails checkBounded(): add it here
 * only with the bound that holds it.
 */
export const BOUNDED_TAGS = {
  testid: 'one per run (--tag)',
  experiment: 'one per experiment of the run (--tag)',
  suite: 'one per run (--tag)',
  segment: 'one per k6 process of a segmented run (--tag, at most MAX_SEGMENTS)',
  scenario: "the plan's scenarios",
  case: "the plan's cases, and setup, warmup and accounting",
  group: 'setup and teardown',
  status: 'the statuses the servers answer',
  method: 'the methods the executors send',
  url: "the plan's URLs (per service and path, and per item of a catalogue)",
  name: 'the URL, or the name a request gives itself',
  proto: 'the HTTP version',
  expected_response: 'true or false',
  source: 'where a closed-loop answer came from (client cache, server cache, upstream, app)',
  cache: "the edge's cache status",
  edge: "the plan's edges",
  route: 'relayed to the backend or not',
  check: "the checks' names",
  measure: "a judged figure's measure (outcomes)",
};

// What the servers send that the executors read, every value they send: a simulated answer
// cycles through them (caching's X-Lab-Cache, the CDN edges' X-Cache-Status).
export const SERVER_HEADERS = { 'X-Lab-Cache': ['HIT', 'MISS'], 'X-Cache-Status': ['HIT', 'MISS', 'EXPIRED'] };

// Iterations simulated per scenario at most: enough for every status and header value to meet
// every tag set (the test checks that twice as many add nothing).
export const DEFAULT_CAP = 64;

// k6's influxdb output writes these tags as fields (its default K6_INFLUXDB_TAGS_AS_FIELDS).
const INFLUX_FIELDS = ['vu', 'iter', 'url'];
const TESTID = '20990101-000000-000-1-series';
const PLAN_FILE = 'lab-k6-shim:plan.json';
const RUN_JS = pathToFileURL(join(ROOT, 'k6', 'lib', 'run.js')).href;
const K6_CODE = `${pathToFileURL(join(ROOT, 'k6')).href}/`;

let hooked = false;
/** Sends k6's module names (k6, k6/...) to the stand-ins, once per process. */
function installHooks() {
  if (hooked) return;
  hooked = true;
  const shim = new URL('./k6-shim.mjs', import.meta.url).href;
  const names = Object.fromEntries(
    Object.entries(modules).map(([m, x]) => [m, Object.keys(x).filter((k) => k !== 'default')]),
  );
  // A fresh run's copy of run.js (freshRun) takes fresh copies of the lab's k6 modules it imports,
  // as each k6 VU has its own: a module's state (plan-run.js notes its schedule's origin once)
  // otherwise carried from one simulated run to the next, and a run's series hung on which ran first.
  const hooks = `
const SHIM = ${JSON.stringify(shim)};
const NAMES = ${JSON.stringify(names)};
const K6_CODE = ${JSON.stringify(K6_CODE)};
export async function resolve(specifier, context, next) {
  if (specifier === 'k6' || specifier.startsWith('k6/')) return { url: 'lab-k6:' + specifier, shortCircuit: true };
  const resolved = await next(specifier, context);
  const fresh = context.parentURL?.startsWith(K6_CODE) ? new URL(context.parentURL).search : '';
  return fresh && resolved.url.startsWith(K6_CODE) && !resolved.url.includes('?') ? { ...resolved, url: resolved.url + fresh } : resolved;
}
export async function load(url, context, next) {
  if (!url.startsWith('lab-k6:')) return next(url, context);
  const name = url.slice('lab-k6:'.length);
  if (!NAMES[name]) throw new Error('lab/bench/k6-shim.mjs has no stand-in for ' + name);
  const source = 'import { modules } from ' + JSON.stringify(SHIM) + '; const m = modules[' + JSON.stringify(name) + '];\\nexport default m.default;\\n'
    + NAMES[name].map((n) => 'export const ' + n + ' = m.' + n + ';').join('\\n');
  return { format: 'module', source, shortCircuit: true };
}`;
  register(`data:text/javascript,${encodeURIComponent(hooks)}`);
}

/** How many iterations a scenario runs (a time-bound closed one: a few per VU). */
function plannedIterations(sc) {
  const perUnit = durationMs(sc.timeUnit || '1s');
  switch (sc.executor) {
    case 'per-vu-iterations':
      return (sc.vus ?? 1) * (sc.iterations ?? 1);
    case 'shared-iterations':
      return sc.iterations ?? 1;
    case 'constant-arrival-rate':
      return Math.ceil((sc.rate * durationMs(sc.duration)) / perUnit);
    case 'ramping-arrival-rate': {
      let rate = sc.startRate ?? 0;
      let n = 0;
      for (const st of sc.stages) {
        n += (((rate + st.target) / 2) * durationMs(st.duration)) / perUnit;
        rate = st.target;
      }
      return Math.ceil(n);
    }
    default:
      return Math.max(1, sc.vus ?? sc.preAllocatedVUs ?? 1) * 4;
  }
}

/** The VUs a scenario runs on. */
const scenarioVus = (sc) =>
  Math.max(
    1,
    sc.vus ?? sc.maxVUs ?? sc.preAllocatedVUs ?? Math.max(...(sc.stages || [{ target: 1 }]).map((s) => s.target)),
  );

/** How long a scenario runs, for the time its iterations see. */
const scenarioMs = (sc) =>
  sc.stages
    ? sc.stages.reduce((a, s) => a + durationMs(s.duration), 0)
    : durationMs(sc.duration || sc.maxDuration || '1s');

// Iteration i's moment in its scenario, as a fraction of its length: spread over all of it
// whatever the number of iterations (a golden-ratio sequence), so a time window (a ramp's step)
// meets iterations however few are simulated.
const moment = (i) => ((i + 0.5) * 0.6180339887498949) % 1;

/**
 * The statuses a case's own requests are answered with: its success, its limited status when the model
 * expects some.
 */
function statusesOf(c, method) {
  // The filters (POST) answer 204, everyone else 200.
  const ok = method === 'POST' ? 204 : 200;
  const limited = c?.limitedStatus && (c.expected?.limited?.hi ?? 1) > 0 ? [c.limitedStatus] : [];
  return [ok, ...limited];
}

/** The servers' answer to a request, cycling through every status and header value it can have. */
function answerFor(plan) {
  const byId = Object.fromEntries(plan.cases.map((c) => [c.id, c]));
  return ({ method, url, params, ctx }) => {
    const kase = ctx.scenarioTags?.case;
    // A case's own request: in its scenario, not a health check nor bookkeeping under another case.
    const own =
      ctx.scenario && byId[kase] && !/\/healthz$/.test(url) && (!params?.tags?.case || params.tags.case === kase);
    const statuses = own ? statusesOf(byId[kase], method) : [200];
    const k = ctx.answered;
    const headers = Object.fromEntries(
      Object.entries(SERVER_HEADERS).map(([h, values]) => [h, values[Math.floor(k / statuses.length) % values.length]]),
    );
    return { status: statuses[k % statuses.length], headers };
  };
}

let instance = 0;
/** A fresh copy of k6/lib/run.js (k6 gives each VU its own module state). */
async function freshRun(experiment) {
  instance += 1;
  return (await import(`${RUN_JS}?series=${instance}`)).experimentRun(experiment);
}

/** The simulated k6 context as a fresh stage of the run (setup, a scenario, teardown) sees it, with `over` set. */
const stageAt = (over) =>
  Object.assign(
    sim.ctx,
    {
      scenario: null,
      scenarioTags: {},
      group: '',
      vu: 0,
      vuTags: {},
      iteration: 0,
      startTime: Date.now(),
      executor: null,
      answered: 0,
    },
    over,
  );

/** The samples k6 itself adds to every iteration, and to setup and teardown (their data). */
const recordData = () => {
  record('data_sent', 'counter');
  record('data_received', 'counter');
};

/**
 * One scenario's iterations (at most `cap`), spread over its VUs (numbered from `firstVu` + 1)
 * and over its length; returns how many VUs it used.
 */
async function runScenario(p, name, sc, { env, data, vus, cap, firstVu, vuTags }) {
  installGlobals({ ...env, ...(sc.env || {}) });
  const run = await freshRun(p.experiment);
  const n = Math.min(cap, plannedIterations(sc));
  const many = vus === 1 ? 1 : scenarioVus(sc);
  const length = scenarioMs(sc);
  stageAt({ scenario: name, scenarioTags: sc.tags || {}, executor: sc.executor });
  for (let i = 0; i < n; i += 1) {
    const vu = firstVu + (i % many) + 1;
    Object.assign(sim.ctx, {
      vu,
      vuTags: (vuTags[vu] ||= {}),
      iteration: i,
      startTime: Date.now() - moment(i) * length,
    });
    run[sc.exec || 'default'](data);
    record('iterations', 'counter');
    record('iteration_duration', 'trend');
    recordData();
  }
  return many;
}

/** One k6 process on plan `p`: setup, every scenario's iterations, teardown. */
async function runProcess(p, { vus, cap, segment }) {
  sim.runTags = {
    testid: TESTID,
    experiment: p.experiment,
    suite: p.suite,
    ...(segment === undefined ? {} : { segment: String(segment) }),
  };
  sim.files = { [PLAN_FILE]: JSON.stringify(p) };
  sim.answer = answerFor(p);
  const env = { LAB_PLAN: PLAN_FILE };
  installGlobals(env);
  stageAt({});
  const main = await freshRun(p.experiment);
  // The engine's own gauges, with the run's tags alone.
  record('vus', 'gauge');
  record('vus_max', 'gauge');
  stageAt({ group: '::setup' });
  const data = main.setup();
  recordData();
  const vuTags = {};
  let firstVu = 0;
  for (const [name, sc] of Object.entries(main.options.scenarios))
    firstVu += await runScenario(p, name, sc, { env, data, vus, cap, firstVu, vuTags });
  stageAt({ group: '::teardown' });
  main.teardown(data);
  recordData();
}

/**
 * Every sample's tag sets in one run of a plan: Map(metric -> {type, sets}). `vus: 1` runs every
 * iteration on one VU; `cap` bounds the iterations per scenario; `segments` > 1 runs the plan as
 * that many k6 processes, each with its `segment` tag. A plan whose kind runs one k6 process per
 * part (k6Plan: one per phase) runs them all, as the runner does, under the same testid.
 */
export async function runTagSets(plan, { vus = 'plan', cap = DEFAULT_CAP, segments = 1 } = {}) {
  installHooks();
  resetSamples();
  const kind = kindOfPlan(plan);
  const processes = kind.k6Plan ? kind.phaseIds(plan).map((id) => ({ ...plan, phase: id })) : [plan];
  for (const p of processes) {
    for (let s = 0; s < segments; s += 1) await runProcess(p, { vus, cap, segment: segments > 1 ? s : undefined });
  }
  return sim.samples;
}

/** The tags that are not in BOUNDED_TAGS, as "metric: tag" (none: every tag is bounded). */
export function checkBounded(samples) {
  const out = new Set();
  for (const [name, { sets }] of samples) {
    for (const tags of sets.values())
      for (const k of Object.keys(tags)) if (!Object.hasOwn(BOUNDED_TAGS, k)) out.add(`${name}: ${k}`);
  }
  return [...out].sort();
}

/** The trend stats k6 sends Prometheus, as metric-name suffixes (p(95) -> p95). */
export function trendSuffixes() {
  const { env } = k6Outputs({ influx: '', prometheus: '', database: '' }, { testid: '', plan: {}, streams: [] });
  return env.K6_PROMETHEUS_RW_TREND_STATS.split(',').map((s) =>
    s
      .trim()
      .replace(/^p\((\d+(?:\.\d+)?)\)$/, 'p$1')
      .replace('.', ''),
  );
}

/** The metrics Prometheus forwards to InfluxDB: the keep regex of stacks/metrics/prometheus.yml. */
export function forwardedPattern(root = ROOT) {
  const text = readFileSync(join(root, 'stacks', 'metrics', 'prometheus.yml'), 'utf8');
  const m = /source_labels: \[__name__\]\s*\n\s*regex: "([^"]+)"\s*\n\s*action: keep/.exec(text);
  if (!m) throw new Error('stacks/metrics/prometheus.yml: no keep rule on __name__ under remote_write');
  return new RegExp(`^(?:${m[1]})$`);
}

/**
 * The judged figures a plan's run writes, as the kind's figures() makes them from an outcome
 * where every check was judged: what outcomes.mjs writes, per case. The measured shapes its
 * figures read (a number, the edges' shares, the backend's count) are made up. A check that
 * figures() asks about (`'p99' in checks`) counts when its figure can be made from the case's
 * expected ranges, as the judge makes it only then.
 */
export function syntheticOutcomes(plan) {
  const kind = kindFor(plan);
  const edges = (plan.roles?.edge || []).map(() => 1 / Math.max(1, plan.roles.edge.length));
  const measured = new Proxy(
    {},
    { get: (_, k) => (k === 'edgeShares' ? edges : k === 'backend' ? { lo: 0, hi: 0, received: 0 } : 1) },
  );
  const figuresOf = (c) => {
    const on = new Set();
    const off = new Set();
    const attempt = (probed) =>
      kind.figures({
        expected: c.expected,
        measured,
        checks: new Proxy(
          {},
          {
            get: () => true,
            has: (_, k) => {
              probed?.add(k);
              return on.has(k);
            },
          },
        ),
      });
    for (;;) {
      const probed = new Set();
      const figures = attempt(probed);
      const next = [...probed].find((k) => !on.has(k) && !off.has(k));
      if (next === undefined) return figures;
      on.add(next);
      try {
        attempt();
      } catch {
        on.delete(next);
        off.add(next);
      }
    }
  };
  return plan.cases.map((c) => ({ suite: plan.suite, case: `${plan.experiment}/${c.id}`, figures: figuresOf(c) }));
}

/** The Prometheus metric names one k6 metric becomes. */
export function prometheusNames(name, type, stats = trendSuffixes()) {
  return {
    counter: [`k6_${name}_total`],
    gauge: [`k6_${name}`],
    rate: [`k6_${name}_rate`],
    trend: stats.map((s) => `k6_${name}_${s}`),
  }[type];
}

/** Every series of a run's samples in Prometheus: {name, metric, type, labels} (labels: the tags). */
export function* prometheusSeriesOf(samples) {
  const stats = trendSuffixes();
  for (const [metric, { type, sets }] of samples) {
    for (const labels of sets.values())
      for (const name of prometheusNames(metric, type, stats)) yield { name, metric, type, labels };
  }
}

/** Every series of a run's samples in InfluxDB's database k6: {measurement, tags, fields}. */
export function* influxSeriesOf(samples) {
  for (const [measurement, { sets }] of samples) {
    const seen = new Set();
    for (const all of sets.values()) {
      const tags = Object.fromEntries(Object.entries(all).filter(([k]) => !INFLUX_FIELDS.includes(k)));
      const key = JSON.stringify(tags);
      if (seen.has(key)) continue;
      seen.add(key);
      yield {
        measurement,
        tags,
        fields: Object.fromEntries(Object.entries(all).filter(([k]) => INFLUX_FIELDS.includes(k))),
      };
    }
  }
}

/** Series per metric in each store from one run's tag sets (and its figures). */
export function storeSeries(samples, { influx = true, outcomes = [] } = {}) {
  const prometheus = {};
  const k6db = {};
  for (const s of prometheusSeriesOf(samples)) prometheus[s.name] = (prometheus[s.name] || 0) + 1;
  if (influx) for (const s of influxSeriesOf(samples)) k6db[s.measurement] = (k6db[s.measurement] || 0) + 1;
  const figures = outcomes.flatMap((o) => o.figures || []);
  if (figures.length) {
    k6db.lab_outcome = figures.length;
    prometheus.lab_outcome_pass = figures.length;
    prometheus.lab_outcome_measured = figures.filter((f) => f.measured !== null).length;
    prometheus.lab_outcome_expected_low = figures.filter((f) => f.lo !== null).length;
    prometheus.lab_outcome_expected_high = figures.filter((f) => f.hi !== null).length;
  }
  const keep = forwardedPattern();
  const forwarded = Object.fromEntries(Object.entries(prometheus).filter(([n]) => keep.test(n)));
  for (const m of [prometheus, k6db]) for (const [k, v] of Object.entries(m)) if (!v) delete m[k];
  return { influx: { k6: k6db, prometheus: forwarded }, prometheus };
}

const sum = (m) => Object.values(m).reduce((a, b) => a + b, 0);

/** One experiment's run in a suite: series per store, in all and per metric. */
export async function experimentSeries({ experiment, suite, factor = 1, segments = 1, cap = DEFAULT_CAP }) {
  const p = makePlan({ experiment, suite, factor });
  const samples = await runTagSets(p, { cap, segments });
  const s = storeSeries(samples, { influx: kindFor(p).streams.includes('influx'), outcomes: syntheticOutcomes(p) });
  return {
    experiment,
    suite,
    influxK6: sum(s.influx.k6),
    influxForwarded: sum(s.influx.prometheus),
    influx: sum(s.influx.k6) + sum(s.influx.prometheus),
    prometheus: sum(s.prometheus),
    byMetric: s,
    unbounded: checkBounded(samples),
  };
}

/** Every experiment of every suite that has some: what one run of it adds to each store. */
export async function seriesPerRun({ cap = DEFAULT_CAP } = {}) {
  const rows = [];
  for (const [suite, names] of Object.entries(suites)) {
    for (const experiment of names) rows.push(await experimentSeries({ experiment, suite, cap }));
  }
  return rows;
}

/** The same as rows: suite, experiment, InfluxDB (k6 + forwarded), Prometheus; a total per suite. */
export function seriesRows(per) {
  const rows = [];
  for (const suite of [...new Set(per.map((r) => r.suite))]) {
    const mine = per.filter((r) => r.suite === suite);
    for (const r of mine)
      rows.push([
        suite,
        r.experiment,
        String(r.influxK6),
        String(r.influxForwarded),
        String(r.influx),
        String(r.prometheus),
      ]);
    rows.push([
      suite,
      '(whole suite)',
      ...['influxK6', 'influxForwarded', 'influx', 'prometheus'].map((k) => String(mine.reduce((a, r) => a + r[k], 0))),
    ]);
  }
  return { head: ['suite', 'experiment', 'InfluxDB k6', 'InfluxDB prometheus', 'InfluxDB', 'Prometheus'], rows };
}

/** The per-run series as a markdown table. */
export function seriesMarkdown(per) {
  const { head, rows } = seriesRows(per);
  return table(head, rows);
}

// Where docs/metrics-and-dashboards.md states them: between these lines, written by
// `node lab/cli/index.mjs metrics series --write` and checked by test/stores.test.mjs.
export const SERIES_DOC = 'docs/metrics-and-dashboards.md';
const BLOCK = /(<!-- stores:series -->\n)[\s\S]*?(<!-- stores:end -->)/;

/** The doc's text with the series block set to `md` (throws when the block is missing). */
export function withSeriesBlock(text, md) {
  if (!BLOCK.test(text)) throw new Error(`${SERIES_DOC}: no <!-- stores:series --> ... <!-- stores:end --> block`);
  return text.replace(BLOCK, (_, open, close) => `${open}${md}\n${close}`);
}

/** The series block as the doc has it now. */
export function seriesBlock(text) {
  const m = BLOCK.exec(text);
  return m ? m[0].slice(m[1].length, -m[2].length).replace(/\n$/, '') : null;
}

export { experiments };
