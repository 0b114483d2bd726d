#!/usr/bin/env node
/*
 * The service behind the rate limiters (seed 003's "hello", seed 002's "web"): answers every
 * GET at once, so any wait or rejection a client sees comes from the proxy in front; a request
 * that asks for it (x-lab-hold-ms, a team's limit_conn cases) is answered that many ms later.
 * GET /metrics: what it served, by lab case (x-lab-case) and status, in Prometheus text format.
 * What it will not act on (lib/request-guard.js) gets 400, counted under case 'other': a target
 * that is no path, an x-lab-case that is no case name, a case beyond the first 512 it has seen.
 * Usage: hello.js --port N [--host 127.0.0.1] [--name hello]
 */
import http from 'node:http';
import { parseArgs } from 'node:util';
import { serverMetrics } from './lib/metrics.js';
import { checkRequest, nameBook, refuse, refuseConnect } from './lib/request-guard.js';

const { values: opt } = parseArgs({
  options: {
    port: { type: 'string' },
    host: { type: 'string', default: '127.0.0.1' },
    name: { type: 'string', default: 'hello' },
  },
});
const port = Number(opt.port);
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
  console.error(`hello: --port must be 1..65535, got '${opt.port}'`);
  process.exit(2);
}

const metrics = serverMetrics();
const requests = metrics.counter('lab_http_requests_total', 'Requests answered, by lab case and status', [
  'case',
  'status',
]);

let served = 0;
const cases = nameBook();
const server = http.createServer((req, res) => {
  const checked = checkRequest(req, cases);
  const label = checked.status ? 'other' : metrics.caseLabel(checked.kase);
  const count = (status) => requests.inc({ case: label, status: String(status) });
  if (checked.status) {
    count(checked.status);
    refuse(res, checked.status, { why: checked.why });
    return;
  }
  if (req.method === 'GET' && req.url === '/metrics') {
    metrics.text().then((text) => res.writeHead(200, { 'content-type': metrics.contentType }).end(text));
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    count(405);
    res.writeHead(405, { allow: 'GET, HEAD' }).end();
    return;
  }
  served += 1;
  count(200);
  const body = `Hello from ${opt.name}\n`;
  const answer = () => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body) });
    res.end(req.method === 'HEAD' ? undefined : body);
  };
  if (checked.hold) setTimeout(answer, checked.hold);
  else answer();
});
server.keepAliveTimeout = 65_000;
refuseConnect(server);
server.listen(port, opt.host, () => console.log(`${opt.name} listening on http://${opt.host}:${port}`));

for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    console.log(`${opt.name}: ${sig}, served ${served} requests`);
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
