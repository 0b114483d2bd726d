#!/usr/bin/env node
/*
 * The lab's cgroups (one per capped service, lab/stack/cgroups.mjs) in Prometheus text format, under
 * cAdvisor's metric names and its `name` label, so one dashboard reads cAdvisor in Docker mode
 * and this natively (no cAdvisor package on these machines).
 */
import http from 'node:http';
import { labCgroups } from '../stack/cgroups.mjs';

const METRICS = [
  ['container_cpu_usage_seconds_total', 'counter', 'CPU time used by the cgroup (s).', (s) => s.cpuS],
  [
    'container_cpu_cfs_throttled_seconds_total',
    'counter',
    'Time the cgroup was throttled by its CPU quota (s).',
    (s) => s.throttledS,
  ],
  ['container_spec_cpu_quota_cores', 'gauge', 'CPU quota in cores (absent: none).', (s) => s.cpuQuota],
  ['container_memory_usage_bytes', 'gauge', 'Memory in use, page cache included (B).', (s) => s.memBytes],
  [
    'container_memory_max_usage_bytes',
    'gauge',
    'Most memory in use since the cgroup was made (B).',
    (s) => s.memMaxBytes,
  ],
  ['container_spec_memory_limit_bytes', 'gauge', 'Memory limit (B; absent: none).', (s) => s.memLimitBytes],
  ['container_oom_events_total', 'counter', 'Processes the OOM killer ended in the cgroup.', (s) => s.oomKills],
  ['container_processes', 'gauge', 'Processes and threads in the cgroup.', (s) => s.pids],
];

const escape = (v) => String(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

/** The exposition text for the cgroups given ({name, service, stats()}). */
export function exposition(cgroups) {
  const read = cgroups
    .map((g) => {
      try {
        return { g, s: g.stats() };
      } catch {
        return null; // removed while being read
      }
    })
    .filter(Boolean);
  const lines = [];
  for (const [metric, type, help, pick] of METRICS) {
    lines.push(`# HELP ${metric} ${help}`, `# TYPE ${metric} ${type}`);
    for (const { g, s } of read) {
      const v = pick(s);
      if (v !== null && v !== undefined && Number.isFinite(v))
        lines.push(`${metric}{name="${escape(g.service)}",id="/${escape(g.name)}"} ${v}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/**
 * `node lab/stores/cgroup-exporter.mjs --port 9257`: serves GET /metrics, reading the cgroups at
 * every scrape, so a cgroup that is gone is simply not listed.
 */
function main(argv) {
  const i = argv.indexOf('--port');
  const port = Number(argv[i + 1]);
  if (i < 0 || !Number.isInteger(port) || port < 1 || port > 65535) {
    console.error('usage: cgroup-exporter.mjs --port <1..65535>');
    process.exit(2);
  }
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET') {
      res.writeHead(405, { allow: 'GET' }).end('GET only\n');
      return;
    }
    if (req.url !== '/metrics') {
      res.writeHead(404).end('try /metrics\n');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(exposition(labCgroups()));
  });
  server.on('error', (e) => {
    console.error(e.code === 'EADDRINUSE' ? `port ${port} is in use` : e.message);
    process.exit(1);
  });
  server.listen(port, '127.0.0.1');
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => server.close(() => process.exit(0)));
}

if (import.meta.url === `file://${process.argv[1]}`) main(process.argv.slice(2));
