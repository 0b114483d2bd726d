/*
 * The several-limits model against a real nginx (Debian's, as the lab runs it): a location with
 * two limit_req (one nodelay, one delay=2, one zone in r/m) gets bursts of requests; nginx logs
 * each request's limiter clock (stacks/lib/lab_clock.lua), status and time; the model, replayed
 * over those clocks, must give every status, and every wait within what a timer adds.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { limitReqChain } from '../thresholds/models/limit-req-chain.js';
import { absent, needs } from './lib/needs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const LUA = '/usr/lib/nginx/modules/ngx_http_lua_module.so';
const missing = absent('nginx', ['-v']) ?? (existsSync(LUA) ? null : `${LUA} is not installed`);
const HINT = "./labw setup installs Debian's nginx with its lua module";
// A timer fires late, never early: what a wait may exceed the model's by on a busy machine.
const TIMER_SLACK_MS = 150;

const freePort = () =>
  new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

const get = (port) =>
  new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path: '/', headers: { 'x-key': 'one', connection: 'close' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      },
    );
    req.on('error', reject);
    req.end();
  });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function config(prefix, port) {
  return `load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module ${LUA};
worker_processes 1;
pid nginx.pid;
error_log stderr warn;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path client_body_temp;
    proxy_temp_path proxy_temp;
    fastcgi_temp_path fastcgi_temp;
    uwsgi_temp_path uwsgi_temp;
    scgi_temp_path scgi_temp;
    lua_package_path "${join(root, 'stacks', 'lib')}/?.lua;;";
    limit_req_zone $http_x_key zone=fast:1m rate=10r/s;
    limit_req_zone $http_x_key zone=slow:1m rate=120r/m;
    limit_req_status 429;
    log_format chain '$http_x_lab_clock $status $request_time';
    server {
        listen 127.0.0.1:${port};
        location / {
            rewrite_by_lua_block { require("lab_clock").stamp() }
            limit_req zone=fast burst=5 nodelay;
            limit_req zone=slow burst=8 delay=2;
            access_log ${join(prefix, 'chain.log')} chain;
            content_by_lua_block { ngx.print("ok") }
        }
    }
}
`;
}

test(
  'two limit_req on one location: nginx gives what the model gives, request for request',
  { timeout: 60_000 },
  async (t) => {
    if (needs(t, missing, HINT)) return;
    const prefix = mkdtempSync(join(tmpdir(), 'lab-chain-'));
    const port = await freePort();
    writeFileSync(join(prefix, 'nginx.conf'), config(prefix, port));
    const nginx = spawn('nginx', ['-p', prefix, '-c', 'nginx.conf', '-g', 'daemon off; master_process off;'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    nginx.stderr.on('data', (d) => {
      stderr += d;
    });
    try {
      for (let i = 0; i < 50; i += 1) {
        if (
          await get(port).then(
            () => true,
            () => false,
          )
        )
          break;
        await sleep(100);
      }
      // The warm-up request above spent budget too: the log has it, and the replay starts there.
      // Bursts of 8 at once, every 400 ms, then a pause and one more burst.
      for (const gap of [0, 400, 400, 400, 1500]) {
        await sleep(gap);
        await Promise.all(Array.from({ length: 8 }, () => get(port)));
      }
      await sleep(200);
      const lines = readFileSync(join(prefix, 'chain.log'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => l.split(' '));
      assert.ok(
        lines.every(([clock]) => /^\d+$/.test(clock)),
        `nginx logged its limiter clock (lab_clock.lua): ${lines[0]}`,
      );
      const seen = lines.map(([clock, status, time]) => ({
        clock: Number(clock),
        status: Number(status),
        waitMs: Number(time) * 1000,
      }));
      // In the order the limiter saw them; requests in one millisecond are told apart by status.
      seen.sort((a, b) => a.clock - b.clock || a.status - b.status);
      const model = limitReqChain([
        { rateMilli: 10000, burst: 5, delay: Infinity },
        { rateMilli: 2000, burst: 8, delay: 2 },
      ]);
      const groups = new Map();
      for (const s of seen) {
        const g = groups.get(s.clock) ?? { nginx: [], model: [] };
        g.nginx.push(s);
        g.model.push(model.offer(s.clock, 'one'));
        groups.set(s.clock, g);
      }
      for (const [clock, g] of groups) {
        assert.deepEqual(
          g.nginx.map((s) => s.status).sort(),
          g.model.map((r) => (r.ok ? 200 : 429)).sort(),
          `statuses at nginx clock ${clock}`,
        );
        // The waits of the accepted, each no shorter than the model's and late by a timer at most.
        const waits = g.nginx
          .filter((s) => s.status === 200)
          .map((s) => s.waitMs)
          .sort((a, b) => a - b);
        const delays = g.model
          .filter((r) => r.ok)
          .map((r) => r.delayMs)
          .sort((a, b) => a - b);
        waits.forEach((w, i) =>
          assert.ok(
            w >= delays[i] - 1 && w <= delays[i] + TIMER_SLACK_MS,
            `at ${clock}: nginx waited ${w} ms, the model ${delays[i]} ms`,
          ),
        );
      }
      const limited = seen.filter((s) => s.status === 429).length;
      assert.ok(limited > 0 && limited < seen.length, `some limited, some not: ${limited} of ${seen.length}`);
      assert.ok(
        seen.some((s) => s.waitMs >= 400),
        'some waited (delay=2 on the slow zone)',
      );
    } finally {
      nginx.kill('SIGQUIT');
      await new Promise((r) => (nginx.exitCode !== null ? r() : nginx.on('exit', r)));
      rmSync(prefix, { recursive: true, force: true });
      if (nginx.exitCode && nginx.exitCode !== 0 && stderr) t.diagnostic(stderr);
    }
  },
);
