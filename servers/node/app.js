#!/usr/bin/env node
/*
 * Seed 000's application server: three resources that take their time and say how long a cache
 * may keep them. It serves at most --workers requests at once, like the seed's 10 threads; the
 * others wait in a FIFO queue, so what a client sees beyond the think time is queueing the model
 * predicts.
 */
import http from 'node:http';
import { parseArgs } from 'node:util';
import { serverMetrics } from './lib/metrics.js';
import { parseResources } from './lib/resources.js';

// Usage: app.js --port N --workers 10 --resources hare=100:3,tortoise=2000:10,snail=5000:60
// (by default /hare 0.1 s and max-age 3, /tortoise 2 s and 10, /snail 5 s and 60).
const { values: opt } = parseArgs({
  options: {
    port: { type: 'string' },
    host: { type: 'string', default: '127.0.0.1' },
    name: { type: 'string', default: 'app' },
    workers: { type: 'string', default: '10' },
    resources: { type: 'string', default: 'hare=100:3,tortoise=2000:10,snail=5000:60' },
  },
});
const fail = (msg) => {
  console.error(`${opt.name}: ${msg}`);
  process.exit(2);
};
const port = Number(opt.port);
if (!Number.isInteger(port) || port <= 0 || port > 65535) fail(`--port must be 1..65535, got '${opt.port}'`);
const workers = Number(opt.workers);
if (!/^[0-9]+$/.test(opt.workers) || workers < 1) fail(`--workers must be a whole number >= 1, got '${opt.workers}'`);
let resources;
try {
  resources = parseResources(opt.resources);
} catch (e) {
  fail(e.message);
}

const metrics = serverMetrics();
const answered = metrics.counter('lab_app_requests_total', 'Requests answered, by lab case, resource and status', ['case', 'resource', 'status']);
const busyGauge = metrics.gauge('lab_app_busy_workers', 'Requests being served now');
const queueGauge = metrics.gauge('lab_app_queue_length', 'Requests waiting for a worker');

const served = {}; // case -> resource -> count, for /counts
let busy = 0;
const queue = [];

function serve(req, res, name, kase) {
  busy += 1;
  busyGauge.set(busy);
  const r = resources[name];
  setTimeout(() => {
    served[kase] ||= {};
    served[kase][name] = (served[kase][name] || 0) + 1;
    answered.inc({ case: metrics.caseLabel(kase), resource: name, status: '200' });
    const body = `${name}\n`;
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body), 'cache-control': `max-age=${r.maxAgeS}` });
    res.end(req.method === 'HEAD' ? undefined : body);
    busy -= 1;
    busyGauge.set(busy);
    const next = queue.shift();
    queueGauge.set(queue.length);
    if (next) next();
  }, r.serviceMs);
}

// GET /counts: what it served, per lab case (x-lab-case) and resource, as JSON; k6 reads it for
// the application-load figure. GET /metrics: the same counters, the busy workers and the queue,
// in Prometheus text format. GET /healthz answers at once and takes no worker.
const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://app');
  if (req.method === 'GET' && url.pathname === '/metrics') {
    metrics.text().then((text) => res.writeHead(200, { 'content-type': metrics.contentType }).end(text));
    return;
  }
  if (req.method === 'GET' && url.pathname === '/healthz') return res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
  if (req.method === 'GET' && url.pathname === '/counts') {
    const body = JSON.stringify(served);
    return res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(body);
  }
  const kase = req.headers['x-lab-case'] || '';
  const name = url.pathname.slice(1);
  const refuse = (status, headers = {}) => {
    answered.inc({ case: metrics.caseLabel(kase), resource: 'other', status: String(status) });
    res.writeHead(status, { 'content-type': 'text/plain', ...headers }).end(`${http.STATUS_CODES[status]}\n`);
  };
  if (!Object.hasOwn(resources, name)) return refuse(404);
  if (req.method !== 'GET' && req.method !== 'HEAD') return refuse(405, { allow: 'GET, HEAD' });
  if (busy < workers) serve(req, res, name, kase);
  else {
    queue.push(() => serve(req, res, name, kase));
    queueGauge.set(queue.length);
  }
});
server.keepAliveTimeout = 65_000;
// Node's parser answers malformed requests with 400 and keeps serving.
server.on('clientError', (err, socket) => {
  if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
});
server.listen(port, opt.host, () => console.log(`${opt.name} listening on http://${opt.host}:${port}, ${workers} workers`));

for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    const total = Object.values(served).reduce((n, byName) => n + Object.values(byName).reduce((a, b) => a + b, 0), 0);
    console.log(`${opt.name}: ${sig}, served ${total} requests`);
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
