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
      new dashboard.QueryVariableBuilder('testid').label('run').datasource(source).query('SHOW TAG VALUES FROM "k6_http_reqs_total" WITH KEY = "testid"').refresh(dashboard.VariableRefresh.OnTimeRangeChanged).sort(dashboard.VariableSort.AlphabeticalDesc),
      new dashboard.QueryVariableBuilder('case').datasource(source).query('SHOW TAG VALUES FROM "k6_http_reqs_total" WITH KEY = "case" WHERE "testid" =~ /^$testid$/').refresh(dashboard.VariableRefresh.OnTimeRangeChanged).multi(true).includeAll(true).allValue('.*'),
    ];
  }
  if (source === INFLUX) {
    return [
      new dashboard.QueryVariableBuilder('testid').label('run').datasource(INFLUX).query('SHOW TAG VALUES FROM "http_reqs" WITH KEY = "testid"').refresh(dashboard.VariableRefresh.OnTimeRangeChanged).sort(dashboard.VariableSort.AlphabeticalDesc),
      new dashboard.QueryVariableBuilder('case').datasource(INFLUX).query('SHOW TAG VALUES FROM "http_reqs" WITH KEY = "case" WHERE "testid" =~ /^$testid$/').refresh(dashboard.VariableRefresh.OnTimeRangeChanged).multi(true).includeAll(true).allValue('.*'),
    ];
  }
  return [
    new dashboard.QueryVariableBuilder('testid').label('run').datasource(PROM).query('label_values(k6_http_reqs_total, testid)').refresh(dashboard.VariableRefresh.OnTimeRangeChanged).sort(dashboard.VariableSort.AlphabeticalDesc),
    new dashboard.QueryVariableBuilder('case').datasource(PROM).query('label_values(k6_http_reqs_total{testid=~"$testid"}, case)').refresh(dashboard.VariableRefresh.OnTimeRangeChanged).multi(true).includeAll(true).allValue('.*'),
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

/**
 * A panel: {title, unit, source (PROM or INFLUX), queries: [{expr, legend}] for PromQL or
 * [{query, alias}] for InfluxQL, table: true for a table of instant values}.
 */
export function panel({ title, description, unit, source = PROM, queries, table: asTable = false }) {
  const legend = new common.VizLegendOptionsBuilder().showLegend(true).displayMode(common.LegendDisplayMode.List).placement(common.LegendPlacement.Bottom);
  const p = asTable ? new table.PanelBuilder() : new timeseries.PanelBuilder().lineWidth(1).fillOpacity(10).legend(legend);
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
  const d = new dashboard.DashboardBuilder(title).uid(uid).tags(['lab', ...tags]).description(description)
    .time({ from: 'now-30m', to: 'now' }).refresh('10s').timezone('browser').readonly();
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
  if (extra.suite || extra.optional || cgroups) requires[title] = { suite: extra.suite, optional: extra.optional || [], cgroups: Boolean(cgroups) };
  return { builder: panel({ title, unit, queries, ...extra }), ...extra };
};

/** A count that may have no series yet (nothing limited, nothing dropped) shows as zeros per case. */
export const orZero = (expr, like) => `${expr} or (0 * ${like})`;

// nginx's lab counters (stacks/lib/lab_metrics.lua) and Envoy's per-case local rate limit stats.
export const nginxCounted = (service) => ({
  title: service,
  accepted: `sum by (case) (rate(lab_nginx_requests_total{service="${service}", case=~"$case", limit_req=~"PASSED|DELAYED"}[$__rate_interval]))`,
  limited: orZero(`sum by (case) (rate(lab_nginx_requests_total{service="${service}", case=~"$case", limit_req="REJECTED"}[$__rate_interval]))`, `sum by (case) (rate(lab_nginx_requests_total{service="${service}", case=~"$case", case!=""}[$__rate_interval]))`),
});
export const envoyCounted = (service) => ({
  title: service,
  accepted: `sum by (case) (label_replace(rate(envoy_http_local_rate_limit_ok{service="${service}", envoy_local_http_ratelimit_prefix=~"$case"}[$__rate_interval]), "case", "$1", "envoy_local_http_ratelimit_prefix", "(.*)"))`,
  limited: `sum by (case) (label_replace(rate(envoy_http_local_rate_limit_rate_limited{service="${service}", envoy_local_http_ratelimit_prefix=~"$case"}[$__rate_interval]), "case", "$1", "envoy_local_http_ratelimit_prefix", "(.*)"))`,
});

// The cgroups of capped services, under cAdvisor's names (cAdvisor in Docker, lab/stores/cgroup-exporter.mjs natively).
export const cgroupPanels = (match) => [
  prom('CPU % of one core, by service (cgroup)', 'percent', [{ expr: `sum by (name) (rate(container_cpu_usage_seconds_total{${match}}[$__rate_interval])) * 100`, legend: '{{name}}' }], { cgroups: true }),
  prom('Memory in use, by service (cgroup)', 'bytes', [{ expr: `max by (name) (container_memory_usage_bytes{${match}})`, legend: '{{name}}' }], { cgroups: true }),
  // Only capped levels have caps: the load suite's (smoke runs cdn uncapped).
  prom('Caps: CPU quota (% of one core) and memory limit, by service', 'none', [
    { expr: `max by (name) (container_spec_cpu_quota_cores{${match}}) * 100`, legend: '{{name}} CPU %' },
    { expr: `max by (name) (container_spec_memory_limit_bytes{${match}}) / 1048576`, legend: '{{name}} MiB' },
  ], { suite: 'load', cgroups: true }),
  prom('Per service over the range, like docker stats: CPU %, peak memory, PIDs, OOM kills, throttled s', 'none', [
    { expr: `sum by (name) (rate(container_cpu_usage_seconds_total{${match}}[$__range])) * 100`, legend: 'CPU % (mean)' },
    { expr: `max by (name) (max_over_time(container_memory_usage_bytes{${match}}[$__range]))`, legend: 'memory (peak)' },
    { expr: `max by (name) (max_over_time(container_processes{${match}}[$__range]))`, legend: 'PIDs (peak)' },
    { expr: `sum by (name) (max_over_time(container_oom_events_total{${match}}[$__range]))`, legend: 'OOM kills' },
    { expr: `sum by (name) (increase(container_cpu_cfs_throttled_seconds_total{${match}}[$__range]))`, legend: 'throttled (s)' },
  ], { table: true, cgroups: true }),
];

/**
 * A limiter experiment's board: what k6 saw accepted and limited, what the proxies themselves
 * counted (`proxies`: {title, accepted, limited} PromQL, per case), and the longest wait
 * against the model's expected maximum (k6 writes the plan's figure as lab_expected_max_wait_ms).
 */
export function limiterBoard(experiment, description, proxies) {
  return board({
    uid: `lab-${experiment}`, title: `lab / ${experiment}`, tags: ['limiter', experiment], description,
    variables: runVariables(PROM),
    rows: [
      { title: 'What k6 saw', panels: [
        prom('Accepted (200) per second, by case', 'reqps', [{ expr: `sum by (case) (rate(k6_http_reqs_total{${runCase}, experiment="${experiment}", status="200"}[$__rate_interval]))`, legend: '{{case}}' }]),
        prom('Limited per second, by case', 'reqps', [{ expr: orZero(`sum by (case) (rate(k6_http_reqs_total{${runCase}, experiment="${experiment}", status=~"4..|5.."}[$__rate_interval]))`, `sum by (case) (rate(k6_http_reqs_total{${runCase}, experiment="${experiment}"}[$__rate_interval]))`), legend: '{{case}}' }]),
        // What the results pages draw against the model's band over time (thresholds/plan.js caseCourse).
        prom('Answered so far, by case and status', 'none', [{ expr: `sum by (case, status) (k6_http_reqs_total{${runCase}, experiment="${experiment}"})`, legend: '{{case}} {{status}}' }]),
        // The timing noise the model allows is judged per case as max less min (thresholds/models/limiter-replay.js JITTER_MS).
        prom("k6 late against the model's schedule (max so far), by case", 's', [{ expr: `max by (case) (k6_lab_arrival_late_ms_max{${runCase}, experiment="${experiment}"})`, legend: '{{case}}' }]),
      ] },
      ...proxies.map((p) => ({ title: `What ${p.title} counted`, panels: [
        prom(`${p.title}: accepted per second, by case`, 'reqps', [{ expr: p.accepted, legend: '{{case}}' }]),
        prom(`${p.title}: limited per second, by case`, 'reqps', [{ expr: p.limited, legend: '{{case}}' }]),
      ] })),
      { title: 'Queue wait against the model', panels: [
        prom('Longest wait so far (k6), by case', 's', [{ expr: `max by (case) (k6_http_req_duration_max{${runCase}, experiment="${experiment}"})`, legend: '{{case}}' }]),
        prom('Longest wait: model (expected) and measured, per case', 's', [
          { expr: `max by (case) (max_over_time(k6_lab_expected_max_wait_ms{${runCase}, experiment="${experiment}"}[$__range])) / 1000`, legend: 'expected' },
          { expr: `max by (case) (max_over_time(k6_http_req_duration_max{${runCase}, experiment="${experiment}"}[$__range]))`, legend: 'measured' },
        ], { table: true }),
      ] },
      judgedRow(experiment),
    ],
  });
}

/**
 * What the lab judged for an experiment's cases (lab_outcome_*, written at the end of each run):
 * per case and measure the expected range, the measured value and the verdict, for a board's
 * last row. Each field is a query; the table merges them by case and measure.
 */
export function judgedRow(experiment) {
  const field = (name) => `max by (case, measure) (last_over_time(lab_outcome_${name}{${run}, experiment="${experiment}"}[$__range]))`;
  return { title: 'What the lab judged', panels: [
    prom('Expected range, measured and pass (1) per case and measure', 'none', [
      { expr: field('expected_low'), legend: 'expected low' },
      { expr: field('expected_high'), legend: 'expected high' },
      { expr: field('measured'), legend: 'measured' },
      { expr: field('pass'), legend: 'pass' },
    ], { table: true, wide: true }),
  ] };
}
