#!/usr/bin/env node
/*
 * The JSON filter's backend (seed 004's noContent.js): answers every request 204 No Content
 * after `--delay-ms` (30 by default), "thinking". GET /stats counts what it received (in all and by path), so a
 * test can check that exactly the relayed requests arrived.
 * What it will not act on (lib/request-guard.js) gets 400 and is counted as refused, not
 * received: a target that is no path, or a path beyond the first 512 it has counted (so /stats
 * never holds more than 512 paths per process).
 *   no-content.js --port 21000 [--delay-ms 30] [--workers N]
 */
import http from 'node:http';
import cluster from 'node:cluster';
import { parseArgs } from 'node:util';
import { MAX_NAMES, nameBook, refuse, refuseConnect, targetPath } from './lib/request-guard.js';

const { values: o } = parseArgs({
  options: {
    port: { type: 'string' },
    host: { type: 'string', default: '127.0.0.1' },
    'delay-ms': { type: 'string', default: '30' },
    workers: { type: 'string', default: '0' },
  },
});
const port = Number(o.port);
const delay = Number(o['delay-ms']);
const workers = Number(o.workers);
if (!Number.isInteger(port) || port < 1 || !(delay >= 0) || !Number.isInteger(workers) || workers < 0) {
  console.error('no-content: usage: --port N [--delay-ms MS] [--workers N]');
  process.exit(2);
}

if (workers > 0 && cluster.isPrimary) {
  for (let i = 0; i < workers; i += 1) cluster.fork();
  for (const sig of ['SIGTERM', 'SIGINT'])
    process.on(sig, () => {
      for (const w of Object.values(cluster.workers)) w.process.kill('SIGTERM');
      process.exit(0);
    });
} else {
  let received = 0;
  let refused = 0;
  const paths = Object.create(null); // by path, as the lab's nginx backend counts (the suites check per case)
  const counted = nameBook();
  const turnAway = (res, why) => {
    refused += 1;
    refuse(res, 400, { why });
  };
  const server = http.createServer((req, res) => {
    if (targetPath(req.url) === null) return turnAway(res, 'the request target must be a path');
    if (req.method === 'GET' && req.url === '/stats') {
      const body = JSON.stringify({ pid: process.pid, received, refused, paths });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
      return;
    }
    if (req.method === 'GET' && req.url === '/healthz') {
      res.writeHead(200).end('ok\n');
      return;
    }
    if (!counted.admit(req.url)) return turnAway(res, `it counts at most ${MAX_NAMES} distinct paths`);
    req.resume();
    req.on('end', () => {
      received += 1;
      paths[req.url] = (paths[req.url] || 0) + 1;
      setTimeout(() => res.writeHead(204).end(), delay);
    });
  });
  server.keepAliveTimeout = 60_000;
  refuseConnect(server);
  server.listen(port, o.host, () => console.log(`no-content ${process.pid} on ${o.host}:${port}, ${delay} ms`));
  for (const sig of ['SIGTERM', 'SIGINT'])
    process.on(sig, () => {
      server.close();
      process.exit(0);
    });
}
