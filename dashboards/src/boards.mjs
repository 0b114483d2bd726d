/*
 * The lab's Grafana dashboards, as code: `just dashboards` writes each to dashboards/<uid>.json.
 * - k6-run: a run as k6 saw it (the lineage of the official k6 Prometheus dashboard);
 * - k6-run-influxdb: the same overview in InfluxQL;
 * - one per experiment, showing its policy at work (limiters: k6's view beside the proxy's
 *   own counters, and the longest wait against the model's; caching: answers by source, each
 *   hop's count and the application's queue; json-filter: delivered against offered, per
 *   server and step, and what the backend received);
 * - cdn: throughput per cap level, where the requests went, and each nginx's cgroup;
 * - resources: CPU, memory, threads and open files per stack service, over time and as a table,
 *   and the cgroups of capped services (CPU against the cap, memory against the limit, OOM).
 */
import { PROM, INFLUX, runVariables, panel, board } from './lib.mjs';

const run = 'testid=~"$testid"';
const runCase = `${run}, case=~"$case"`;
// What the panel check must know of a panel, by title (panelRequirements()): the suite whose
// runs alone fill it (the ramps' steps; skipped, and said so, for other runs), and the metrics
// a healthy run may never emit (k6 writes dropped iterations only when some drop).
const requires = {};
const prom = (title, unit, queries, extra = {}) => {
  if (extra.suite || extra.optional) requires[title] = { suite: extra.suite, optional: extra.optional || [] };
  return { builder: panel({ title, unit, queries, ...extra }), ...extra };
};

function k6Run() {
  return board({
    uid: 'lab-k6-run', title: 'lab / k6 run', tags: ['k6'],
    description: "A run as k6 saw it, per case: the testid is the run's folder name under results/.",
    variables: runVariables(PROM),
    rows: [
      { title: 'Load', panels: [
        prom('Virtual users', 'none', [{ expr: `sum(k6_vus{${run}})`, legend: 'VUs' }, { expr: `sum(k6_vus_max{${run}})`, legend: 'max VUs' }]),
        prom('Requests per second, by case', 'reqps', [{ expr: `sum by (case) (rate(k6_http_reqs_total{${runCase}}[$__rate_interval]))`, legend: '{{case}}' }]),
      ] },
      { title: 'Latency and failures', panels: [
        prom('p95 and p99 (since the case started), by case', 's', [
          { expr: `max by (case) (k6_http_req_duration_p95{${runCase}})`, legend: '{{case}} p95' },
          { expr: `max by (case) (k6_http_req_duration_p99{${runCase}})`, legend: '{{case}} p99' },
        ]),
        prom('Failed requests (share, since the case started), by case', 'percentunit', [{ expr: `max by (case) (k6_http_req_failed_rate{${runCase}})`, legend: '{{case}}' }]),
        prom('Dropped iterations per second, by case', 'none', [{ expr: orZero(`sum by (case) (rate(k6_dropped_iterations_total{${runCase}}[$__rate_interval]))`, `sum by (case) (rate(k6_iterations_total{${runCase}}[$__rate_interval]))`), legend: '{{case}}' }], { optional: ['k6_dropped_iterations_total'] }),
        prom('Requests by status', 'reqps', [{ expr: `sum by (status) (rate(k6_http_reqs_total{${runCase}}[$__rate_interval]))`, legend: '{{status}}' }]),
      ] },
    ],
  });
}

function k6RunInflux() {
  const where = `"testid" =~ /^$testid$/ AND "case" =~ /^$case$/ AND $timeFilter`;
  const influx = (title, unit, query, alias) => ({ builder: panel({ title, unit, source: INFLUX, queries: [{ query, alias }] }) });
  return board({
    uid: 'lab-k6-run-influxdb', title: 'lab / k6 run (InfluxDB)', tags: ['k6', 'influxdb'],
    description: 'The k6 run overview in InfluxQL, for teams on InfluxDB: k6 writes every sample to database k6.',
    variables: runVariables(INFLUX),
    rows: [
      { title: 'Load', panels: [
        influx('Virtual users', 'none', `SELECT max("value") FROM "vus" WHERE "testid" =~ /^$testid$/ AND $timeFilter GROUP BY time($__interval) fill(none)`, 'VUs'),
        influx('Requests per interval, by case', 'none', `SELECT count("value") FROM "http_reqs" WHERE ${where} GROUP BY time($__interval), "case" fill(none)`, '$tag_case'),
      ] },
      { title: 'Latency and failures', panels: [
        influx('p95 per interval, by case', 'ms', `SELECT percentile("value", 95) FROM "http_req_duration" WHERE ${where} GROUP BY time($__interval), "case" fill(none)`, '$tag_case'),
        influx('Failed requests (share per interval), by case', 'percentunit', `SELECT mean("value") FROM "http_req_failed" WHERE ${where} GROUP BY time($__interval), "case" fill(none)`, '$tag_case'),
        influx('Requests per interval, by status', 'none', `SELECT count("value") FROM "http_reqs" WHERE ${where} GROUP BY time($__interval), "status" fill(none)`, '$tag_status'),
      ] },
    ],
  });
}

