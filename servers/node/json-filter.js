#!/usr/bin/env node
/*
 * The JSON filter of seed 004 on raw `net` sockets: each POSTed JSON document is either relayed
 * to the backend (and the backend's answer relayed back) or answered 204 at once, as
 * lib/filter-rule.js decides. Keep-alive and pipelining (answers go out in request order),
 * Content-Length bodies only, a keep-alive pool to the backend, and cluster mode.
 *
 * It survives its clients (issue 17): at most --max-pipeline requests in flight per connection;
 * no reading or dispatching while a connection's answers wait to be written (a client that does
 * not read cannot make it buffer without bound), and a client that takes nothing for
 * --send-timeout-ms is cut off; at most --max-connections connections per process (more: 503 and
 * closed); the backend pool's waiting list bounded (--pool-queue) and with a deadline
 * (--pool-wait-ms), both answered 503.
 */
import net from 'node:net';
import cluster from 'node:cluster';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { response } from './lib/http1.js';
import { Connection } from './lib/connection.js';
import { BackendPool } from './lib/backend-pool.js';
import { shouldRelay } from './lib/filter-rule.js';
import { serverMetrics, gatherForWorkers } from './lib/metrics.js';

/*
 * Usage:
 *   json-filter.js --port 21001 --backend 127.0.0.1:21000 [--workers N|auto] [--max-body 1048576]
 *                  [--max-head 8192] [--header-timeout-ms 5000] [--idle-timeout-ms 60000]
 *                  [--backend-timeout-ms 1000] [--pool-size 512] [--pool-queue 8192]
 *                  [--pool-wait-ms 5000] [--max-pipeline 16] [--max-connections 8192]
 *                  [--send-timeout-ms 60000] [--burn-us 0] [--fault none]
 * --name labels the metrics (and lets process-exporter find the processes by their command line).
 * --max-connections is per process (each cluster worker has its own): 8192 is above the lab's
 * largest closed run (5000 connections) and, with the pool, within its 20000 open files.
 * --pool-wait-ms plus --backend-timeout-ms stays under the 10 s a k6 client waits.
 * --burn-us: CPU every POSTed document burns on purpose, spinning on the process's own CPU
 * clock: a slowdown made to order, which the breakpoint suite's efficiency floors must catch.
 * --fault: a filter broken to order, which the suites' counts must catch: `relay-all` relays
 * every document, whatever its rule says; `error-every-20` answers 500 to every 20th document
 * (counted per process). `none` by default.
 */
const { values: o } = parseArgs({
  options: {
    port: { type: 'string' },
    host: { type: 'string', default: '127.0.0.1' },
    backend: { type: 'string' },
    workers: { type: 'string', default: '0' },
    'max-body': { type: 'string', default: String(1 << 20) },
    'max-head': { type: 'string', default: '8192' },
    'header-timeout-ms': { type: 'string', default: '5000' },
    'idle-timeout-ms': { type: 'string', default: '60000' },
    'backend-timeout-ms': { type: 'string', default: '1000' },
    'pool-size': { type: 'string', default: '512' },
    'pool-queue': { type: 'string', default: '8192' },
    'pool-wait-ms': { type: 'string', default: '5000' },
    'max-pipeline': { type: 'string', default: '16' },
    'max-connections': { type: 'string', default: '8192' },
    'send-timeout-ms': { type: 'string', default: '60000' },
    'burn-us': { type: 'string', default: '0' },
    fault: { type: 'string', default: 'none' },
    name: { type: 'string', default: 'json-filter' },
  },
});

