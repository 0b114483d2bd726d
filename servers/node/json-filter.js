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
import { Http1Parser, HttpError, response } from './lib/http1.js';
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
  const pool = new BackendPool({
    host: bhost,
    port: Number(bport),
    max: num('pool-size', 1),
    timeoutMs: num('backend-timeout-ms', 1),
    maxWaiting: num('pool-queue', 0),
    waitTimeoutMs: num('pool-wait-ms', 1),
  });
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
  const metrics = serverMetrics();
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

  /**
   * One request: `reply(slot, bytes, close)` gets its answer, at once or when the backend
   * answers (no Promise per request: the hot path is callbacks). GET /healthz answers 200;
   * GET /stats answers the worker's counters as JSON; GET /metrics the whole server's (every
   * worker's) in Prometheus text format.
   */
  function handle(msg, slot, reply) {
    stats.requests += 1;
    if (msg.method === 'GET' && msg.target === '/healthz') return reply(slot, response(200, { body: 'ok\n' }));
    if (msg.method === 'GET' && msg.target === '/metrics') {
      return metrics
        .text()
        .then((text) => reply(slot, response(200, { body: text, headers: { 'content-type': metrics.contentType } })));
    }
    if (msg.method === 'GET' && msg.target === '/stats') {
      return reply(
        slot,
        response(200, {
          body: JSON.stringify({ pid: process.pid, pool: pool.open, ...stats }),
          headers: { 'content-type': 'application/json' },
        }),
      );
    }
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
    return pool.send('POST', msg.target, msg.body, (e, r) => {
      if (e) {
        counted.backend_error();
        return reply(slot, response(e.status || 502, { body: `${e.message}\n` }));
      }
      counted.relayed();
      const headers = r.headers['content-type'] ? { 'content-type': r.headers['content-type'] } : undefined;
      return reply(slot, response(r.status, { body: r.body, headers }));
    });
  }

  // Over the connection cap, before any request is read: the answer, and the connection closed.
  const TOO_MANY = response(503, { body: 'too many connections\n', close: true });
  let open = 0; // connections being served by this process

  const server = net.createServer((socket) => {
    stats.connections += 1;
    connections.inc();
    if (open >= maxConnections) {
      refuse(socket);
      return;
    }
    open += 1;
    socket.on('close', () => {
      open -= 1;
    });
    serveConnection(socket);
  });

  /**
   * A connection over --max-connections: 503 and our side closed at once. What the client sends
   * meanwhile is read and dropped for at most a second, so that the close does not turn into a
   * reset that could destroy the answer before the client reads it.
   */
  function refuse(socket) {
    stats.refused += 1;
    refusedConnections.inc();
    socket.on('error', () => socket.destroy());
    socket.resume();
    socket.end(TOO_MANY);
    setTimeout(() => socket.destroy(), 1000).unref();
  }

  /**
   * One client connection. Requests are taken from the parser one at a time, at most
   * --max-pipeline in flight; answers go out in request order. While the socket's write buffer
   * is full (the client reads slower than we answer, or not at all) nothing more is read or
   * dispatched, and if it stays full for --send-timeout-ms the connection is cut off. Reading
   * pauses whenever no more requests may be taken, so the client's bytes wait in the kernel.
   */
  function serveConnection(socket) {
    socket.setNoDelay(true);
    const parser = new Http1Parser(limits);
    const queue = []; // pending answers, in request order: {bytes, close} once ready
    let done = false; // no more requests are taken (the last one asked to close, or an error)
    let blocked = false; // the write buffer is full: wait for 'drain'
    let pumping = false; // taking requests: answers made meanwhile are written when it ends
    let headerTimer = null;
    let sendTimer = null;

    // Writes the answers that are ready, in order (several in one write); false once the
    // connection is finished (an answer that closes it went out).
    const writeReady = () => {
      const several = queue.length > 1 && queue[1].ready;
      if (several) socket.cork();
      let open = true;
      while (queue.length && queue[0].ready) {
        const a = queue.shift();
        const written = socket.write(a.bytes);
        if (a.close) {
          open = false;
          break;
        }
        if (!written) block();
      }
      if (several) socket.uncork();
      if (!open) finish();
      return open;
    };
    // An answer is ready: written now unless requests are being taken (then when that ends).
    const reply = (slot, bytes, close) => {
      slot.bytes = bytes;
      slot.ready = true;
      if (close) slot.close = true;
      if (!pumping && !socket.destroyed && queue[0] === slot && writeReady()) pump();
    };
    // The last answer is written: close our side; read and drop what the client still sends,
    // but not for longer than a second.
    const finish = () => {
      done = true;
      queue.length = 0;
      clearTimers();
      socket.end();
      socket.resume();
      setTimeout(() => socket.destroy(), 1000).unref();
    };
    // Write backpressure: the client is not taking our answers; wait for 'drain', a while at most.
    const block = () => {
      if (blocked) return;
      blocked = true;
      sendTimer = setTimeout(() => socket.destroy(), sendTimeoutMs);
      socket.once('drain', unblock);
    };
    const unblock = () => {
      blocked = false;
      clearTimeout(sendTimer);
      sendTimer = null;
      pump();
    };
    const clearTimers = () => {
      clearTimeout(headerTimer);
      clearTimeout(sendTimer);
      headerTimer = null;
    };
    const slotFor = (close) => {
      const slot = { ready: false, bytes: null, close };
      queue.push(slot);
      return slot;
    };
    // A request the parser refuses: its error answer (after the answers before it), then close.
    const refuseRequest = (e) => {
      counted.rejected();
      done = true;
      reply(slotFor(true), response(e.status, { body: `${e.message}\n`, close: true }));
    };
    // Takes the requests already received while there is room, writes the answers made at once,
    // and again; then reads from the client only if more may be taken (otherwise its bytes wait
    // in the kernel, and the client's writes stall).
    const pump = () => {
      for (;;) {
        if (socket.destroyed) return;
        pumping = true;
        while (!done && !blocked && queue.length < maxPipeline) {
          let msg;
          try {
            msg = parser.next();
          } catch (e) {
            if (!(e instanceof HttpError)) throw e;
            refuseRequest(e);
            break;
          }
          if (!msg) break;
          if (!msg.keepAlive) done = true; // RFC 9112 9.6: nothing after a request that closes
          handle(msg, slotFor(!msg.keepAlive), reply);
        }
        pumping = false;
        if (!(queue.length && queue[0].ready)) break;
        if (!writeReady()) return;
      }
      const room = !done && !blocked && queue.length < maxPipeline;
      if (done || room)
        socket.resume(); // after the last request: read and drop
      else socket.pause();
      armHeaderTimer(room && parser.partial);
    };
    // A client that starts a request and does not finish it within the timeout is cut off. The
    // clock starts at the request's first byte and is not reset by more bytes, or a client
    // trickling a byte at a time would hold the connection for ever. It runs only while we wait
    // for the client, not while its requests wait for room.
    const armHeaderTimer = (waitingForClient) => {
      if (!waitingForClient) {
        clearTimeout(headerTimer);
        headerTimer = null;
      } else if (!headerTimer) {
        headerTimer = setTimeout(() => socket.destroy(), headerTimeoutMs);
      }
    };

    socket.on('data', (chunk) => {
      if (done) return;
      parser.feed(chunk);
      pump();
    });
    // A keep-alive connection with nothing in progress is closed after the idle timeout (one
    // whose answers wait to be written is the send timeout's).
    socket.setTimeout(idleTimeoutMs, () => {
      if (queue.length === 0 && !parser.partial && !blocked) socket.destroy();
    });
    socket.on('error', () => socket.destroy());
    socket.on('close', clearTimers);
  }
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
