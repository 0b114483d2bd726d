/*
 * The lab's Grafana dashboards, as code: `just dashboards` writes each to dashboards/<uid>.json.
 * Here, the boards that are not an experiment's, and boards(), which adds one per experiment of
 * thresholds/experiments/index.js from its own file, dashboards/src/<experiment>.mjs. What each
 * board shows: dashboards/README.md.
 */
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { list } from '../../thresholds/experiments/index.js';
import dashboard from '@grafana/grafana-foundation-sdk/dashboard';
import {
  PROM,
  INFLUX,
  INFLUX_FORWARDED,
  runVariables,
  panel,
  board,
  prom,
  requires,
  truths,
  run,
  runCase,
  orZero,
  perSecond,
  shareOf,
  STEP_NOTE,
  SLOWEST_SERIES_NO_TRUTH,
  cgroupPanels,
} from './lib.mjs';

const here = dirname(fileURLToPath(import.meta.url));

// What the by-status panels sum over: every request of the run, the health checks and the
// bookkeeping ones too, which the run's counts (per case) leave out.
const BY_STATUS_NO_TRUTH =
  "summed over every request of the run, health checks and bookkeeping too, which the run's counts per case leave out: the per-case panels are checked";
const PER_INTERVAL_NO_TRUTH = "one figure per interval: the run's own figures are over each whole case";
const counted = (figure, read = 'integral') => ({ figure, by: ['case'], read });
// InfluxDB keeps one point per series and timestamp: two of k6's samples of one case and status
// ending in the same nanosecond are one point (responses completing together do, at a few
// hundred r/s). A chart of k6's own points then equals what InfluxDB holds over the whole run
// (`held`, asked when the panel is checked), and that count is at most k6's own.
const held = (select, measurement) =>
  `SELECT ${select} FROM "${measurement}" WHERE "testid" =~ /^$testid$/ GROUP BY "case"`;
const failedTitle =
  'Failed requests (share of all, since the case started), by case: statuses the policy does not allow';

/** k6Run's row 'Load'. */
const k6RunLoadRow = ({ all }) => ({
  title: 'Load',
  panels: [
    prom('Virtual users and max VUs, by experiment', 'none', [
      // By experiment: an experiment's k6 is gone when the next starts, but its last values
      // stay in Prometheus's lookback (5 min) and a sum over the run would add them up.
      {
        expr: `sum by (experiment) (k6_vus{${run}})`,
        legend: '{{experiment}} VUs',
        truth: { figure: 'vus', by: ['experiment'], read: 'max', relation: '<=' },
      },
      {
        expr: `sum by (experiment) (k6_vus_max{${run}})`,
        legend: '{{experiment}} max VUs',
        truth: { figure: 'vusMax', by: ['experiment'], read: 'max' },
      },
    ]),
    prom(
      'Requests per second, by case',
      'reqps',
      [{ expr: perSecond(all), legend: '{{case}}', truth: counted('requests') }],
      { description: STEP_NOTE },
    ),
  ],
});

/** k6Run's row 'Latency and failures'. */
const k6RunLatencyAndFailuresRow = ({ all }) => ({
  title: 'Latency and failures',
  panels: [
    // k6 keeps a trend per series (status, url): per case, the slowest series's percentile.
    prom(
      'p95 and p99 of the slowest status (since the case started), by case',
      's',
      [
        { expr: `max by (case) (k6_http_req_duration_p95{${runCase}})`, legend: '{{case}} p95' },
        { expr: `max by (case) (k6_http_req_duration_p99{${runCase}})`, legend: '{{case}} p99' },
      ],
      { noTruth: SLOWEST_SERIES_NO_TRUTH },
    ),
    prom(failedTitle, 'percentunit', [
      {
        expr: shareOf(`k6_http_reqs_total{${runCase}, expected_response="false"}`, all),
        legend: '{{case}}',
        truth: { figure: 'failedShare', by: ['case'], read: 'last' },
      },
    ]),
    prom(
      'Dropped iterations per second, by case',
      'none',
      [
        {
          expr: orZero(
            perSecond(`k6_dropped_iterations_total{${runCase}}`),
            perSecond(`k6_iterations_total{${runCase}}`),
          ),
          legend: '{{case}}',
          truth: counted('dropped'),
        },
      ],
      { optional: ['k6_dropped_iterations_total'], description: STEP_NOTE },
    ),
    prom('Requests per second, by status', 'reqps', [{ expr: perSecond(all, 'status'), legend: '{{status}}' }], {
      noTruth: BY_STATUS_NO_TRUTH,
      description: STEP_NOTE,
    }),
  ],
});

