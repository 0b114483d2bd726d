/*
 * What every lab dashboard is made of, on @grafana/grafana-foundation-sdk: the two datasources
 * (fixed uids, which the provisioning defines), the run and case variables, panels over
 * Prometheus (PromQL) or InfluxDB (InfluxQL), a grid that lays rows of panels out two by two,
 * and below it the pieces several boards share.
 */
import dashboard from '@grafana/grafana-foundation-sdk/dashboard';
import prometheus from '@grafana/grafana-foundation-sdk/prometheus';
import timeseries from '@grafana/grafana-foundation-sdk/timeseries';
import table from '@grafana/grafana-foundation-sdk/table';
import common from '@grafana/grafana-foundation-sdk/common';

export const PROM = { type: 'prometheus', uid: 'lab-prometheus' };
export const INFLUX = { type: 'influxdb', uid: 'lab-influxdb' };
// What Prometheus forwards to InfluxDB (database prometheus): every experiment's k6 series.
export const INFLUX_FORWARDED = { type: 'influxdb', uid: 'lab-influxdb-forwarded' };

/** The run (k6's testid tag) and its cases, from whichever store the board reads. */
export const runVariables = (source) => {
  if (source === INFLUX_FORWARDED) {
    return [
      new dashboard.QueryVariableBuilder('testid')
        .label('run')
        .datasource(source)
        .query('SHOW TAG VALUES FROM "k6_http_reqs_total" WITH KEY = "testid"')
        .refresh(dashboard.VariableRefresh.OnTimeRangeChanged)
        .sort(dashboard.VariableSort.AlphabeticalDesc),
      new dashboard.QueryVariableBuilder('case')
        .datasource(source)
        .query('SHOW TAG VALUES FROM "k6_http_reqs_total" WITH KEY = "case" WHERE "testid" =~ /^$testid$/')
        .refresh(dashboard.VariableRefresh.OnTimeRangeChanged)
        .multi(true)
        .includeAll(true)
        .allValue('.*'),
    ];
  }
  if (source === INFLUX) {
    return [
      new dashboard.QueryVariableBuilder('testid')
        .label('run')
        .datasource(INFLUX)
        .query('SHOW TAG VALUES FROM "http_reqs" WITH KEY = "testid"')
        .refresh(dashboard.VariableRefresh.OnTimeRangeChanged)
        .sort(dashboard.VariableSort.AlphabeticalDesc),
      new dashboard.QueryVariableBuilder('case')
        .datasource(INFLUX)
        .query('SHOW TAG VALUES FROM "http_reqs" WITH KEY = "case" WHERE "testid" =~ /^$testid$/')
        .refresh(dashboard.VariableRefresh.OnTimeRangeChanged)
        .multi(true)
        .includeAll(true)
        .allValue('.*'),
    ];
  }
  return [
    new dashboard.QueryVariableBuilder('testid')
      .label('run')
      .datasource(PROM)
      .query('label_values(k6_http_reqs_total, testid)')
      .refresh(dashboard.VariableRefresh.OnTimeRangeChanged)
      .sort(dashboard.VariableSort.AlphabeticalDesc),
    new dashboard.QueryVariableBuilder('case')
      .datasource(PROM)
      .query('label_values(k6_http_reqs_total{testid=~"$testid"}, case)')
      .refresh(dashboard.VariableRefresh.OnTimeRangeChanged)
      .multi(true)
      .includeAll(true)
      .allValue('.*'),
  ];
};

/** InfluxQL targets: the SDK has no InfluxDB query module, so a raw query object of our own. */
class InfluxQueryBuilder {
  constructor(query, alias, datasource = INFLUX) {
    this.target = { query, rawQuery: true, resultFormat: 'time_series', alias, datasource };
  }
  refId(refId) {
    this.target.refId = refId;
    return this;
  }
  build() {
    return this.target;
  }
}

// Panel ids (board()) and refIds are set here, so the generated JSON is the same on every build.
const refIds = 'ABCDEFGHIJ';

