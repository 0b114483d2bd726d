/*
 * `bench stores`: do the metrics stores stay bounded and whole over hundreds of runs (issue 21)?
 * It starts InfluxDB and Prometheus as the topology describes them (their configs, the retention
 * the lab sets), on ports of their own and with their data in a scratch folder, so neither a
 * team's stores nor their data are touched; then writes the equivalent of 500 runs (--quick:
 * 100) at speed, one suite after another, each with the lab's own tag sets
 * (lab/bench/cardinality.mjs runs the k6 code on every plan): k6's series to Prometheus by
 * remote write and, for the kinds that stream to it, to InfluxDB's database k6 by line protocol,
 * a few samples each; the judged figures as a run writes them (lab/stores/outcomes.mjs); and
 * Prometheus forwards what it holds to InfluxDB's database prometheus, as it does for every run.
 * Then it prints each store's series, memory (RSS of influxd and prometheus, from /proc) and disk,
 * writes one more run (smoke) and reads its counts back with the nothing-lost table's own code:
 * every row must agree. A benchmark: it fails only when a store refuses or loses something.
 */
import { writeFileSync, readFileSync, existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import { suites, plan as makePlan } from '../../thresholds/plan.js';
import { sentMetric, okMetric, limitedMetric } from '../../thresholds/kinds/limiter.js';
import { loadTopology } from '../stack/topology.mjs';
import { startStack, stopStack } from '../stack/start-stop.mjs';
import { labEnv, openRun } from '../run/suite.mjs';
import { kindFor } from '../kinds/index.mjs';
import { formatTable } from '../judge/table.mjs';
import { storeCounts, countsTable, k6Counts, judgedFiguresRow, COUNTS_HEAD } from '../judge/nothing-lost.mjs';
import { refusedWrites } from '../stores/refusals.mjs';
import { METRICS_PROFILE, storeUrls, storesPolicy, applyRetention, influxSeries, rssMiB } from '../stores/stores.mjs';
import { writeOutcomes, outcomeCounts, remoteWrite } from '../stores/outcomes.mjs';
import { runTagSets, prometheusSeriesOf, influxSeriesOf, syntheticOutcomes, storeSeries } from './cardinality.mjs';
import { duSize } from '../lib.mjs';
import { machine } from './tools.mjs';

// The bench's stores listen this far above the topology's ports: a team's may be up.
const PORT_OFFSET = 20000;
const STORES = ['influxdb', 'prometheus'];
// Samples per series and run, a second apart (a real run has one per second it lasts).
const SAMPLES = 4;
const DEADLINE_MS = 9 * 60_000;
const FORWARD_WAIT_MS = 5 * 60_000;

/** The topology's stores alone, on ports of their own, their templates read from the checkout. */
function scratchTopology(root, scratch) {
  const t = loadTopology(join(root, 'docker-compose.yml'));
  const services = Object.fromEntries(
    STORES.map((name) => {
      const s = t.services[name];
      return [
        name,
        {
          ...s,
          ports: Object.fromEntries(Object.entries(s.ports).map(([k, p]) => [k, p + PORT_OFFSET])),
          configs: Object.fromEntries(
            Object.entries(s.configs).map(([k, rel]) => [k, relative(scratch, join(root, rel))]),
          ),
          dependsOn: s.dependsOn.filter((d) => STORES.includes(d)),
        },
      ];
    }),
  );
  return { services, unavailable: {} };
}

/** A testid for synthetic run n at `ms`, in the form the lab makes them. */
const testidAt = (ms, n, suite) =>
  `${new Date(ms).toISOString().replace(/[-:]/g, '').replace('T', '-').replace('.', '-').slice(0, 19)}-${n + 1}-${suite}`;

// Line protocol escapes (tags: commas, spaces, equals; field strings: quotes and backslashes).
const esc = (v) => String(v).replace(/[,= \\]/g, (c) => `\\${c}`);
const str = (v) => `"${String(v).replace(/["\\]/g, (c) => `\\${c}`)}"`;

/** Every suite's experiments, with their tag sets, figures and whether k6 streams them to InfluxDB. */
async function suiteShapes() {
  const out = {};
  for (const [suite, names] of Object.entries(suites)) {
    if (!names.length) continue;
    out[suite] = [];
    for (const experiment of names) {
      const plan = makePlan({ experiment, suite });
      const samples = await runTagSets(plan);
      const influx = kindFor(plan).streams.includes('influx');
      out[suite].push({
        plan,
        influx,
        outcomes: syntheticOutcomes(plan),
        prometheus: [...prometheusSeriesOf(samples)],
        k6db: influx ? [...influxSeriesOf(samples)] : [],
        series: storeSeries(samples, { influx, outcomes: syntheticOutcomes(plan) }),
      });
    }
  }
  return out;
}

// A counter's final count for a series: small, and different per series.
const countOf = (i) => SAMPLES * (1 + (i % 7));

/** Writes one synthetic run of a suite at `t0`; returns k6's summary per experiment (its counters' totals). */
async function writeRun(urls, shapes, testid, t0) {
  const summaries = {};
  for (const x of shapes) {
    const runTags = { testid, experiment: x.plan.experiment, suite: x.plan.suite };
    const series = x.prometheus.map((s, i) => ({
      labels: Object.fromEntries(
        Object.entries({ __name__: s.name, ...s.labels, ...runTags }).sort(([a], [b]) => (a < b ? -1 : 1)),
      ),
      samples: Array.from({ length: SAMPLES }, (_, j) => ({
        value: s.type === 'counter' ? (countOf(i) * (j + 1)) / SAMPLES : j,
        timestamp: t0 + j * 1000,
      })),
    }));
    await remoteWrite(urls.prometheus, series, { timeoutMs: 120_000 });
    // What k6's summary would say of http_reqs per case and status: the counters' last values.
    const metrics = {};
    const put = (name, n) => {
      metrics[name] = { values: { count: (metrics[name]?.values.count ?? 0) + n } };
    };
    x.prometheus.forEach((s, i) => {
      if (s.name !== 'k6_http_reqs_total') return;
      const c = x.plan.cases.find((k) => k.id === s.labels.case);
      if (!c) return;
      put(sentMetric(c), countOf(i));
      if (s.labels.status === '200') put(okMetric(c), countOf(i));
      if (c.limitedStatus && s.labels.status === String(c.limitedStatus)) put(limitedMetric(c), countOf(i));
    });
    summaries[x.plan.experiment] = { metrics };
    if (x.k6db.length) {
      const lines = [];
      for (const s of x.k6db) {
        const tags = Object.entries({ ...s.tags, ...runTags })
          .sort(([a], [b]) => (a < b ? -1 : 1))
          .map(([k, v]) => `${esc(k)}=${esc(v)}`)
          .join(',');
        const url = s.fields.url ? `,url=${str(s.fields.url)}` : '';
        for (let j = 0; j < SAMPLES; j += 1)
          lines.push(`${esc(s.measurement)},${tags} value=${j}${url} ${t0 + j * 1000}`);
      }
      for (let i = 0; i < lines.length; i += 20_000) {
        const res = await fetch(`${urls.influx}/write?db=${urls.database}&precision=ms`, {
          method: 'POST',
          body: lines.slice(i, i + 20_000).join('\n'),
          signal: AbortSignal.timeout(120_000),
        });
        if (res.status !== 204) throw new Error(`InfluxDB refused run ${testid}: ${res.status} ${await res.text()}`);
      }
    }
    await writeOutcomes(urls, testid, x.outcomes, t0 + SAMPLES * 1000);
  }
  return summaries;
}

/** Prometheus's head series. */
const headSeries = async (urls) =>
  (await (await fetch(`${urls.prometheus}/api/v1/status/tsdb`, { signal: AbortSignal.timeout(60_000) })).json()).data
    .headStats.numSeries;

/** The scratch stores started (their retention applied): {stack, pid: {name: pid}}. */
async function startScratchStores(root, { env, topology, urls, run, scratch, say }) {
  const policy = storesPolicy(env);
  const stack = await startStack({
    root: scratch,
    env,
    topology,
    profile: METRICS_PROFILE,
    policy,
    targets: [],
    tmpDir: join(run.tmp, 'stack'),
    logDir: join(run.dir, 'logs'),
    state: run.state,
    log: (m) => say(`  ${m}`),
  });
  await applyRetention(urls, policy.retention);
  return { stack, pid: Object.fromEntries(stack.procs.map((p) => [p.name, p.pid])) };
}

/** The series a suite's synthetic run adds to each store, added into `expect`. */
function expectSeries(expect, shapes) {
  const total = (o) => Object.values(o).reduce((a, b) => a + b, 0);
  for (const x of shapes) {
    expect.prometheus += total(x.series.prometheus);
    expect.forwarded += total(x.series.influx.prometheus);
    expect.k6 += total(x.series.influx.k6);
  }
}

/** Up to `runs` synthetic runs, the suites in turn, within the deadline: {done, expect, wroteS}. */
async function writeRuns(urls, shapes, runs, at, say) {
  const order = Object.keys(shapes);
  const started = Date.now();
  const expect = { prometheus: 0, forwarded: 0, k6: 0 };
  let done = 0;
  for (; done < runs && Date.now() - started < DEADLINE_MS; done += 1) {
    const suite = order[done % order.length];
    const t0 = at();
    await writeRun(urls, shapes[suite], testidAt(t0, done, suite), t0);
    expectSeries(expect, shapes[suite]);
    if ((done + 1) % 50 === 0)
      say(
        `  ${done + 1} runs in ${((Date.now() - started) / 1000).toFixed(0)} s; Prometheus ${await headSeries(urls)} series`,
      );
  }
  if (done < runs) say(`stopped at ${done} runs: the bench's ${DEADLINE_MS / 60_000} min were up`);
  return { done, expect, wroteS: (Date.now() - started) / 1000 };
}

/** Forwarding runs behind: waits until InfluxDB holds every forwarded series (or the wait is up): {held, forwardS}. */
async function awaitForwarding(urls, forwarded) {
  const fwStart = Date.now();
  let held = await influxSeries(urls);
  while ((held[urls.forwarded] ?? 0) < forwarded && Date.now() - fwStart < FORWARD_WAIT_MS) {
    await new Promise((r) => setTimeout(r, 2000));
    held = await influxSeries(urls);
  }
  return { held, forwardS: (Date.now() - fwStart) / 1000 };
}

/** Each store's series (held against written), RSS and disk, as a table. */
function storesTable(urls, figures) {
  const { series: held } = figures.influx;
  const { expected } = figures;
  const f0 = (x) => (x === null ? '-' : x.toFixed(0));
  const allInflux = Object.values(held).reduce((a, b) => a + b, 0);
  return formatTable(
    [
      ['InfluxDB k6', String(held[urls.database] ?? 0), String(expected.k6), '', ''],
      ['InfluxDB prometheus', String(held[urls.forwarded] ?? 0), String(expected.forwarded), '', ''],
      ['InfluxDB (influxd)', String(allInflux), '', f0(figures.influx.rssMiB), figures.influx.disk],
      [
        'Prometheus (head)',
        String(figures.prometheus.series),
        String(expected.prometheus),
        f0(figures.prometheus.rssMiB),
        figures.prometheus.disk,
      ],
    ],
    ['store', 'series', 'series written', 'RSS MiB', 'disk'],
  );
}

/** One more (smoke) run, read back as the nothing-lost table reads a run: {testid, agree, readS, rows}. */
async function readBackOneRun(urls, shapes, testid, t0) {
  const summaries = await writeRun(urls, shapes.smoke, testid, t0);
  const rows = [];
  let agree = true;
  const readStarted = Date.now();
  for (const x of shapes.smoke) {
    const kind = kindFor(x.plan);
    const stores = await storeCounts(urls, testid, x.plan.experiment, kind.streams);
    const table = countsTable(x.plan, k6Counts(x.plan, kind, summaries[x.plan.experiment]), stores, null);
    rows.push(...table.rows);
    agree &&= table.agree;
  }
  const wanted = shapes.smoke.reduce((n, x) => n + x.outcomes.reduce((a, o) => a + o.figures.length, 0), 0);
  const { same, row } = judgedFiguresRow(wanted, await outcomeCounts(urls, testid));
  rows.push(row);
  return { testid, agree: agree && same, readS: (Date.now() - readStarted) / 1000, rows };
}

/** The writes Prometheus's log says it refused. */
function refusedInLog(dir) {
  const log = join(dir, 'logs', 'prometheus.log');
  return refusedWrites(existsSync(log) ? readFileSync(log, 'utf8') : '');
}

/**
 * `bench stores`: the stores started, the runs written and forwarded, the figures printed, one run
 * read back; 0 when nothing was refused or lost.
 */
export default async function benchStores(root, request, { say = console.log } = {}) {
  const runs = request.factor > 1 ? 100 : 500;
  const env = labEnv(root);
  const run = await openRun(root, 'bench-stores', { kind: 'bench', say, latest: false });
  const scratch = join(run.tmp, 'root');
  const topology = scratchTopology(root, scratch);
  const urls = storeUrls(topology);
  let stack;
  try {
    say("the lab's tag sets for every suite's experiments (k6 code run on each plan)");
    const shapes = await suiteShapes();
    let pid;
    ({ stack, pid } = await startScratchStores(root, { env, topology, urls, run, scratch, say }));
    // Prometheus forwards only samples newer than its start, and a query sees only what is not
    // in the future: each run's samples end as it is written, and the first begins after the start.
    await new Promise((r) => setTimeout(r, SAMPLES * 1000));
    const at = () => Date.now() - SAMPLES * 1000;
    say(
      `writing ${runs} runs (suites in turn: ${Object.keys(shapes).join(', ')}), ${SAMPLES} samples per series, into ${scratch}`,
    );
    const { done, expect, wroteS } = await writeRuns(urls, shapes, runs, at, say);
    say(`waiting for Prometheus to forward all it holds to InfluxDB (${expect.forwarded} series)`);
    const { held, forwardS } = await awaitForwarding(urls, expect.forwarded);
    const data = join(scratch, '.lab', 'data');
    const figures = {
      runs: done,
      writeS: wroteS,
      forwardS,
      samplesPerSeries: SAMPLES,
      expected: expect,
      influx: { series: held, rssMiB: rssMiB(pid.influxdb), disk: duSize(join(data, 'influxdb')) },
      prometheus: {
        series: await headSeries(urls),
        rssMiB: rssMiB(pid.prometheus),
        disk: duSize(join(data, 'prometheus')),
      },
    };
    say(`\n${done} runs written in ${wroteS.toFixed(0)} s, forwarded ${forwardS.toFixed(0)} s later; ${machine()}\n`);
    say(storesTable(urls, figures));
    const lastAt = at();
    const last = await readBackOneRun(urls, shapes, testidAt(lastAt, done, 'smoke'), lastAt);
    say(
      `\nthe run after them, ${last.testid}, read back in ${last.readS.toFixed(1)} s:\n${formatTable(last.rows, COUNTS_HEAD)}`,
    );
    const refused = refusedInLog(run.dir);
    if (refused.length)
      say(
        `\nrefused writes in Prometheus's log: ${refused.map((r) => `${r.store} (${r.level}): ${r.message}`).join('; ')}`,
      );
    writeFileSync(
      join(run.dir, 'bench.json'),
      JSON.stringify({ machine: machine(), ...figures, last, refused }, null, 1),
    );
    say(`\nresults: ${run.dir}`);
    return last.agree && !refused.some((r) => r.level === 'error') ? 0 : 1;
  } finally {
    if (stack) await stopStack(stack);
    run.close();
  }
}