// k6-run: a run as k6 saw it (the lineage of the official k6 Prometheus dashboard).
function k6Run() {
  const all = `k6_http_reqs_total{${runCase}}`;
  return board({
    uid: 'lab-k6-run',
    title: 'lab / k6 run',
    tags: ['k6'],
    description: "A run as k6 saw it, per case: the testid is the run's folder name under results/.",
    variables: runVariables(PROM),
    rows: [k6RunLoadRow({ all }), k6RunLatencyAndFailuresRow({ all })],
  });
}

/** k6RunInflux's row 'Load'. */
const k6RunInfluxLoadRow = ({ where, influx }) => ({
  title: 'Load',
  panels: [
    influx(
      'Virtual users, by experiment',
      'none',
      `SELECT max("value") FROM "vus" WHERE "testid" =~ /^$testid$/ AND $timeFilter GROUP BY time($__interval), "experiment" fill(none)`,
      '$tag_experiment',
      { truth: { figure: 'vus', by: ['experiment'], read: 'max' } },
    ),
    influx(
      'Requests per interval, by case',
      'none',
      `SELECT count("value") FROM "http_reqs" WHERE ${where} GROUP BY time($__interval), "case" fill(none)`,
      '$tag_case',
      { truth: { ...counted('requests', 'sum'), held: held('count("value")', 'http_reqs') } },
    ),
  ],
});

/** k6RunInflux's row 'Latency and failures'. */
const k6RunInfluxLatencyAndFailuresRow = ({ where, influx }) => ({
  title: 'Latency and failures',
  panels: [
    influx(
      'p95 per interval, by case',
      'ms',
      `SELECT percentile("value", 95) FROM "http_req_duration" WHERE ${where} GROUP BY time($__interval), "case" fill(none)`,
      '$tag_case',
      { noTruth: PER_INTERVAL_NO_TRUTH },
    ),
    // Failed over all since the case started: sums of k6's 0/1 samples, not a mean of means.
    influx(
      'Failed requests (share of the points InfluxDB holds, since the case started), by case: statuses the policy does not allow',
      'percentunit',
      `SELECT cumulative_sum(sum("value")) / cumulative_sum(count("value")) FROM "http_req_failed" WHERE ${where} GROUP BY time($__interval), "case" fill(none)`,
      '$tag_case',
      {
        truth: {
          figure: 'failedShare',
          by: ['case'],
          read: 'last',
          held: held('sum("value") / count("value")', 'http_req_failed'),
        },
      },
    ),
    influx(
      'Requests per interval, by status',
      'none',
      `SELECT count("value") FROM "http_reqs" WHERE ${where} GROUP BY time($__interval), "status" fill(none)`,
      '$tag_status',
      { noTruth: BY_STATUS_NO_TRUTH },
    ),
  ],
});

// k6-run-influxdb: the same overview in InfluxQL.
function k6RunInflux() {
  const where = `"testid" =~ /^$testid$/ AND "case" =~ /^$case$/ AND $timeFilter`;
  const influx = (title, unit, query, alias, extra = {}) => ({
    builder: panel({
      title,
      unit,
      source: INFLUX,
      queries: [{ query, alias, truth: extra.truth }],
      noTruth: extra.noTruth,
    }),
  });
  return board({
    uid: 'lab-k6-run-influxdb',
    title: 'lab / k6 run (InfluxDB)',
    tags: ['k6', 'influxdb'],
    description: 'The k6 run overview in InfluxQL, for teams on InfluxDB: k6 writes every sample to database k6.',
    variables: runVariables(INFLUX),
    rows: [k6RunInfluxLoadRow({ where, influx }), k6RunInfluxLatencyAndFailuresRow({ where, influx })],
  });
}

