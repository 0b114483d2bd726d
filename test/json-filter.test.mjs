// Conformance of the JSON filters: one table of behaviours, run against every implementation,
// then a fuzz run after which each must still answer correctly without leaking connections.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Http1Parser } from '../servers/node/lib/http1.js';
import { filterImplementations } from './filter-implementations.mjs';
import { seededRandom } from '../thresholds/models/random.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const LIMITS = { maxBody: 1024, maxHead: 1024, headerTimeoutMs: 300, idleTimeoutMs: 600, backendTimeoutMs: 200 };

async function freePort() {
  const s = net.createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

async function startProcess(argv, port) {
  const child = spawn(argv[0], argv.slice(1), { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { out += d; });
  for (let i = 0; i < 100; i += 1) {
    if (child.exitCode !== null) throw new Error(`${argv.join(' ')} exited: ${out}`);
    const ok = await new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => { s.destroy(); resolve(true); });
      s.on('error', () => resolve(false));
    });
    if (ok) return child;
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error(`${argv.join(' ')} did not listen on ${port}: ${out}`);
}

const stop = (child) => new Promise((r) => { if (child.exitCode !== null) r(); else { child.on('exit', r); child.kill('SIGTERM'); } });

/** Writes raw bytes (in pieces, with pauses, if asked); resolves the parsed responses and whether the server closed. */
function exchange(port, pieces, { expect = 1, timeoutMs = 2000 } = {}) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    const parser = new Http1Parser({ kind: 'response', maxHeadBytes: 1 << 16 });
    const got = [];
    let closed = false;
    const done = () => { clearTimeout(t); s.destroy(); resolve({ responses: got, closed }); };
    const t = setTimeout(done, timeoutMs);
    s.on('data', (d) => {
      try { got.push(...parser.push(d)); } catch { /* not our concern here */ }
      if (got.length >= expect && expect > 0) done();
    });
    s.on('close', () => { closed = true; done(); });
    s.on('error', () => {});
    (async () => {
      for (const p of [].concat(pieces)) {
        if (typeof p === 'number') await new Promise((r) => setTimeout(r, p));
        else if (!s.destroyed) s.write(p);
      }
    })();
  });
}