// What each panel's series must equal among the run's own figures, by title and refId, for the
// truth check (lab/judge/chart-truth.mjs, which lists the figures): a query's `truth`
// ({figure, by, read, relation}), or the panel's `noTruth`, the reason it has no figure to meet.
export const truths = {};

function noteTruth(title, queries, noTruth) {
  const declared = queries.map((q, i) => [refIds[i], q.truth ?? (noTruth ? { none: noTruth } : null)]);
  const bare = declared.filter(([, t]) => !t).map(([r]) => r);
  if (bare.length)
    throw new Error(
      `panel '${title}': queries ${bare.join(', ')} say neither what run figure they must equal (truth) nor why none (noTruth)`,
    );
  const mine = Object.fromEntries(declared);
  if (truths[title] && JSON.stringify(truths[title]) !== JSON.stringify(mine))
    throw new Error(`panel '${title}' is declared twice with different truths: one title, one meaning`);
  truths[title] = mine;
}

/**
 * A panel: {title, unit, source (PROM or INFLUX), queries: [{expr, legend, truth}] for PromQL or
 * [{query, alias, truth}] for InfluxQL, table: true for a table of instant values, noTruth: why
 * its queries have no run figure to equal}.
 */
export function panel({ title, description, unit, source = PROM, queries, table: asTable = false, noTruth }) {
  noteTruth(title, queries, noTruth);
  const legend = new common.VizLegendOptionsBuilder()
    .showLegend(true)
    .displayMode(common.LegendDisplayMode.List)
    .placement(common.LegendPlacement.Bottom);
  const p = asTable
    ? new table.PanelBuilder()
    : new timeseries.PanelBuilder().lineWidth(1).fillOpacity(10).legend(legend);
  p.title(title).datasource(source);
  if (description) p.description(description);
  if (unit) p.unit(unit);
  queries.forEach((q, i) => {
    if (source.type === 'influxdb') {
      p.withTarget(new InfluxQueryBuilder(q.query, q.alias, source).refId(refIds[i]));
    } else {
      const t = new prometheus.DataqueryBuilder().refId(refIds[i]).expr(q.expr);
      if (q.legend) t.legendFormat(q.legend);
      if (asTable) t.instant().format(prometheus.PromQueryFormat.Table);
      else t.range();
      p.withTarget(t);
    }
  });
  if (asTable) p.withTransformation({ id: 'merge', options: {} });
  return p;
}

/** A dashboard of rows ({title, panels}) laid out two panels to a line. */
export function board({ uid, title, description, tags = [], variables, rows }) {
  const d = new dashboard.DashboardBuilder(title)
    .uid(uid)
    .tags(['lab', ...tags])
    .description(description)
    .time({ from: 'now-30m', to: 'now' })
    .refresh('10s')
    .timezone('browser')
    .readonly();
  for (const v of variables) d.withVariable(v);
  let id = 1;
  let y = 0;
  for (const row of rows) {
    d.withRow(new dashboard.RowBuilder(row.title).id(id).gridPos({ x: 0, y, w: 24, h: 1 }));
    id += 1;
    y += 1;
    row.panels.forEach((p, i) => {
      const wide = row.panels.length === 1 || p.wide;
      p.builder.id(id).gridPos({ x: wide ? 0 : (i % 2) * 12, y: y + Math.floor(i / 2) * 8, w: wide ? 24 : 12, h: 8 });
      d.withPanel(p.builder);
      id += 1;
    });
    y += Math.ceil(row.panels.length / 2) * 8;
  }
  return d;
}

// The pieces several boards share: the `prom` panel and what the panel check must know of it
// (panelRequirements()), the proxies' counters, the cgroup panels, and the one board both
// limiter experiments (burst, envoy-vs-nginx) use.
export const run = 'testid=~"$testid"';
export const runCase = `${run}, case=~"$case"`;

// What the panel check must know of a panel, by title (panelRequirements()): the suite whose
// runs alone fill it (the ramps' steps; skipped, and said so, for other runs), and the metrics
// a healthy run may never emit (k6 writes dropped iterations only when some drop), and whether
// only a run that put services in cgroups fills it (the capped experiments; cgroups: true).
export const requires = {};