// process-exporter reads /proc per process group; the runner's sampler (cpu.json) reads each
// service's processes on its own clock, so the two are two samplings of one thing, not a figure.
const PROCESS_NO_TRUTH =
  "process-exporter's own samples of /proc: the runner's CPU samples (cpu.json) are another sampling, checked on the run pages";

/** resources's row 'Over time'. */
const resourcesOverTimeRow = ({ cpu, mem }) => ({
  title: 'Over time',
  panels: [
    prom('CPU % (of one core), by service', 'percent', [{ expr: cpu, legend: '{{groupname}}' }], {
      noTruth: PROCESS_NO_TRUTH,
    }),
    prom('Resident memory, by service', 'bytes', [{ expr: mem, legend: '{{groupname}}' }], {
      noTruth: PROCESS_NO_TRUTH,
    }),
    prom(
      'Threads, by service',
      'none',
      [{ expr: 'sum by (groupname) (namedprocess_namegroup_num_threads)', legend: '{{groupname}}' }],
      { noTruth: PROCESS_NO_TRUTH },
    ),
    prom(
      'Open files, by service',
      'none',
      [{ expr: 'sum by (groupname) (namedprocess_namegroup_open_filedesc)', legend: '{{groupname}}' }],
      { noTruth: PROCESS_NO_TRUTH },
    ),
  ],
});

// resources: CPU, memory, threads and open files per stack service, over time and as a table,
// and the cgroups of capped services (CPU against the cap, memory against the limit, OOM).
function resources() {
  const cpu = 'sum by (groupname) (rate(namedprocess_namegroup_cpu_seconds_total[$__rate_interval])) * 100';
  const mem = 'sum by (groupname) (namedprocess_namegroup_memory_bytes{memtype="resident"})';
  return board({
    uid: 'lab-resources',
    title: 'lab / resources',
    tags: ['resources'],
    description:
      'CPU, memory, threads and open files of every stack process, grouped by service (process-exporter), over time and as a table like `docker stats`.',
    variables: [],
    rows: [
      resourcesOverTimeRow({ cpu, mem }),
      // Over the dashboard's range, not at its end: the stack's processes are gone when a run
      // ends, and an instant gauge then has no series (a CI run's panel check found it empty).
      {
        title: 'Over the range, like docker stats',
        panels: [
          prom(
            'Per service: mean CPU %, peak memory, processes, threads, open files',
            'none',
            [
              {
                expr: 'sum by (groupname) (rate(namedprocess_namegroup_cpu_seconds_total[$__range])) * 100',
                legend: 'CPU % (mean)',
              },
              {
                expr: 'sum by (groupname) (max_over_time(namedprocess_namegroup_memory_bytes{memtype="resident"}[$__range]))',
                legend: 'memory (peak)',
              },
              {
                expr: 'sum by (groupname) (max_over_time(namedprocess_namegroup_num_procs[$__range]))',
                legend: 'processes (peak)',
              },
              {
                expr: 'sum by (groupname) (max_over_time(namedprocess_namegroup_num_threads[$__range]))',
                legend: 'threads (peak)',
              },
              {
                expr: 'sum by (groupname) (max_over_time(namedprocess_namegroup_open_filedesc[$__range]))',
                legend: 'open files (peak)',
              },
            ],
            { table: true, noTruth: PROCESS_NO_TRUTH },
          ),
        ],
      },
      { title: 'Capped services (their cgroups)', panels: cgroupPanels('name!=""') },
    ],
  });
}

/** k6RunInfluxForwarded's row 'Load'. */
const k6RunInfluxForwardedLoadRow = ({ where, influx, perSeries }) => ({
  title: 'Load',
  panels: [
    influx(
      'Virtual users (as pushed each second), by experiment',
      'none',
      `SELECT max("value") FROM "k6_vus" WHERE "testid" =~ /^$testid$/ AND $timeFilter GROUP BY time($__interval), "experiment" fill(none)`,
      '$tag_experiment',
      { truth: { figure: 'vus', by: ['experiment'], read: 'max', relation: '<=' } },
    ),
    influx(
      'Requests so far, by case and status',
      'none',
      `SELECT last("value") FROM "k6_http_reqs_total" WHERE ${where} GROUP BY time($__interval), "case", "status" fill(none)`,
      '$tag_case $tag_status',
      { truth: { figure: 'requests', by: ['case', 'status'], read: 'last' }, description: perSeries },
    ),
  ],
});

