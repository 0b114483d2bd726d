#!/usr/bin/env node
/*
 * The JSON filter of seed 004 on raw `net` sockets: each POSTed JSON document is either relayed
 * to the backend (and the backend's answer relayed back) or answered 204 at once, as
 * lib/filter-rule.js decides. Keep-alive and pipelining (answers go out in request order),
 * Content-Length bodies only, a keep-alive pool to the backend, and cluster mode.
 */
import net from 'node:net';
import cluster from 'node:cluster';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { Http1Parser, HttpError, response } from './lib/http1.js';
import { BackendPool } from './lib/backend-pool.js';
import { shouldRelay } from './lib/filter-rule.js';
import { serverMetrics, gatherForWorkers } from './lib/metrics.js';

/*
 * Usage:
 *   json-filter.js --port 21001 --backend 127.0.0.1:21000 [--workers N|auto] [--max-body 1048576]
 *                  [--max-head 8192] [--header-timeout-ms 5000] [--idle-timeout-ms 60000]
 *                  [--backend-timeout-ms 1000] [--pool-size 512]
 * --name labels the metrics (and lets process-exporter find the processes by their command line).
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

function serve() {
  const pool = new BackendPool({ host: bhost, port: Number(bport), max: num('pool-size', 1), timeoutMs: num('backend-timeout-ms', 1) });
  const stats = { requests: 0, relayed: 0, filtered: 0, rejected: 0, backendErrors: 0, connections: 0 };
  const metrics = serverMetrics();
  const outcomes = metrics.counter('json_filter_requests_total', 'Requests by outcome: relayed, filtered, rejected, backend_error, served (GET)', ['outcome']);
  const connections = metrics.counter('json_filter_connections_total', 'Client connections accepted');
  // Both counts, the worker's own JSON and the server's Prometheus counters, move together.
  const count = (key, outcome) => {
    stats[key] += 1;
    outcomes.inc({ outcome });
  };

  /**
   * One request -> a Promise of the response bytes (and whether to close after it). GET /healthz
   * answers 200; GET /stats answers the worker's counters as JSON; GET /metrics the whole
   * server's (every worker's) in Prometheus text format.
   */
  async function handle(msg) {
    stats.requests += 1;
    if (msg.method === 'GET' && msg.target === '/healthz') return { bytes: response(200, { body: 'ok\n' }) };
    if (msg.method === 'GET' && msg.target === '/metrics') {
      return { bytes: response(200, { body: await metrics.text(), headers: { 'content-type': metrics.contentType } }) };
    }
    if (msg.method === 'GET' && msg.target === '/stats') {
      return { bytes: response(200, { body: JSON.stringify({ pid: process.pid, pool: pool.open, ...stats }), headers: { 'content-type': 'application/json' } }) };
    }
    if (msg.method !== 'POST') {
      count('rejected', 'rejected');
      return { bytes: response(405, { body: 'POST a JSON document\n', headers: { allow: 'POST' } }) };
    }
    let doc;
    try {
      doc = JSON.parse(msg.body.toString('utf8'));
    } catch {
      count('rejected', 'rejected');
      return { bytes: response(400, { body: 'invalid JSON\n' }) };
    }
    if (!shouldRelay(doc)) {
      count('filtered', 'filtered');
      return { bytes: response(204) };
    }
    try {
      const r = await pool.request('POST', msg.target, msg.body);
      count('relayed', 'relayed');
      const headers = r.headers['content-type'] ? { 'content-type': r.headers['content-type'] } : undefined;
      return { bytes: response(r.status, { body: r.body, headers }) };
    } catch (e) {
      count('backendErrors', 'backend_error');
      return { bytes: response(e.status || 502, { body: `${e.message}\n` }) };
    }
  }

  const server = net.createServer((socket) => {
    stats.connections += 1;
    connections.inc();
    socket.setNoDelay(true);
    const parser = new Http1Parser(limits);
    const queue = []; // pending answers, in request order: {bytes, close} once ready
    let closing = false;
    let headerTimer = null;

    const flush = () => {
      while (queue.length && queue[0].ready) {
        const a = queue.shift();
        socket.write(a.bytes);
        if (a.close) {
          closing = true;
          socket.end();
          // Read and drop what the client still sends, but not for longer than a second.
          setTimeout(() => socket.destroy(), 1000).unref();
          queue.length = 0;
          return;
        }
      }
    };
    const enqueue = (promise, close) => {
      const slot = { ready: false };
      queue.push(slot);
      promise.then((a) => {
        Object.assign(slot, a, { ready: true, close: close || a.close });
        if (!socket.destroyed) flush();
      });
    };
    // A client that starts a request and does not finish it within the timeout is cut off. The
    // clock starts at the request's first byte and is not reset by more bytes, or a client
    // trickling a byte at a time would hold the connection for ever.
    const armHeaderTimer = () => {
      if (!parser.partial) {
        clearTimeout(headerTimer);
        headerTimer = null;
      } else if (!headerTimer) {
        headerTimer = setTimeout(() => socket.destroy(), headerTimeoutMs);
      }
    };

    socket.on('data', (chunk) => {
      if (closing) return;
      let msgs;
      try {
        msgs = parser.push(chunk);
      } catch (e) {
        if (!(e instanceof HttpError)) throw e;
        count('rejected', 'rejected');
        clearTimeout(headerTimer);
        closing = true;
        enqueue(Promise.resolve({ bytes: response(e.status, { body: `${e.message}\n`, close: true }) }), true);
        return;
      }
      for (const m of msgs) enqueue(handle(m), !m.keepAlive);
      armHeaderTimer();
    });
    // A keep-alive connection with nothing in progress is closed after the idle timeout.
    socket.setTimeout(idleTimeoutMs, () => {
      if (queue.length === 0 && !parser.partial) socket.destroy();
    });
    socket.on('error', () => socket.destroy());
    socket.on('close', () => clearTimeout(headerTimer));
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