/**
 * A limiter experiment's board: what k6 saw accepted and limited, what the proxies themselves
 * counted (`proxies`: {title, accepted, limited} PromQL, per case), and the longest wait
 * against the model's expected maximum (k6 writes the plan's figure as lab_expected_max_wait_ms).
 */
function limiterBoard(experiment, description, proxies) {
  return board({
    uid: `lab-${experiment}`, title: `lab / ${experiment}`, tags: ['limiter', experiment], description,
    variables: runVariables(PROM),
    rows: [
      { title: 'What k6 saw', panels: [
        prom('Accepted (200) per second, by case', 'reqps', [{ expr: `sum by (case) (rate(k6_http_reqs_total{${runCase}, experiment="${experiment}", status="200"}[$__rate_interval]))`, legend: '{{case}}' }]),
        prom('Limited per second, by case', 'reqps', [{ expr: orZero(`sum by (case) (rate(k6_http_reqs_total{${runCase}, experiment="${experiment}", status=~"4..|5.."}[$__rate_interval]))`, `sum by (case) (rate(k6_http_reqs_total{${runCase}, experiment="${experiment}"}[$__rate_interval]))`), legend: '{{case}}' }]),
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
    ],
  });
}

// nginx's lab counters (stacks/lib/lab_metrics.lua) and Envoy's per-case local rate limit stats.
const orZero = (expr, like) => `${expr} or (0 * ${like})`;

const nginxCounted = (service) => ({
  title: service,
  accepted: `sum by (case) (rate(lab_nginx_requests_total{service="${service}", case=~"$case", limit_req=~"PASSED|DELAYED"}[$__rate_interval]))`,
  limited: orZero(`sum by (case) (rate(lab_nginx_requests_total{service="${service}", case=~"$case", limit_req="REJECTED"}[$__rate_interval]))`, `sum by (case) (rate(lab_nginx_requests_total{service="${service}", case=~"$case", case!=""}[$__rate_interval]))`),
});
const envoyCounted = (service) => ({
  title: service,
  accepted: `sum by (case) (label_replace(rate(envoy_http_local_rate_limit_ok{service="${service}", envoy_local_http_ratelimit_prefix=~"$case"}[$__rate_interval]), "case", "$1", "envoy_local_http_ratelimit_prefix", "(.*)"))`,
  limited: `sum by (case) (label_replace(rate(envoy_http_local_rate_limit_rate_limited{service="${service}", envoy_local_http_ratelimit_prefix=~"$case"}[$__rate_interval]), "case", "$1", "envoy_local_http_ratelimit_prefix", "(.*)"))`,
});

function jsonFilter() {
  const ramp = `${run}, case=~"$case", case=~".*-ramp"`;
  return board({
    uid: 'lab-json-filter', title: 'lab / json-filter', tags: ['capacity', 'json-filter'],
    description: 'Each server ramped through held arrival rates: what k6 offered and what got through, the p99 of each step, and what the backend received.',
    variables: runVariables(PROM),
    rows: [
      { title: 'Ramps: offered and delivered', panels: [
        prom('Delivered (answered) per second, by server', 'reqps', [{ expr: `sum by (case) (rate(k6_http_reqs_total{${ramp}}[$__rate_interval]))`, legend: '{{case}}' }], { suite: 'breakpoint' }),
        prom('Offered per second (started + dropped iterations), by server', 'reqps', [{ expr: `(sum by (case) (rate(k6_iterations_total{${ramp}}[$__rate_interval])) + sum by (case) (rate(k6_dropped_iterations_total{${ramp}}[$__rate_interval]))) or sum by (case) (rate(k6_iterations_total{${ramp}}[$__rate_interval]))`, legend: '{{case}}' }], { suite: 'breakpoint', optional: ['k6_dropped_iterations_total'] }),
      ] },
      { title: 'Per step and behind the filters', panels: [
        prom('p99 of each held step, by server and rate', 's', [{ expr: `max by (__name__) ({__name__=~"k6_.*_ramp_[0-9]+_ms_p99", ${run}})`, legend: '{{__name__}}' }], { suite: 'breakpoint' }),
        prom('What the backend received per second, by case', 'reqps', [{ expr: 'sum by (location) (rate(lab_nginx_requests_total{service="json-filter-backend", location=~"/filter/.*"}[$__rate_interval]))', legend: '{{location}}' }]),
        prom("Filters' own outcomes per second", 'reqps', [{ expr: 'sum by (service, outcome) (rate(json_filter_requests_total[$__rate_interval]))', legend: '{{service}} {{outcome}}' }]),
      ] },
    ],
  });
}

function caching() {
  const mine = `${runCase}, experiment="caching"`;
  return board({
    uid: 'lab-caching', title: 'lab / caching', tags: ['closed-loop', 'caching'],
    description: 'Users looping through two limiters to the application (seed 000): answers as JMeter counted them (client-cache hits included), what each hop counted, and the application\'s queue.',
    variables: runVariables(PROM),
    rows: [
      { title: 'Answers, as the seed counted them', panels: [
        // Counts over the range, as JMeter's summary report gives them: k6 pushes a counter only
        // when it grows, and a case that ends within a second leaves one sample, no rate.
        prom('Answers by case and source (client cache, server cache, upstream, app)', 'none', [{ expr: `sum by (case, source) (max_over_time(k6_lab_responses_total{${mine}}[$__range]))`, legend: '{{case}} {{source}}' }], { table: true }),
        prom('Answers by case and status (200, 503)', 'none', [{ expr: `sum by (case, status) (max_over_time(k6_lab_responses_total{${mine}}[$__range]))`, legend: '{{case}} {{status}}' }], { table: true }),
        prom('Mean and max latency (since the case started), by case', 's', [
          { expr: `max by (case) (k6_lab_response_time_avg{${mine}})`, legend: '{{case}} mean' },
          { expr: `max by (case) (k6_lab_response_time_max{${mine}})`, legend: '{{case}} max' },
        ]),
      ] },
      { title: 'Along the chain', panels: [
        prom('Front and back nginx: requests per second, by location and limit_req decision', 'reqps', [{ expr: 'sum by (location, limit_req) (rate(lab_nginx_requests_total{service="caching-nginx", case=~"$case"}[$__rate_interval]))', legend: '{{location}} {{limit_req}}' }]),
        prom('Application: served per second, by case and resource', 'reqps', [{ expr: 'sum by (case, resource) (rate(lab_app_requests_total{service="caching-app", case=~"$case", status="200"}[$__rate_interval]))', legend: '{{case}} {{resource}}' }]),
        prom("Application: busy workers and queue", 'none', [
          { expr: 'max(lab_app_busy_workers{service="caching-app"})', legend: 'busy workers' },
          { expr: 'max(lab_app_queue_length{service="caching-app"})', legend: 'queued' },
        ]),
      ] },
    ],
  });
}

// The cgroups of capped services, under cAdvisor's names (cAdvisor in Docker, lab/stores/cgroup-exporter.mjs natively).
const cgroupPanels = (match) => [
  prom('CPU % of one core, by service (cgroup)', 'percent', [{ expr: `sum by (name) (rate(container_cpu_usage_seconds_total{${match}}[$__rate_interval])) * 100`, legend: '{{name}}' }]),
  prom('Memory in use, by service (cgroup)', 'bytes', [{ expr: `max by (name) (container_memory_usage_bytes{${match}})`, legend: '{{name}}' }]),
  // Only capped levels have caps: the load suite's (smoke runs cdn uncapped).
  prom('Caps: CPU quota (% of one core) and memory limit, by service', 'none', [
    { expr: `max by (name) (container_spec_cpu_quota_cores{${match}}) * 100`, legend: '{{name}} CPU %' },
    { expr: `max by (name) (container_spec_memory_limit_bytes{${match}}) / 1048576`, legend: '{{name}} MiB' },
  ], { suite: 'load' }),
  prom('Per service over the range, like docker stats: CPU %, peak memory, PIDs, OOM kills, throttled s', 'none', [
    { expr: `sum by (name) (rate(container_cpu_usage_seconds_total{${match}}[$__range])) * 100`, legend: 'CPU % (mean)' },
    { expr: `max by (name) (max_over_time(container_memory_usage_bytes{${match}}[$__range]))`, legend: 'memory (peak)' },
    { expr: `max by (name) (max_over_time(container_processes{${match}}[$__range]))`, legend: 'PIDs (peak)' },
    { expr: `sum by (name) (max_over_time(container_oom_events_total{${match}}[$__range]))`, legend: 'OOM kills' },
    { expr: `sum by (name) (increase(container_cpu_cfs_throttled_seconds_total{${match}}[$__range]))`, legend: 'throttled (s)' },
  ], { table: true }),
];

function cdn() {
  const mine = `${runCase}, experiment="cdn"`;
  const chain = (role) => `service=~"cdn-${role}.*", case=~"$case", case!=""`;
  return board({
    uid: 'lab-cdn', title: 'lab / cdn', tags: ['capped', 'cdn'],
    description: 'A load balancer, 4 edge caches and 2 origins, each nginx in a cgroup with its cap level (seed 001): throughput per level, where the requests went, and what each nginx used of its cap.',
    variables: runVariables(PROM),
    rows: [
      { title: 'Per cap level', panels: [
        prom('Throughput per second, by cap level', 'reqps', [{ expr: `sum by (case) (rate(k6_http_reqs_total{${mine}}[$__rate_interval]))`, legend: '{{case}}' }]),
        prom('p99 (since the level started), by cap level', 's', [{ expr: `max by (case) (k6_http_req_duration_p99{${mine}})`, legend: '{{case}}' }]),
        prom("Answers by the edge's cache status, by cap level", 'none', [{ expr: `sum by (case, cache) (max_over_time(k6_lab_cdn_answers_total{${mine}}[$__range]))`, legend: '{{case}} {{cache}}' }], { table: true }),
      ] },
      { title: 'Along the chain, as each nginx counted', panels: [
        prom('Load balancer and edges: requests per second, by service', 'reqps', [{ expr: `sum by (service) (rate(lab_nginx_requests_total{service=~"cdn-(lb|edge.*)", case=~"$case", case!=""}[$__rate_interval]))`, legend: '{{service}}' }]),
        prom('Origins: pages served (the edges\' refills), by service', 'none', [{ expr: `sum by (service) (max_over_time(lab_nginx_requests_total{${chain('origin')}}[$__range]))`, legend: '{{service}}' }], { table: true }),
      ] },
      { title: 'Resources (cgroups)', panels: cgroupPanels('name=~"cdn-.*"') },
    ],
  });
}

function resources() {
  const cpu = 'sum by (groupname) (rate(namedprocess_namegroup_cpu_seconds_total[$__rate_interval])) * 100';
  const mem = 'sum by (groupname) (namedprocess_namegroup_memory_bytes{memtype="resident"})';
  return board({
    uid: 'lab-resources', title: 'lab / resources', tags: ['resources'],
    description: 'CPU, memory, threads and open files of every stack process, grouped by service (process-exporter), over time and as a table like `docker stats`.',
    variables: [],
    rows: [
      { title: 'Over time', panels: [
        prom('CPU % (of one core), by service', 'percent', [{ expr: cpu, legend: '{{groupname}}' }]),
        prom('Resident memory, by service', 'bytes', [{ expr: mem, legend: '{{groupname}}' }]),
        prom('Threads, by service', 'none', [{ expr: 'sum by (groupname) (namedprocess_namegroup_num_threads)', legend: '{{groupname}}' }]),
        prom('Open files, by service', 'none', [{ expr: 'sum by (groupname) (namedprocess_namegroup_open_filedesc)', legend: '{{groupname}}' }]),
      ] },
      // Over the dashboard's range, not at its end: the stack's processes are gone when a run
      // ends, and an instant gauge then has no series (a CI run's panel check found it empty).
      { title: 'Over the range, like docker stats', panels: [
        prom('Per service: mean CPU %, peak memory, processes, threads, open files', 'none', [
          { expr: 'sum by (groupname) (rate(namedprocess_namegroup_cpu_seconds_total[$__range])) * 100', legend: 'CPU % (mean)' },
          { expr: 'sum by (groupname) (max_over_time(namedprocess_namegroup_memory_bytes{memtype="resident"}[$__range]))', legend: 'memory (peak)' },
          { expr: 'sum by (groupname) (max_over_time(namedprocess_namegroup_num_procs[$__range]))', legend: 'processes (peak)' },
          { expr: 'sum by (groupname) (max_over_time(namedprocess_namegroup_num_threads[$__range]))', legend: 'threads (peak)' },
          { expr: 'sum by (groupname) (max_over_time(namedprocess_namegroup_open_filedesc[$__range]))', legend: 'open files (peak)' },
        ], { table: true }),
      ] },
      { title: 'Capped services (their cgroups)', panels: cgroupPanels('name!=""') },
    ],
  });
}

/** A count that may have no series yet (nothing limited, nothing dropped) shows as zeros per case. */
export const boards = () => [
  k6Run(),
  k6RunInflux(),
  limiterBoard('burst', 'nginx limit_req at 3 r/s, one queue size per location (seed 003).', [nginxCounted('burst-nginx')]),
  limiterBoard('envoy-vs-nginx', "Envoy's token bucket beside nginx's leaky bucket at the same long-run rate (seed 002).",
    [envoyCounted('envoy-vs-nginx-envoy'), nginxCounted('envoy-vs-nginx-nginx')]),
  caching(),
  cdn(),
  jsonFilter(),
  resources(),
].map((b) => b.build());

/** {panel title: suite} for the panels only that suite's runs fill. */
export function panelRequirements() {
  boards();
  return { ...requires };
}