function num(name, min) {
  const v = Number(o[name]);
  if (!Number.isInteger(v) || v < min) {
    console.error(`json-filter: --${name} must be a whole number >= ${min}, got '${o[name]}'`);
    process.exit(2);
  }
  return v;
}
const port = num('port', 1);
const [bhost, bport] = (o.backend || '').split(':');
if (!bhost || !Number(bport)) {
  console.error(`json-filter: --backend must be host:port, got '${o.backend ?? ''}'`);
  process.exit(2);
}
const workers = o.workers === 'auto' ? os.availableParallelism() : num('workers', 0);
const limits = { maxBodyBytes: num('max-body', 1), maxHeadBytes: num('max-head', 256) };
const headerTimeoutMs = num('header-timeout-ms', 1);
const idleTimeoutMs = num('idle-timeout-ms', 1);
const maxPipeline = num('max-pipeline', 1);
const maxConnections = num('max-connections', 1);
const sendTimeoutMs = num('send-timeout-ms', 1);
const burnUs = num('burn-us', 0);
if (burnUs > 1_000_000) {
  console.error(`json-filter: --burn-us is at most 1000000 (a second of CPU per document), got '${o['burn-us']}'`);
  process.exit(2);
}
const FAULTS = ['none', 'relay-all', 'error-every-20'];
if (!FAULTS.includes(o.fault)) {
  console.error(`json-filter: --fault is one of ${FAULTS.join(', ')}, got '${o.fault}'`);
  process.exit(2);
}
let documents = 0; // POSTed documents parsed by this process, for --fault error-every-20
const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
/** Spins until the process has used `burnUs` more microseconds of CPU. */
function burn() {
  const until = cpuUs() + burnUs;
  while (cpuUs() < until);
}

/**
 * This process's counts, as its /stats JSON and as Prometheus counters, moving together: `stats`,
 * `counted[outcome]()` per request outcome, and the connections' counters.
 */
function filterCounters(metrics) {
  const stats = {
    requests: 0,
    relayed: 0,
    filtered: 0,
    rejected: 0,
    backendErrors: 0,
    faults: 0,
    connections: 0,
    refused: 0,
  };
  const outcomes = metrics.counter(
    'json_filter_requests_total',
    'Requests by outcome: relayed, filtered, rejected, backend_error, fault (--fault), served (GET)',
    ['outcome'],
  );
  const connections = metrics.counter('json_filter_connections_total', 'Client connections accepted');
  const refusedConnections = metrics.counter(
    'json_filter_connections_refused_total',
    'Client connections refused (503) over --max-connections',
  );
  // Both counts, the worker's own JSON and the server's Prometheus counters, move together. The
  // counter's child per outcome is looked up once (inc with a labels object hashed it per request).
  const STATS_KEY = {
    rejected: 'rejected',
    filtered: 'filtered',
    relayed: 'relayed',
    backend_error: 'backendErrors',
    fault: 'faults',
  };
  const counted = Object.fromEntries(
    Object.entries(STATS_KEY).map(([outcome, key]) => {
      const child = outcomes.labels(outcome);
      return [
        outcome,
        () => {
          stats[key] += 1;
          child.inc();
        },
      ];
    }),
  );
  return { stats, counted, connections, refusedConnections };
}

/**
 * GET /healthz answers 200; GET /stats the worker's counters as JSON; GET /metrics the whole
 * server's (every worker's) in Prometheus text format. False for any other request.
 */
function answerGet({ metrics, pool, stats }, msg, slot, reply) {
  if (msg.method !== 'GET') return false;
  if (msg.target === '/healthz') reply(slot, response(200, { body: 'ok\n' }));
  else if (msg.target === '/metrics') {
    metrics
      .text()
      .then((text) => reply(slot, response(200, { body: text, headers: { 'content-type': metrics.contentType } })));
  } else if (msg.target === '/stats') {
    const body = JSON.stringify({ pid: process.pid, pool: pool.open, ...stats });
    reply(slot, response(200, { body, headers: { 'content-type': 'application/json' } }));
  } else return false;
  return true;
}

/** The backend's answer relayed, or the pool's error as the status it names (502 by default). */
function relay({ pool, counted }, msg, slot, reply) {
  pool.send('POST', msg.target, msg.body, (e, r) => {
    if (e) {
      counted.backend_error();
      return reply(slot, response(e.status || 502, { body: `${e.message}\n` }));
    }
    counted.relayed();
    const headers = r.headers['content-type'] ? { 'content-type': r.headers['content-type'] } : undefined;
    return reply(slot, response(r.status, { body: r.body, headers }));
  });
}

/**
 * One request: `reply(slot, bytes, close)` gets its answer, at once or when the backend
 * answers (no Promise per request: the hot path is callbacks). A POSTed document is parsed,
 * burns --burn-us, meets --fault, and is filtered (204) or relayed as the rule says.
 */