/** k6RunInfluxForwarded's row 'Latency'. */
const k6RunInfluxForwardedLatencyRow = ({ where, influx, perSeries }) => ({
  title: 'Latency',
  panels: [
    influx(
      'p99 (since the case started), by case and status',
      's',
      `SELECT last("value") FROM "k6_http_req_duration_p99" WHERE ${where} GROUP BY time($__interval), "case", "status" fill(none)`,
      '$tag_case $tag_status',
      {
        noTruth: "per status: k6's summary has each case's percentiles over all its statuses",
        description: perSeries,
      },
    ),
    influx(
      'Longest answer so far, by case and status',
      's',
      `SELECT last("value") FROM "k6_http_req_duration_max" WHERE ${where} GROUP BY time($__interval), "case", "status" fill(none)`,
      '$tag_case $tag_status',
      { truth: { figure: 'maxMs', by: ['case'], read: 'last', relation: '<=' }, description: perSeries },
    ),
  ],
});

// k6-run-influxdb-forwarded: the overview in InfluxQL over what Prometheus forwards, so every
// experiment shows, also those k6 streams to Prometheus only.
function k6RunInfluxForwarded() {
  const where = `"testid" =~ /^$testid$/ AND "case" =~ /^$case$/ AND $timeFilter`;
  const influx = (title, unit, query, alias, extra = {}) => ({
    builder: panel({
      title,
      unit,
      description: extra.description,
      source: INFLUX_FORWARDED,
      queries: [{ query, alias, truth: extra.truth }],
      noTruth: extra.noTruth,
    }),
  });
  // InfluxQL has no lookback: a sum or max over a case's series per interval takes only the
  // series pushed in that interval, and a difference loses each series' first sample (all a
  // short case's limited answers). So: each counter as it is, one series per case and status.
  const perSeries =
    'One series per case and status: a run in segments has one per segment, and this draws the last pushed of them.';
  return board({
    uid: 'lab-k6-run-influxdb-forwarded',
    title: 'lab / k6 run (InfluxDB, every experiment)',
    tags: ['k6', 'influxdb'],
    description:
      'The k6 run overview in InfluxQL over the series Prometheus forwards to InfluxDB (database prometheus): every experiment, also those k6 streams to Prometheus only. Failed shares: the k6 run boards.',
    variables: runVariables(INFLUX_FORWARDED),
    rows: [
      k6RunInfluxForwardedLoadRow({ where, influx, perSeries }),
      k6RunInfluxForwardedLatencyRow({ where, influx, perSeries }),
    ],
  });
}

// Across runs: a run's own judged figures are checked on its experiment's board (judgedRow).
const RUNS_NO_TRUTH = "over every run in the stores: one run's judged figures are checked on its experiment's board";

// lab-runs: every run the lab judged, from the figures it writes at the end of each run.
function runs() {
  const figures = 'last_over_time(lab_outcome_pass[$__range])';
  return board({
    uid: 'lab-runs',
    title: 'lab / runs',
    tags: ['runs'],
    description:
      'Every run the lab judged (lab_outcome_*, written at the end of each run): its judged figures, how many passed, and pass and fail over time.',
    variables: [],
    rows: [
      {
        title: 'Runs',
        panels: [
          prom(
            'Per run: judged figures, passed, failed',
            'none',
            [
              { expr: `count by (testid, suite, experiment) (${figures})`, legend: 'figures' },
              { expr: `sum by (testid, suite, experiment) (${figures})`, legend: 'passed' },
              {
                expr: `count by (testid, suite, experiment) (${figures} == 0) or (0 * count by (testid, suite, experiment) (${figures}))`,
                legend: 'failed',
              },
            ],
            { table: true, wide: true, noTruth: RUNS_NO_TRUTH },
          ),
        ],
      },
      {
        title: 'Over time',
        panels: [
          prom(
            'Judged figures passed and failed, by suite',
            'none',
            [
              {
                expr: 'sum by (suite) (last_over_time(lab_outcome_pass[$__rate_interval]))',
                legend: '{{suite}} passed',
              },
              {
                expr: 'count by (suite) (last_over_time(lab_outcome_pass[$__rate_interval]) == 0) or (0 * count by (suite) (last_over_time(lab_outcome_pass[$__rate_interval])))',
                legend: '{{suite}} failed',
              },
            ],
            { noTruth: RUNS_NO_TRUTH },
          ),
        ],
      },
    ],
  });
}