/** A PromQL panel, as a row's entry; extra: panel() options and {suite, optional, cgroups} for the check. */
export const prom = (title, unit, queries, { cgroups, ...extra } = {}) => {
  if (extra.suite || extra.optional || cgroups)
    requires[title] = { suite: extra.suite, optional: extra.optional || [], cgroups: Boolean(cgroups) };
  return { builder: panel({ title, unit, queries, ...extra }), ...extra };
};

/** A count that may have no series yet (nothing limited, nothing dropped) shows as zeros per case. */
export const orZero = (expr, like) => `${expr} or (0 * ${like})`;

/**
 * Per second, exactly: each step's growth of every counter of `selector`, summed by `by`, with a
 * series born inside the step counted whole from zero. rate() cannot count what a counter held
 * at its first sample, and k6 pushes a counter only once it has grown: a 1 s case's limited
 * answers drew as 0. A series that fell is a process started again under the same labels (a
 * proxy's counters from one run to the next, which carry no testid; Prometheus stopped with the
 * stack writes no staleness marker, so the last run's value is still seen): its growth is what
 * it holds now, as rate() reads a reset. Over the run this adds up to the count. `wrap` renames
 * labels around the selector (label_replace), so that the offset stays on the selector itself.
 */
export const perSecond = (selector, by = 'case', wrap = (x) => x) => {
  const now = wrap(selector);
  const growth = `((${now} - ${wrap(`${selector} offset $__interval`)}) >= 0) or ${now}`;
  return `sum by (${by}) (${growth}) / ($__interval_ms / 1000)`;
};

// What a per-second panel says of its steps: k6 pushes every second, so a burst shorter than a
// step is drawn as its mean over the step (a half-second burst at 800 r/s as about 400).
// Percentiles of several series do not merge, and k6 interpolates between samples: in a case of
// few requests its own p95 can lie above every series's (test/chart-truth.test.mjs shows one).
export const SLOWEST_SERIES_NO_TRUTH =
  "k6 keeps one trend per status and url, and a case's percentile is not a function of theirs: with k6's interpolation between samples the case's own can exceed the slowest series's";
export const STEP_NOTE =
  'per step of the chart (1 s at the finest): a burst shorter than a step is drawn averaged over it';

/** A series' truth: a stat of a metric in the run's k6 summary, per the labels `by`, read at its last point. */
export const fromSummary = (metric, stat, by) => ({ figure: 'summary', metric, stat, by, read: 'last' });

/** A share of a case's answers, from counts (what the counters add up to), not from means of rates. */
export const shareOf = (part, all, by = 'case') =>
  `(sum by (${by}) (${part}) or (0 * sum by (${by}) (${all}))) / sum by (${by}) (${all})`;

// nginx's lab counters (stacks/lib/lab_metrics.lua) and Envoy's per-case local rate limit stats.
export const nginxCounted = (service) => {
  const sel = (decision) =>
    `lab_nginx_requests_total{service="${service}", case=~"$case", case!="", limit_req=~"${decision}"}`;
  return {
    title: service,
    accepted: perSecond(sel('PASSED|DELAYED')),
    limited: orZero(perSecond(sel('REJECTED')), perSecond(sel('.*'))),
  };
};
// Envoy names its per-route stats by the stat_prefix, the case's id: renamed to case.
const asCase = (x) => `label_replace(${x}, "case", "$1", "envoy_local_http_ratelimit_prefix", "(.*)")`;
export const envoyCounted = (service) => ({
  title: service,
  accepted: perSecond(
    `envoy_http_local_rate_limit_ok{service="${service}", envoy_local_http_ratelimit_prefix=~"$case"}`,
    'case',
    asCase,
  ),
  limited: perSecond(
    `envoy_http_local_rate_limit_rate_limited{service="${service}", envoy_local_http_ratelimit_prefix=~"$case"}`,
    'case',
    asCase,
  ),
});