function handle(ctx, msg, slot, reply) {
  const { stats, counted } = ctx;
  stats.requests += 1;
  if (answerGet(ctx, msg, slot, reply)) return;
  if (msg.method !== 'POST') {
    counted.rejected();
    return reply(slot, response(405, { body: 'POST a JSON document\n', headers: { allow: 'POST' } }));
  }
  let doc;
  try {
    doc = JSON.parse(msg.body.toString('utf8'));
  } catch {
    counted.rejected();
    return reply(slot, response(400, { body: 'invalid JSON\n' }));
  }
  if (burnUs) burn();
  documents += 1;
  if (o.fault === 'error-every-20' && documents % 20 === 0) {
    counted.fault();
    return reply(slot, response(500, { body: 'failed on purpose (--fault error-every-20)\n' }));
  }
  if (o.fault !== 'relay-all' && !shouldRelay(doc)) {
    counted.filtered();
    return reply(slot, response(204));
  }
  return relay(ctx, msg, slot, reply);
}

// Over the connection cap, before any request is read: the answer, and the connection closed.
const TOO_MANY = response(503, { body: 'too many connections\n', close: true });

/**
 * A connection over --max-connections: 503 and our side closed at once. What the client sends
 * meanwhile is read and dropped for at most a second, so that the close does not turn into a
 * reset that could destroy the answer before the client reads it.
 */
function refuse({ stats, refusedConnections }, socket) {
  stats.refused += 1;
  refusedConnections.inc();
  socket.on('error', () => socket.destroy());
  socket.resume();
  socket.end(TOO_MANY);
  setTimeout(() => socket.destroy(), 1000).unref();
}

/**
 * This process's server: the backend pool, the counters, the listening socket and its connections, up
 * to --max-connections.
 */
function serve() {
  const pool = new BackendPool({
    host: bhost,
    port: Number(bport),
    max: num('pool-size', 1),
    timeoutMs: num('backend-timeout-ms', 1),
    maxWaiting: num('pool-queue', 0),
    waitTimeoutMs: num('pool-wait-ms', 1),
  });
  const metrics = serverMetrics();
  const ctx = { pool, metrics, ...filterCounters(metrics) };
  const handleOne = (msg, slot, reply) => handle(ctx, msg, slot, reply);
  const settings = {
    limits,
    maxPipeline,
    headerTimeoutMs,
    idleTimeoutMs,
    sendTimeoutMs,
    handle: handleOne,
    rejected: ctx.counted.rejected,
  };
  let open = 0; // connections being served by this process
  const server = net.createServer((socket) => {
    ctx.stats.connections += 1;
    ctx.connections.inc();
    if (open >= maxConnections) return refuse(ctx, socket);
    open += 1;
    socket.on('close', () => {
      open -= 1;
    });
    new Connection(socket, settings);
  });
  server.keepAliveTimeout = 0;
  server.listen(port, o.host, () => {
    if (!cluster.isWorker) console.log(`json-filter ${process.pid} on ${o.host}:${port} -> ${o.backend}`);
  });
  for (const sig of ['SIGTERM', 'SIGINT']) {
    process.on(sig, () => {
      server.close();
      pool.close();
      process.exit(0);
    });
  }
}

if (workers > 0 && cluster.isPrimary) {
  // Cluster mode: the workers share the listening socket; the primary only supervises.
  for (let i = 0; i < workers; i += 1) cluster.fork();
  let stopping = false;
  cluster.on('exit', (w, code, signal) => {
    if (!stopping) console.error(`json-filter: worker ${w.process.pid} exited (${signal || code})`);
  });
  for (const sig of ['SIGTERM', 'SIGINT']) {
    process.on(sig, () => {
      stopping = true;
      for (const w of Object.values(cluster.workers)) w.process.kill('SIGTERM');
      setTimeout(() => process.exit(0), 200).unref();
      cluster.disconnect(() => process.exit(0));
    });
  }
  gatherForWorkers();
  console.log(`json-filter primary ${process.pid}: ${workers} workers on ${o.host}:${port} -> ${o.backend}`);
} else {
  serve();
}