// lab-compare: two runs' judged figures side by side.
function compare() {
  const pick = (v) =>
    new dashboard.QueryVariableBuilder(v)
      .label(v === 'testid' ? 'run' : 'baseline')
      .datasource(PROM)
      .query('label_values(lab_outcome_pass, testid)')
      .refresh(dashboard.VariableRefresh.OnTimeRangeChanged)
      .sort(dashboard.VariableSort.AlphabeticalDesc);
  const field = (name, v) =>
    `max by (experiment, case, measure) (last_over_time(lab_outcome_${name}{testid="${v}"}[30d]))`;
  return board({
    uid: 'lab-compare',
    title: 'lab / compare',
    tags: ['compare'],
    description:
      "Two runs side by side: per case and measure, what each measured and whether it passed, with the first run's expected range.",
    variables: [pick('testid'), pick('baseline')],
    rows: [
      {
        title: 'Per case and measure',
        panels: [
          prom(
            "Measured and pass: the run and its baseline, with the run's expected range",
            'none',
            [
              { expr: field('measured', '$testid'), legend: 'run' },
              { expr: field('measured', '$baseline'), legend: 'baseline' },
              { expr: field('expected_low', '$testid'), legend: 'expected low' },
              { expr: field('expected_high', '$testid'), legend: 'expected high' },
              { expr: field('pass', '$testid'), legend: 'run pass' },
              { expr: field('pass', '$baseline'), legend: 'baseline pass' },
            ],
            { table: true, wide: true, noTruth: RUNS_NO_TRUTH },
          ),
        ],
      },
    ],
  });
}

/**
 * Each experiment's board maker ({name, make}), in the list's order: the default export of
 * dashboards/src/<name>.mjs, a function that returns the board. An experiment without that file
 * fails the build, and every import of this module, naming the file to add.
 */
export async function loadExperimentBoards(experiments = list) {
  const loaded = [];
  for (const { name } of experiments) {
    const file = join(here, `${name}.mjs`);
    // Imported, not looked for first: loading this module reads no file but the modules it loads.
    const { default: make } = await import(pathToFileURL(file).href).catch((e) => {
      if (e.code !== 'ERR_MODULE_NOT_FOUND' || !e.message.includes(file)) throw e;
      throw new Error(
        `experiment ${name} has no dashboard: add dashboards/src/${name}.mjs, whose default export returns its board (see burst.mjs, caching.mjs)`,
      );
    });
    if (typeof make !== 'function')
      throw new Error(`dashboards/src/${name}.mjs: the default export must be a function that returns the board`);
    loaded.push({ name, make });
  }
  return loaded;
}

const experimentBoards = await loadExperimentBoards();

/** An experiment's board, built: its uid names its JSON file, and the panel check finds its experiment by tag. */
function experimentBoard({ name, make }) {
  const b = make().build();
  if (b.uid !== `lab-${name}` || !b.tags?.includes(name)) {
    throw new Error(
      `dashboards/src/${name}.mjs: the board's uid must be lab-${name} and its tags must include ${name} (uid ${b.uid}, tags ${JSON.stringify(b.tags)})`,
    );
  }
  return b;
}

/** Every board, built: k6 run, k6 run (InfluxDB), one per experiment in the list's order, resources. */
export const boards = () => [
  k6Run().build(),
  k6RunInflux().build(),
  k6RunInfluxForwarded().build(),
  ...experimentBoards.map(experimentBoard),
  resources().build(),
  runs().build(),
  compare().build(),
];

/**
 * {panel title: {suite, optional}} for the panels only a suite's runs fill, or whose metrics a healthy
 * run may not emit.
 */
export function panelRequirements() {
  boards();
  return { ...requires };
}

/**
 * {panel title: {refId: truth}}: the run figure each query's series must equal, or why none
 * (lab/judge/chart-truth.mjs).
 */
export function panelTruths() {
  boards();
  return { ...truths };
}
