#!/usr/bin/env node
/*
 * Seed 000's application server: three resources that take their time and say how long a cache
 * may keep them. It serves at most --workers requests at once, like the seed's 10 threads; the
 * others wait in a FIFO queue, so what a client sees beyond the think time is queueing the model
 * predicts.
 * The queue holds at most --queue requests, 1000 by default: ten times the most the lab's suites
 * keep waiting (caching's stress suite: 100 users, one request each at a time). One more gets 503
 * with retry-after: 1. A queued request whose client has gone is dropped, never served, so it
 * takes no worker (lab_app_abandoned_total counts them).
 * What it will not act on (lib/request-guard.js) gets 400, counted under case 'other': a target
 * that is no path, an x-lab-case that is no case name, or a case beyond the first 512 it has seen
 * (so /counts never holds more than 512 cases).
 */
import http from 'node:http';
import { parseArgs } from 'node:util';
import { serverMetrics } from './lib/metrics.js';
import { parseResources } from './lib/resources.js';
import { checkRequest, nameBook, refuse, refuseConnect } from './lib/request-guard.js';

// Usage: app.js --port N --workers 10 --queue 1000 --resources hare=100:3,tortoise=2000:10,snail=5000:60
// (by default /hare 0.1 s and max-age 3, /tortoise 2 s and 10, /snail 5 s and 60).
const { values: opt } = parseArgs({
  options: {
    port: { type: 'string' },
    host: { type: 'string', default: '127.0.0.1' },
    name: { type: 'string', default: 'app' },
    workers: { type: 'string', default: '10' },
    queue: { type: 'string', default: '1000' },
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
const queueMax = Number(opt.queue);
if (!/^[0-9]{1,9}$/.test(opt.queue)) fail(`--queue must be a whole number >= 0, got '${opt.queue}'`);
let resources;
try {
  resources = parseResources(opt.resources);
} catch (e) {
  fail(e.message);
}

const metrics = serverMetrics();
const answered = metrics.counter('lab_app_requests_total', 'Requests answered, by lab case, resource and status', [
  'case',
  'resource',
  'status',
]);
const busyGauge = metrics.gauge('lab_app_busy_workers', 'Requests being served now');
const queueGauge = metrics.gauge('lab_app_queue_length', 'Requests waiting for a worker');
const abandoned = metrics.counter(
  'lab_app_abandoned_total',
  'Queued requests whose client left before a worker was free: never served',
  ['case'],
);

const served = new Map(); // case -> resource -> count, for /counts
const cases = nameBook(); // the cases it answers for: at most 512
let busy = 0;
const queue = new Set(); // waiting requests ({ req, res, name, kase }), oldest first

/** Counts a request served, for /counts. */
function countServed(kase, name) {
  if (!served.has(kase)) served.set(kase, new Map());
  const byName = served.get(kase);
  byName.set(name, (byName.get(name) ?? 0) + 1);
}

/** /counts' JSON: { case: { resource: count } }. */
const countsJson = () =>
  JSON.stringify(Object.fromEntries([...served].map(([kase, byName]) => [kase, Object.fromEntries(byName)])));

/** Answers a request it will not serve, counted under `label` and `resource`. */
function decline(res, label, resource, status, options) {
  answered.inc({ case: label, resource, status: String(status) });
  refuse(res, status, options);
}

function serve(job) {
  const { req, res, name, kase } = job;
  busy += 1;
  busyGauge.set(busy);
  const r = resources[name];
  setTimeout(() => {
    countServed(kase, name);
    answered.inc({ case: metrics.caseLabel(kase), resource: name, status: '200' });
    const body = `${name}\n`;
    res.writeHead(200, {
      'content-type': 'text/plain',
      'content-length': Buffer.byteLength(body),
      'cache-control': `max-age=${r.maxAgeS}`,
    });
    res.end(req.method === 'HEAD' ? undefined : body);
    busy -= 1;
    busyGauge.set(busy);
    serveNext();
  }, r.serviceMs);
}

/** Whether the client of a request can no longer get its answer: its connection is closed. */
const clientGone = ({ req, res }) => res.destroyed || !req.socket?.writable;

/** Drops a queued request whose client has gone. */
function forget(job) {
  if (!queue.delete(job)) return;
  abandoned.inc({ case: metrics.caseLabel(job.kase) });
  queueGauge.set(queue.size);
}

/** Queues a request; it leaves the queue as soon as its client does. */
function enqueue(job) {
  queue.add(job);
  queueGauge.set(queue.size);
  const leave = () => {
    if (clientGone(job)) forget(job);
  };
  job.req.once('close', leave);
  job.res.once('close', leave);
}

/** The oldest queued request whose client is still there takes the free worker. */
function serveNext() {
  for (const job of queue) {
    if (clientGone(job)) {
      forget(job);
      continue;
    }
    queue.delete(job);
    queueGauge.set(queue.size);
    serve(job);
    return;
  }
}

// GET /counts: what it served, per lab case (x-lab-case) and resource, as JSON; k6 reads it for
// the application-load figure. GET /metrics: the same counters, the busy workers and the queue,
// in Prometheus text format. GET /healthz answers at once and takes no worker.
const server = http.createServer((req, res) => {
  const checked = checkRequest(req, cases);
  if (checked.status) return decline(res, 'other', 'other', checked.status, { why: checked.why });
  const { path, kase } = checked;
  if (req.method === 'GET' && path === '/metrics') {
    metrics.text().then((text) => res.writeHead(200, { 'content-type': metrics.contentType }).end(text));
    return;
  }
  if (req.method === 'GET' && path === '/healthz')
    return res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
  if (req.method === 'GET' && path === '/counts') {
    return res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(countsJson());
  }
  const name = path.slice(1);
  const label = metrics.caseLabel(kase);
  if (!Object.hasOwn(resources, name)) return decline(res, label, 'other', 404);
  if (req.method !== 'GET' && req.method !== 'HEAD')
    return decline(res, label, 'other', 405, { headers: { allow: 'GET, HEAD' } });
  const job = { req, res, name, kase };
  if (busy < workers) serve(job);
  else if (queue.size < queueMax) enqueue(job);
  else decline(res, label, name, 503, { headers: { 'retry-after': '1' } });
});
server.keepAliveTimeout = 65_000;
refuseConnect(server);
server.listen(port, opt.host, () =>
  console.log(`${opt.name} listening on http://${opt.host}:${port}, ${workers} workers, queue ${queueMax}`),
);

for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    const total = [...served.values()].reduce((n, byName) => n + [...byName.values()].reduce((a, b) => a + b, 0), 0);
    console.log(`${opt.name}: ${sig}, served ${total} requests`);
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