// The cgroups of capped services, under cAdvisor's names (cAdvisor in Docker, lab/stores/cgroup-exporter.mjs natively).
const CGROUP_NO_TRUTH =
  "the cgroup exporter's own samples: the run keeps no other record of a cgroup at this resolution (resources.json is read once, at the phase's end)";
export const cgroupPanels = (match) => [
  prom(
    'CPU % of one core, by service (cgroup)',
    'percent',
    [
      {
        expr: `sum by (name) (rate(container_cpu_usage_seconds_total{${match}}[$__rate_interval])) * 100`,
        legend: '{{name}}',
      },
    ],
    { cgroups: true, noTruth: CGROUP_NO_TRUTH },
  ),
  prom(
    'Memory in use, by service (cgroup)',
    'bytes',
    [{ expr: `max by (name) (container_memory_usage_bytes{${match}})`, legend: '{{name}}' }],
    { cgroups: true, noTruth: CGROUP_NO_TRUTH },
  ),
  // Only capped levels have caps: the load suite's (smoke runs cdn uncapped).
  prom(
    'Caps: CPU quota (% of one core) and memory limit, by service',
    'none',
    [
      { expr: `max by (name) (container_spec_cpu_quota_cores{${match}}) * 100`, legend: '{{name}} CPU %' },
      { expr: `max by (name) (container_spec_memory_limit_bytes{${match}}) / 1048576`, legend: '{{name}} MiB' },
    ],
    { suite: 'load', cgroups: true, noTruth: 'the caps the runner set: its plan names them, not a measurement' },
  ),
  prom(
    'Per service over the range, like docker stats: CPU %, peak memory, PIDs, OOM kills, throttled s',
    'none',
    [
      {
        expr: `sum by (name) (rate(container_cpu_usage_seconds_total{${match}}[$__range])) * 100`,
        legend: 'CPU % (mean)',
      },
      {
        expr: `max by (name) (max_over_time(container_memory_usage_bytes{${match}}[$__range]))`,
        legend: 'memory (peak)',
      },
      { expr: `max by (name) (max_over_time(container_processes{${match}}[$__range]))`, legend: 'PIDs (peak)' },
      { expr: `sum by (name) (max_over_time(container_oom_events_total{${match}}[$__range]))`, legend: 'OOM kills' },
      {
        expr: `sum by (name) (increase(container_cpu_cfs_throttled_seconds_total{${match}}[$__range]))`,
        legend: 'throttled (s)',
      },
    ],
    { table: true, cgroups: true, noTruth: CGROUP_NO_TRUTH },
  ),
];

/** A limiter experiment's k6 queries: every answer of its cases, and those with the limited status. */
function limiterQueries(experiment) {
  const mine = `${runCase}, experiment="${experiment}"`;
  return {
    mine,
    all: `k6_http_reqs_total{${mine}}`,
    // The limited status is declared expected in the k6 scripts: limited is expected and not 200.
    limited: `k6_http_reqs_total{${mine}, status!="200", expected_response="true"}`,
  };
}

const counted = (figure) => ({ figure, by: ['case'], read: 'integral' });

/** What k6 saw: accepted and limited per second, answered so far, the limited share, k6's lateness. */
function k6SawRow({ mine, all, limited }) {
  return {
    title: 'What k6 saw',
    panels: [
      prom(
        'Accepted (200) per second, by case',
        'reqps',
        [
          {
            expr: perSecond(`k6_http_reqs_total{${mine}, status="200"}`),
            legend: '{{case}}',
            truth: counted('accepted'),
          },
        ],
        { description: STEP_NOTE },
      ),
      prom(
        "Limited (the policy's status) per second, by case",
        'reqps',
        [{ expr: orZero(perSecond(limited), perSecond(all)), legend: '{{case}}', truth: counted('limited') }],
        { description: STEP_NOTE },
      ),
      // What the results pages draw against the model's band over time (thresholds/plan.js caseCourse).
      prom('Answered so far, by case and status', 'none', [
        {
          expr: `sum by (case, status) (${all})`,
          legend: '{{case}} {{status}}',
          truth: { figure: 'requests', by: ['case', 'status'], read: 'last' },
        },
      ]),
      prom('Limited share of the answers (since the case started), by case', 'percentunit', [
        {
          expr: shareOf(limited, all),
          legend: '{{case}}',
          truth: { figure: 'limitedShare', by: ['case'], read: 'last' },
        },
      ]),
      // The timing noise the model allows is judged per case as max less min
      // (thresholds/models/limiter-replay.js JITTER_MS).
      prom("k6 late against the model's schedule (max so far), by case", 's', [
        {
          expr: `max by (case) (k6_lab_arrival_late_ms_max{${mine}})`,
          legend: '{{case}}',
          truth: { figure: 'lateMaxMs', by: ['case'], read: 'last' },
        },
      ]),
    ],
  };
}

