#!/usr/bin/env node
/*
 * The service behind the rate limiters (seed 003's "hello", seed 002's "web"): answers every
 * GET at once, so any wait or rejection a client sees comes from the proxy in front.
 * GET /metrics: what it served, by lab case (x-lab-case) and status, in Prometheus text format.
 * Usage: hello.js --port N [--host 127.0.0.1] [--name hello]
 */
import http from 'node:http';
import { parseArgs } from 'node:util';
import { serverMetrics } from './lib/metrics.js';

const { values: opt } = parseArgs({
  options: { port: { type: 'string' }, host: { type: 'string', default: '127.0.0.1' }, name: { type: 'string', default: 'hello' } },
});
const port = Number(opt.port);
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
  console.error(`hello: --port must be 1..65535, got '${opt.port}'`);
  process.exit(2);
}

const metrics = serverMetrics();
const requests = metrics.counter('lab_http_requests_total', 'Requests answered, by lab case and status', ['case', 'status']);

let served = 0;
const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/metrics') {
    metrics.text().then((text) => res.writeHead(200, { 'content-type': metrics.contentType }).end(text));
    return;
  }
  const count = (status) => requests.inc({ case: metrics.caseLabel(req.headers['x-lab-case']), status: String(status) });
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    count(405);
    res.writeHead(405, { allow: 'GET, HEAD' }).end();
    return;
  }
  served += 1;
  count(200);
  const body = `Hello from ${opt.name}\n`;
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body) });
  res.end(req.method === 'HEAD' ? undefined : body);
});
server.keepAliveTimeout = 65_000;
// Node's parser answers malformed requests with 400 and keeps serving: nothing else to do here.
server.on('clientError', (err, socket) => {
  if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
});
server.listen(port, opt.host, () => console.log(`${opt.name} listening on http://${opt.host}:${port}`));

for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    console.log(`${opt.name}: ${sig}, served ${served} requests`);
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