const post = (body, extra = '') => `POST /filter HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;
const RELAY = post('{"relay":true,"n":1}');
const FILTERED = post('{"relay":false,"n":2}');
const getJson = async (port, path) => JSON.parse((await exchange(port, `GET ${path} HTTP/1.1\r\nhost: x\r\n\r\n`)).responses[0].body.toString());

for (const impl of filterImplementations(root)) {
  const ctx = {};
  const setup = async (backendDelayMs) => {
    const bport = await freePort();
    const backend = await startProcess(['node', 'servers/node/no-content.js', '--port', String(bport), '--delay-ms', String(backendDelayMs)], bport);
    return { bport, backend };
  };

  before(async () => {
    if (impl.skip) return;
    Object.assign(ctx, await setup(30));
    ctx.port = await freePort();
    ctx.filter = await startProcess(impl.command({ port: ctx.port, backend: `127.0.0.1:${ctx.bport}`, ...LIMITS }), ctx.port);
  });
  after(async () => {
    for (const c of [ctx.filter, ctx.backend]) if (c) await stop(c);
  });

  const conformance = [
    ['valid document to relay: backend answer relayed, backend reached', async () => {
      const before = (await getJson(ctx.bport, '/stats')).received;
      const { responses } = await exchange(ctx.port, RELAY);
      assert.equal(responses[0]?.status, 204);
      assert.equal((await getJson(ctx.bport, '/stats')).received, before + 1);
    }],
    ['valid document filtered out: 204 at once, backend not reached', async () => {
      const before = (await getJson(ctx.bport, '/stats')).received;
      const { responses } = await exchange(ctx.port, FILTERED);
      assert.equal(responses[0]?.status, 204);
      assert.equal((await getJson(ctx.bport, '/stats')).received, before);
    }],
    ['invalid JSON: 400, connection kept', async () => {
      const { responses } = await exchange(ctx.port, [post('{"relay":tru'), FILTERED], { expect: 2 });
      assert.deepEqual(responses.map((r) => r.status), [400, 204]);
    }],
    ['body over the limit: 413', async () => {
      const { responses } = await exchange(ctx.port, post(`{"relay":false,"pad":"${'x'.repeat(2000)}"}`));
      assert.equal(responses[0]?.status, 413);
    }],
    ['malformed request line: 400 and closed', async () => {
      const r = await exchange(ctx.port, 'THIS IS NOT HTTP\r\n\r\n');
      assert.equal(r.responses[0]?.status, 400);
    }],
    ['malformed header: 400', async () => {
      const r = await exchange(ctx.port, 'POST / HTTP/1.1\r\nno colon here\r\ncontent-length: 2\r\n\r\n{}');
      assert.equal(r.responses[0]?.status, 400);
    }],
    ['headers too large: 431', async () => {
      const r = await exchange(ctx.port, post('{}', `x-pad: ${'y'.repeat(2000)}\r\n`));
      assert.equal(r.responses[0]?.status, 431);
    }],
    ['chunked body refused: 411', async () => {
      const r = await exchange(ctx.port, 'POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n');
      assert.equal(r.responses[0]?.status, 411);
    }],
    ['headers sent too slowly: closed after the timeout', async () => {
      const t0 = Date.now();
      const r = await exchange(ctx.port, ['POST /filter HTTP/1.1\r\n', 100, 'host: x\r\n', 1200, 'content-length: 2\r\n\r\n{}'], { expect: 0, timeoutMs: 1500 });
      assert.equal(r.closed, true);
      const waited = Date.now() - t0;
      assert.ok(waited >= LIMITS.headerTimeoutMs && waited < LIMITS.headerTimeoutMs + 80, `closed after ${waited} ms, not reset by the bytes that came meanwhile`);
    }],
    ['an idle keep-alive connection is closed after the idle timeout', async () => {
      const t0 = Date.now();
      const r = await exchange(ctx.port, FILTERED, { expect: 0, timeoutMs: 1500 });
      const waited = Date.now() - t0;
      assert.equal(r.responses[0]?.status, 204);
      assert.equal(r.closed, true);
      assert.ok(waited >= LIMITS.idleTimeoutMs && waited < LIMITS.idleTimeoutMs + 300, `closed after ${waited} ms`);
    }],
    ['pipelined requests answered in order (the slow relayed one first)', async () => {
      const r = await exchange(ctx.port, RELAY + post('not json') + FILTERED + 'GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n', { expect: 4 });
      assert.deepEqual(r.responses.map((x) => x.status), [204, 400, 204, 200]);
    }],
  ];
  // What RFC 9112 (and 9110 on field values) has a server reject: the answer, then the
  // connection closed, and the filter still serving the next client.
  const doc = '{"relay":false}';
  const head = (line, fields) => `${line}\r\n${fields}content-type: application/json\r\ncontent-length: ${doc.length}\r\n\r\n${doc}`;
  const rejected = [
    ['HTTP version 9.9: 505', head('POST /filter HTTP/9.9', 'host: x\r\n'), 505],
    ['HTTP version 2.0 on HTTP/1 framing: 505', head('POST /filter HTTP/2.0', 'host: x\r\n'), 505],
    ['version with two digits (HTTP/1.10): 400', head('POST /filter HTTP/1.10', 'host: x\r\n'), 400],
    ['no version (HTTP/0.9 style): 400', 'GET /healthz\r\n\r\n', 400],
    ['two spaces in the request line: 400', head('POST  /filter HTTP/1.1', 'host: x\r\n'), 400],
    ['NUL in the request target: 400', head('POST /fil\0ter HTTP/1.1', 'host: x\r\n'), 400],
    ['NUL in a header value: 400', head('POST /filter HTTP/1.1', 'host: x\r\nx-note: a\0b\r\n'), 400],
    ['other control character in a header value: 400', head('POST /filter HTTP/1.1', 'host: x\r\nx-note: a\x01b\r\n'), 400],
    ['bare LF ending a header line: 400', head('POST /filter HTTP/1.1', 'host: x\nx-note: a\r\n'), 400],
    ['obs-fold (a header continued on the next line): 400', head('POST /filter HTTP/1.1', 'host: x\r\nx-note: a\r\n b\r\n'), 400],
    ['whitespace between field name and colon: 400', head('POST /filter HTTP/1.1', 'host : x\r\n'), 400],
    ['empty field name: 400', head('POST /filter HTTP/1.1', 'host: x\r\n: b\r\n'), 400],
    ['HTTP/1.1 without Host: 400', head('POST /filter HTTP/1.1', ''), 400],
    ['two Host fields: 400', head('POST /filter HTTP/1.1', 'host: x\r\nhost: y\r\n'), 400],
    ['Host that is no authority: 400', head('POST /filter HTTP/1.1', 'host: a b\r\n'), 400],
    ['two different Content-Length fields: 400', head('POST /filter HTTP/1.1', `host: x\r\ncontent-length: ${doc.length + 1}\r\n`), 400],
    ['Content-Length with a sign: 400', head('POST /filter HTTP/1.1', 'host: x\r\n').replace(/content-length: /, 'content-length: +'), 400],
  ];
  for (const [name, bytes, status] of rejected) {
    conformance.push([`${name}, closed, still serving`, async () => {
      const r = await exchange(ctx.port, bytes, { expect: 2 });
      assert.deepEqual(r.responses.map((x) => x.status), [status]);
      assert.equal(r.closed, true);
      assert.equal((await exchange(ctx.port, FILTERED)).responses[0]?.status, 204);
    }]);
  }
  conformance.push(['accepted as RFC 9112 allows: HTTP/1.0 without Host, HTTP/1.2 read as 1.1, obs-text in a value', async () => {
    const r = await exchange(ctx.port, [head('POST /filter HTTP/1.0', 'connection: keep-alive\r\n'), head('POST /filter HTTP/1.2', 'host: x\r\nx-note: caf\xe9\r\n')].join(''), { expect: 2 });
    assert.deepEqual(r.responses.map((x) => x.status), [204, 204]);
  }]);
  for (const [name, fn] of conformance) test(`${impl.name}: ${name}`, { skip: impl.skip }, fn);

  test(`${impl.name}: backend down: 502; backend slower than the timeout: 504`, { skip: impl.skip }, async () => {
    const dead = await freePort();
    const p1 = await freePort();
    const f1 = await startProcess(impl.command({ port: p1, backend: `127.0.0.1:${dead}`, ...LIMITS }), p1);
    const slow = await setup(LIMITS.backendTimeoutMs * 3);
    const p2 = await freePort();
    const f2 = await startProcess(impl.command({ port: p2, backend: `127.0.0.1:${slow.bport}`, ...LIMITS }), p2);
    try {
      assert.equal((await exchange(p1, RELAY)).responses[0]?.status, 502);
      assert.equal((await exchange(p1, FILTERED)).responses[0]?.status, 204, 'filtered ones need no backend');
      assert.equal((await exchange(p2, RELAY)).responses[0]?.status, 504);
    } finally {
      for (const c of [f1, f2, slow.backend]) await stop(c);
    }
  });

  test(`${impl.name}: fuzz: 3000 random and mutated requests, then still correct, alive, no leaked connections`, { skip: impl.skip }, async () => {
    const rand = seededRandom(`fuzz:${impl.name}`);
    const seeds = [RELAY, FILTERED, post('[1,2,3]'), 'GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n'];
    const mutate = (s) => {
      const b = Buffer.from(s);
      const kind = Math.floor(rand() * 5);
      if (kind === 0) return Buffer.from(Array.from({ length: Math.floor(rand() * 300) }, () => Math.floor(rand() * 256)));
      if (kind === 1) return b.subarray(0, Math.floor(rand() * b.length)); // truncated
      const n = 1 + Math.floor(rand() * 8);
      for (let i = 0; i < n; i += 1) b[Math.floor(rand() * b.length)] = Math.floor(rand() * 256); // flipped bytes
      if (kind === 3) return Buffer.concat([b, b]); // pipelined twin
      if (kind === 4) return Buffer.from(s.replace(/content-length: \d+/, `content-length: ${Math.floor(rand() * 99999)}`));
      return b;
    };
    // A leak is a server-side connection on the filter's port that outlives its client:
    // still ESTABLISHED (01) or CLOSE_WAIT (08) once every client has closed.
    const hex = `:${ctx.port.toString(16).toUpperCase().padStart(4, '0')}`;
    const open = () => ['/proc/net/tcp', '/proc/net/tcp6'].flatMap((f) => readFileSync(f, 'utf8').split('\n').slice(1))
      .map((l) => l.trim().split(/\s+/)).filter((f) => f[1]?.endsWith(hex) && (f[3] === '01' || f[3] === '08')).length;
    const jobs = Array.from({ length: 3000 }, () => mutate(seeds[Math.floor(rand() * seeds.length)]));
    // 250 connections at a time; a client gives up after 150 ms (a truncated request gets no answer).
    for (let i = 0; i < jobs.length; i += 250) {
      await Promise.all(jobs.slice(i, i + 250).map((bytes) => exchange(ctx.port, bytes, { expect: 1, timeoutMs: 150 })));
    }
    assert.equal(ctx.filter.exitCode, null, 'still running');
    const r = await exchange(ctx.port, RELAY + FILTERED, { expect: 2 });
    assert.deepEqual(r.responses.map((x) => x.status), [204, 204]);
    let left = open();
    for (let i = 0; i < 30 && left > 0; i += 1) {
      await new Promise((res) => setTimeout(res, 100));
      left = open();
    }
    assert.equal(left, 0, `${left} server-side connections left on port ${ctx.port}`);
  });
}
