/*
 * Envoy behind the proxy interface (index.mjs): a bootstrap's local rate limits read from its
 * YAML or JSON (../envoy/), modelled as token buckets (thresholds/models/local-rate-limit.js),
 * run with the lab's access log, its rate-limit stats counting per bucket, not per case.
 */
import { basename } from 'node:path';
import { envoyPolicy } from '../envoy/read.mjs';
import { envoyTargets } from '../envoy/targets.mjs';
import { ENVOY_HEAD, envoyRows } from '../envoy/table.mjs';
import { renderEnvoy } from '../envoy/render.mjs';
import { placePorts } from '../ports.mjs';
import { fieldsOf } from './seen-line.mjs';
import { envoyFromLimit } from '../envoy/from-limit.mjs';

const places = (policy) => [...new Set(policy.routes.map((r) => r.place))];

export default {
  name: 'envoy',
  title: 'Envoy',
  // A bootstrap has static_resources (YAML or JSON).
  claims: (text) => /(^|\n)\s*"?static_resources"?\s*:/.test(text),
  tool: (tools) => tools.envoy,
  read: (file, tools) => envoyPolicy(file, tools),
  table: (policy) => [ENVOY_HEAD, envoyRows(policy)],
  places,
  scheme: () => 'http',
  targets: envoyTargets,
  changes: () => [],
  ownFiles: (policy) => [basename(policy.file)],
  service: {
    file: 'envoy.yaml',
    // The image docker-compose.yml runs the seeds' Envoy in.
    image: 'envoyproxy/envoy:v1.40.0',
    render: (policy, view, tools, backend, placed) =>
      renderEnvoy(policy, {
        ports: placePorts(places(policy)),
        adminPort: view.self.own,
        backend,
        prefix: view.prefix,
        placed,
      }),
    // Envoy as the lab installs it (lab/install.sh, on the runner's PATH), flushing its access log
    // every 100 ms: the sightings.
    command: [
      'envoy',
      '-c',
      '{{config.conf}}',
      '--concurrency',
      '1',
      '--disable-hot-restart',
      '--log-level',
      'warn',
      '--file-flush-interval-msec',
      '100',
    ],
    validate: ['envoy', '--mode', 'validate', '-c', '{{config.conf}}', '--log-level', 'error'],
    ready: 'http://127.0.0.1:{{self.own}}/ready',
    metrics: { port: 'own', path: '/stats/prometheus' },
    // Its count per case: the lab's access log (../envoy/render.mjs), its stats being per bucket.
    countsLog: 'seen.log',
  },
  /** One of its stats' samples as a case's count: a seed's bucket per case, named by its stat prefix. */
  countOf: ({ name, labels }, { limited }) => {
    const kase = labels.envoy_local_http_ratelimit_prefix;
    if (!(kase in limited)) return null;
    if (name === 'envoy_http_local_rate_limit_ok') return { case: kase, status: '200' };
    if (name === 'envoy_http_local_rate_limit_rate_limited') return { case: kase, status: limited[kase] };
    return null;
  },
  /** A line of its seen.log (`case start status`): the request's start on its wall clock, in µs. */
  seen: (line) => {
    const f = fieldsOf(line);
    return f.length === 3 ? { case: f[0], ms: Number(f[1]) * 1000, clock: 'wall', status: f[2] } : null;
  },
  // The clock resolution its sightings are read at, ms.
  resolutionMs: 0.001,
  // What it lets through at once: its bucket's tokens.
  atOnce: (t) => t.burst,
  // A team's limit (R r/s, B at once) written as this proxy's closest config (compare-proxies).
  fromLimit: envoyFromLimit,
};