/** What a proxy counted itself (its own counters, per case): accepted and limited per second. */
function proxyRow(p) {
  return {
    title: `What ${p.title} counted`,
    panels: [
      prom(
        `${p.title}: accepted per second, by case`,
        'reqps',
        [{ expr: p.accepted, legend: '{{case}}', truth: counted('proxyAccepted') }],
        { description: STEP_NOTE },
      ),
      prom(
        `${p.title}: limited per second, by case`,
        'reqps',
        [{ expr: p.limited, legend: '{{case}}', truth: counted('proxyLimited') }],
        { description: STEP_NOTE },
      ),
    ],
  };
}

/** The queue wait: the longest so far, and the model's expected longest beside the measured. */
function queueRow({ mine }) {
  return {
    title: 'Queue wait against the model',
    panels: [
      prom('Longest wait so far (k6), by case', 's', [
        {
          expr: `max by (case) (k6_http_req_duration_max{${mine}})`,
          legend: '{{case}}',
          truth: { figure: 'maxMs', by: ['case'], read: 'last' },
        },
      ]),
      prom(
        'Longest wait: model (expected) and measured, per case',
        's',
        [
          {
            expr: `max by (case) (max_over_time(k6_lab_expected_max_wait_ms{${mine}}[$__range])) / 1000`,
            legend: 'expected',
            truth: { figure: 'expectedMaxWaitMs', by: ['case'], read: 'last' },
          },
          {
            expr: `max by (case) (max_over_time(k6_http_req_duration_max{${mine}}[$__range]))`,
            legend: 'measured',
            truth: { figure: 'maxMs', by: ['case'], read: 'last' },
          },
        ],
        { table: true },
      ),
    ],
  };
}

/**
 * A limiter experiment's board: what k6 saw accepted and limited, what the proxies themselves
 * counted (`proxies`: {title, accepted, limited} PromQL, per case), and the longest wait
 * against the model's expected maximum (k6 writes the plan's figure as lab_expected_max_wait_ms).
 */
export function limiterBoard(experiment, description, proxies) {
  const queries = limiterQueries(experiment);
  return board({
    uid: `lab-${experiment}`,
    title: `lab / ${experiment}`,
    tags: ['limiter', experiment],
    description,
    variables: runVariables(PROM),
    rows: [k6SawRow(queries), ...proxies.map(proxyRow), queueRow(queries), judgedRow(experiment)],
  });
}

/**
 * What the lab judged for an experiment's cases (lab_outcome_*, written at the end of each run):
 * per case and measure the expected range, the measured value and the verdict, for a board's
 * last row. Each field is a query; the table merges them by case and measure.
 */
export function judgedRow(experiment) {
  const field = (name) =>
    `max by (case, measure) (last_over_time(lab_outcome_${name}{${run}, experiment="${experiment}"}[$__range]))`;
  return {
    title: 'What the lab judged',
    panels: [
      prom(
        'Expected range, measured and pass (1) per case and measure',
        'none',
        ['expected_low', 'expected_high', 'measured', 'pass'].map((f) => ({
          expr: field(f),
          legend: f.replace('_', ' '),
          truth: { figure: 'outcome', field: f, by: ['case', 'measure'], read: 'last' },
        })),
        { table: true, wide: true },
      ),
    ],
  };
}
