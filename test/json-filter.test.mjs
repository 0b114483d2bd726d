// Conformance of the JSON filters: one table of behaviours, run against every implementation,
// then a fuzz run after which each must still answer correctly without leaking connections.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { spawnSync, spawn } from 'node:child_process';
import { freePort, startListening } from './lib/listening.mjs';
import http from 'node:http';
import { readFileSync, readdirSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Http1Parser, HttpError } from '../servers/node/lib/http1.js';
import { BackendPool } from '../servers/node/lib/backend-pool.js';
import { filterImplementations } from './filter-implementations.mjs';
import { needs, notRun } from './lib/needs.mjs';
import { seededRandom } from '../thresholds/models/random.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const LIMITS = { maxBody: 1024, maxHead: 1024, headerTimeoutMs: 300, idleTimeoutMs: 600, backendTimeoutMs: 200 };

/** A process started in the checkout; resolves to it once it accepts connections on `port`. */
const startProcess = async (argv, port) => (await startListening(argv, port, { cwd: root, pollMs: 100 })).child;

const stop = (child) =>
  new Promise((r) => {
    if (child.exitCode !== null) r();
    else {
      child.on('exit', r);
      child.kill('SIGTERM');
    }
  });

/** Writes raw bytes (in pieces, with pauses, if asked); resolves the parsed responses and whether the server closed. */
function exchange(port, pieces, { expect = 1, timeoutMs = 2000 } = {}) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    const parser = new Http1Parser({ kind: 'response', maxHeadBytes: 1 << 16 });
    const got = [];
    let closed = false;
    const done = () => {
      clearTimeout(t);
      s.destroy();
      resolve({ responses: got, closed });
    };
    const t = setTimeout(done, timeoutMs);
    s.on('data', (d) => {
      try {
        got.push(...parser.push(d));
      } catch {
        /* not our concern here */
      }
      if (got.length >= expect && expect > 0) done();
    });
    s.on('close', () => {
      closed = true;
      done();
    });
    s.on('error', () => {});
    (async () => {
      for (const p of [].concat(pieces)) {
        if (typeof p === 'number') await new Promise((r) => setTimeout(r, p));
        else if (!s.destroyed) s.write(p);
      }
    })();
  });
}

const post = (body, extra = '') =>
  `POST /filter HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;
const RELAY = post('{"relay":true,"n":1}');
const FILTERED = post('{"relay":false,"n":2}');
const getJson = async (port, path) =>
  JSON.parse((await exchange(port, `GET ${path} HTTP/1.1\r\nhost: x\r\n\r\n`)).responses[0].body.toString());
const postTo = (path, body) => post(body).replace('POST /filter ', `POST ${path} `);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// --- Guards against clients that would take the filter down (issue 17) ---
// A second filter per implementation with small guard limits, in front of a backend in this
// process: /slow... answers 204 after SLOW_MS, /slower... after SLOWER_MS (requests in flight can
// be counted at the backend), /big answers 200 with BIG_BYTES at once (a client that does not
// read them fills buffers). The idle timeout is longer than the send timeout: only the send
// timeout may cut a client off.
const GUARD = {
  ...LIMITS,
  idleTimeoutMs: 5000,
  backendTimeoutMs: 1000,
  maxConnections: 4,
  maxPipeline: 4,
  sendTimeoutMs: 1000,
};
const SLOW_MS = 100;
const SLOWER_MS = 400;
const BIG_BYTES = 64 << 10;

/** The backend: what it received by path, and close(). */
async function guardBackend() {
  const received = {};
  const big = Buffer.alloc(BIG_BYTES, 'x');
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received[req.url] = (received[req.url] || 0) + 1;
      if (req.url.startsWith('/slow'))
        setTimeout(() => res.writeHead(204).end(), req.url.startsWith('/slower') ? SLOWER_MS : SLOW_MS);
      else if (req.url === '/big')
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': big.length }).end(big);
      else res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: server.address().port,
    received,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** The process and its descendants (a cluster's workers, the VM under the Erlang script). */
function processTree(pid) {
  const parent = new Map();
  for (const d of readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
    try {
      // Fields after the command name, which is in parentheses and may hold spaces.
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      parent.set(Number(d), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      /* gone meanwhile */
    }
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i += 1) for (const [p, pp] of parent) if (pp === tree[i]) tree.push(p);
  return tree;
}
/** Sum over the processes of a /proc/<pid>/status memory field (VmRSS, VmHWM), in KiB. */
const memoryKb = (pids, field) =>
  pids.reduce((sum, p) => {
    try {
      return sum + Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(readFileSync(`/proc/${p}/status`, 'utf8'))[1]);
    } catch {
      return sum;
    }
  }, 0);
/** Resets the processes' peak RSS (VmHWM) to their current RSS (Linux clear_refs, value 5). */
const resetPeak = (pids) => {
  for (const p of pids) writeFileSync(`/proc/${p}/clear_refs`, '5');
};
/** The TCP state (hex, 01 = ESTABLISHED) of the server's side of a connection, or null once gone. */
function serverSideState(serverPort, clientPort) {
  const hex = (n) => n.toString(16).toUpperCase().padStart(4, '0');
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const l of readFileSync(f, 'utf8').split('\n').slice(1)) {
      const x = l.trim().split(/\s+/);
      if (x[1]?.endsWith(`:${hex(serverPort)}`) && x[2]?.endsWith(`:${hex(clientPort)}`)) return x[3];
    }
  }
  return null;
}
/** Polls `read` until it stops moving for `quietMs` or reaches `target`; resolves its last value. */
async function settle(read, { target, quietMs = 300, maxMs = 5000 }) {
  let last = read();
  let since = Date.now();
  for (const t0 = Date.now(); Date.now() - t0 < maxMs && last < target && Date.now() - since < quietMs;) {
    await sleep(50);
    const v = read();
    if (v !== last) [last, since] = [v, Date.now()];
  }
  return last;
}
/** A connected client socket that never reads (its readable side paused from the start). */
const neverReading = (port) =>
  new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => resolve(s));
    s.pause();
    s.on('error', reject);
  });

// Started once, by whichever hook needs it first: node:test starts this file's top-level before
// hooks without waiting for one another, so the guards' filters must wait for it themselves.
let guardBackendServer;
let guardBackendStarted;
const guardBackendUp = () =>
  (guardBackendStarted ??= guardBackend().then((s) => {
    guardBackendServer = s;
  }));
before(guardBackendUp);
after(() => guardBackendServer?.close());

for (const impl of filterImplementations(root)) {
  // Each test of an implementation needs its runtime (erl for the Erlang filter): where it is
  // missing the test skips, or fails under CI, saying which (test/lib/needs.mjs).
  const implTest = (name, fn) => test(`${impl.name}: ${name}`, (t) => (needs(t, impl.missing) ? undefined : fn(t)));
  const ctx = {};
  const setup = async (backendDelayMs) => {
    const bport = await freePort();
    const backend = await startProcess(
      ['node', 'servers/node/no-content.js', '--port', String(bport), '--delay-ms', String(backendDelayMs)],
      bport,
    );
    return { bport, backend };
  };

  before(async () => {
    if (impl.missing) return; // its tests say why
    Object.assign(ctx, await setup(30));
    ctx.port = await freePort();
    ctx.filter = await startProcess(
      impl.command({ port: ctx.port, backend: `127.0.0.1:${ctx.bport}`, ...LIMITS }),
      ctx.port,
    );
  });
  after(async () => {
    for (const c of [ctx.filter, ctx.backend]) if (c) await stop(c);
  });

  const conformance = [
    [
      'valid document to relay: backend answer relayed, backend reached',
      async () => {
        const before = (await getJson(ctx.bport, '/stats')).received;
        const { responses } = await exchange(ctx.port, RELAY);
        assert.equal(responses[0]?.status, 204);
        assert.equal((await getJson(ctx.bport, '/stats')).received, before + 1);
      },
    ],
    [
      'valid document filtered out: 204 at once, backend not reached',
      async () => {
        const before = (await getJson(ctx.bport, '/stats')).received;
        const { responses } = await exchange(ctx.port, FILTERED);
        assert.equal(responses[0]?.status, 204);
        assert.equal((await getJson(ctx.bport, '/stats')).received, before);
      },
    ],
    [
      'invalid JSON: 400, connection kept',
      async () => {
        const { responses } = await exchange(ctx.port, [post('{"relay":tru'), FILTERED], { expect: 2 });
        assert.deepEqual(
          responses.map((r) => r.status),
          [400, 204],
        );
      },
    ],
    [
      'body over the limit: 413',
      async () => {
        const { responses } = await exchange(ctx.port, post(`{"relay":false,"pad":"${'x'.repeat(2000)}"}`));
        assert.equal(responses[0]?.status, 413);
      },
    ],
    [
      'malformed request line: 400 and closed',
      async () => {
        const r = await exchange(ctx.port, 'THIS IS NOT HTTP\r\n\r\n');
        assert.equal(r.responses[0]?.status, 400);
      },
    ],
    [
      'malformed header: 400',
      async () => {
        const r = await exchange(ctx.port, 'POST / HTTP/1.1\r\nno colon here\r\ncontent-length: 2\r\n\r\n{}');
        assert.equal(r.responses[0]?.status, 400);
      },
    ],
    [
      'headers too large: 431',
      async () => {
        const r = await exchange(ctx.port, post('{}', `x-pad: ${'y'.repeat(2000)}\r\n`));
        assert.equal(r.responses[0]?.status, 431);
      },
    ],
    [
      'chunked body refused: 411',
      async () => {
        const r = await exchange(
          ctx.port,
          'POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n',
        );
        assert.equal(r.responses[0]?.status, 411);
      },
    ],
    [
      'headers sent too slowly: closed after the timeout',
      async () => {
        const t0 = Date.now();
        const r = await exchange(
          ctx.port,
          ['POST /filter HTTP/1.1\r\n', 100, 'host: x\r\n', 1200, 'content-length: 2\r\n\r\n{}'],
          { expect: 0, timeoutMs: 1500 },
        );
        assert.equal(r.closed, true);
        const waited = Date.now() - t0;
        assert.ok(
          waited >= LIMITS.headerTimeoutMs && waited < LIMITS.headerTimeoutMs + 80,
          `closed after ${waited} ms, not reset by the bytes that came meanwhile`,
        );
      },
    ],
    [
      'an idle keep-alive connection is closed after the idle timeout',
      async () => {
        const t0 = Date.now();
        const r = await exchange(ctx.port, FILTERED, { expect: 0, timeoutMs: 1500 });
        const waited = Date.now() - t0;
        assert.equal(r.responses[0]?.status, 204);
        assert.equal(r.closed, true);
        assert.ok(waited >= LIMITS.idleTimeoutMs && waited < LIMITS.idleTimeoutMs + 300, `closed after ${waited} ms`);
      },
    ],
    [
      'pipelined requests answered in order (the slow relayed one first)',
      async () => {
        const r = await exchange(
          ctx.port,
          RELAY + post('not json') + FILTERED + 'GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n',
          { expect: 4 },
        );
        assert.deepEqual(
          r.responses.map((x) => x.status),
          [204, 400, 204, 200],
        );
      },
    ],
  ];
  // What RFC 9112 (and 9110 on field values) has a server reject: the answer, then the
  // connection closed, and the filter still serving the next client.
  const doc = '{"relay":false}';
  const head = (line, fields) =>
    `${line}\r\n${fields}content-type: application/json\r\ncontent-length: ${doc.length}\r\n\r\n${doc}`;
  const rejected = [
    ['HTTP version 9.9: 505', head('POST /filter HTTP/9.9', 'host: x\r\n'), 505],
    ['HTTP version 2.0 on HTTP/1 framing: 505', head('POST /filter HTTP/2.0', 'host: x\r\n'), 505],
    ['version with two digits (HTTP/1.10): 400', head('POST /filter HTTP/1.10', 'host: x\r\n'), 400],
    ['no version (HTTP/0.9 style): 400', 'GET /healthz\r\n\r\n', 400],
    ['two spaces in the request line: 400', head('POST  /filter HTTP/1.1', 'host: x\r\n'), 400],
    ['NUL in the request target: 400', head('POST /fil\0ter HTTP/1.1', 'host: x\r\n'), 400],
    ['NUL in a header value: 400', head('POST /filter HTTP/1.1', 'host: x\r\nx-note: a\0b\r\n'), 400],
    [
      'other control character in a header value: 400',
      head('POST /filter HTTP/1.1', 'host: x\r\nx-note: a\x01b\r\n'),
      400,
    ],
    ['bare LF ending a header line: 400', head('POST /filter HTTP/1.1', 'host: x\nx-note: a\r\n'), 400],
    [
      'obs-fold (a header continued on the next line): 400',
      head('POST /filter HTTP/1.1', 'host: x\r\nx-note: a\r\n b\r\n'),
      400,
    ],
    ['whitespace between field name and colon: 400', head('POST /filter HTTP/1.1', 'host : x\r\n'), 400],
    ['empty field name: 400', head('POST /filter HTTP/1.1', 'host: x\r\n: b\r\n'), 400],
    ['HTTP/1.1 without Host: 400', head('POST /filter HTTP/1.1', ''), 400],
    ['two Host fields: 400', head('POST /filter HTTP/1.1', 'host: x\r\nhost: y\r\n'), 400],
    ['Host that is no authority: 400', head('POST /filter HTTP/1.1', 'host: a b\r\n'), 400],
    [
      'two different Content-Length fields: 400',
      head('POST /filter HTTP/1.1', `host: x\r\ncontent-length: ${doc.length + 1}\r\n`),
      400,
    ],
    [
      'Content-Length with a sign: 400',
      head('POST /filter HTTP/1.1', 'host: x\r\n').replace(/content-length: /, 'content-length: +'),
      400,
    ],
    // Request lines and fields the filters cannot handle (issue 17): the same answers from both.
    ['a tab between the parts of the request line: 400', head('POST\t/filter HTTP/1.1', 'host: x\r\n'), 400],
    ['a method that is no token: 400', head('PO(ST /filter HTTP/1.1', 'host: x\r\n'), 400],
    ['request line over the head limit: 431', head(`POST /${'a'.repeat(2000)} HTTP/1.1`, 'host: x\r\n'), 431],
    [
      'a header line with no colon (Host present): 400',
      head('POST /filter HTTP/1.1', 'host: x\r\nno colon here\r\n'),
      400,
    ],
    ['whitespace before the first header line: 400', head('POST /filter HTTP/1.1', ' host: x\r\n'), 400],
    ['a byte over 0x7f in a field name: 400', head('POST /filter HTTP/1.1', 'host: x\r\nx\xe9: 1\r\n'), 400],
    ['a field name that is no token: 400', head('POST /filter HTTP/1.1', 'host: x\r\nx(y): 1\r\n'), 400],
    [
      'one header over the head limit: 431',
      head('POST /filter HTTP/1.1', `host: x\r\nx-pad: ${'y'.repeat(2000)}\r\n`),
      431,
    ],
    [
      'a header line over the head limit with no end: 431',
      `POST /filter HTTP/1.1\r\nhost: x\r\nx-pad: ${'y'.repeat(2000)}`,
      431,
    ],
    ['Transfer-Encoding: gzip: 411', head('POST /filter HTTP/1.1', 'host: x\r\ntransfer-encoding: gzip\r\n'), 411],
    [
      'Transfer-Encoding: identity: 411',
      head('POST /filter HTTP/1.1', 'host: x\r\ntransfer-encoding: identity\r\n'),
      411,
    ],
    [
      'Transfer-Encoding with an empty value: 411',
      head('POST /filter HTTP/1.1', 'host: x\r\ntransfer-encoding:\r\n'),
      411,
    ],
    [
      'Transfer-Encoding: CHUNKED in capitals, with Content-Length: 411',
      head('POST /filter HTTP/1.1', 'host: x\r\nTransfer-Encoding: CHUNKED\r\n'),
      411,
    ],
    [
      'Transfer-Encoding: chunked, identity after Content-Length: 411',
      `POST /filter HTTP/1.1\r\nhost: x\r\ncontent-length: ${doc.length}\r\ntransfer-encoding: chunked, identity\r\n\r\n${doc}`,
      411,
    ],
    ['Transfer-Encoding in HTTP/1.0: 411', head('POST /filter HTTP/1.0', 'transfer-encoding: chunked\r\n'), 411],
  ];
  for (const [name, bytes, status] of rejected) {
    conformance.push([
      `${name}, closed, still serving`,
      async () => {
        const r = await exchange(ctx.port, bytes, { expect: 2 });
        assert.deepEqual(
          r.responses.map((x) => x.status),
          [status],
        );
        assert.equal(r.closed, true);
        assert.equal((await exchange(ctx.port, FILTERED)).responses[0]?.status, 204);
      },
    ]);
  }
  conformance.push([
    'a target the filter does not interpret (GET //[): 405, the connection kept',
    async () => {
      const r = await exchange(ctx.port, `GET //[ HTTP/1.1\r\nhost: x\r\n\r\n${FILTERED}`, { expect: 2 });
      assert.deepEqual(
        r.responses.map((x) => x.status),
        [405, 204],
      );
    },
  ]);
  conformance.push([
    'accepted as RFC 9112 allows: HTTP/1.0 without Host, HTTP/1.2 read as 1.1, obs-text in a value',
    async () => {
      const r = await exchange(
        ctx.port,
        [
          head('POST /filter HTTP/1.0', 'connection: keep-alive\r\n'),
          head('POST /filter HTTP/1.2', 'host: x\r\nx-note: caf\xe9\r\n'),
        ].join(''),
        { expect: 2 },
      );
      assert.deepEqual(
        r.responses.map((x) => x.status),
        [204, 204],
      );
    },
  ]);
  for (const [name, fn] of conformance) implTest(name, fn);

  implTest(`backend down: 502; backend slower than the timeout: 504`, async () => {
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

  // A backend connection that carried many relays for one client still serves the next: the
  // Erlang filter's backend sockets deliver their answers as messages, 100 before they must be
  // re-armed (its ?ACTIVE), and one handed back to the pool unarmed after exactly 100 would leave
  // the next client waiting for its answer until the backend timeout (504).
  implTest(`a backend connection reused after 100 relays still serves the next client`, async () => {
    const fast = await setup(0);
    const port = await freePort();
    const filter = await startProcess(impl.command({ port, backend: `127.0.0.1:${fast.bport}`, ...LIMITS }), port);
    try {
      const first = await exchange(port, Array(100).fill(RELAY), { expect: 100, timeoutMs: 10000 });
      assert.deepEqual([...new Set(first.responses.map((r) => r.status))], [204], `${first.responses.length} answers`);
      assert.equal(first.responses.length, 100);
      await new Promise((r) => setTimeout(r, 300)); // the first client's backend connection back in the pool
      for (let i = 0; i < 3; i += 1)
        assert.equal((await exchange(port, RELAY)).responses[0]?.status, 204, `next client ${i + 1}`);
    } finally {
      for (const c of [filter, fast.backend]) await stop(c);
    }
  });

  // The guard limits, on a filter of their own (GUARD) in front of the in-process backend.
  const guard = {};
  before(async () => {
    if (impl.missing) return; // its tests say why
    await guardBackendUp();
    guard.port = await freePort();
    guard.filter = await startProcess(
      impl.command({ port: guard.port, backend: `127.0.0.1:${guardBackendServer.port}`, ...GUARD }),
      guard.port,
    );
  });
  after(async () => {
    if (guard.filter) await stop(guard.filter);
  });

  // Each filter process admits GUARD.maxConnections clients; one more is answered 503 and
  // closed at once. With workers, the cap is per worker: however the connections were spread,
  // no more than cap x processes are served, and the ones beyond are refused.
  implTest(`connections over the cap: 503 and closed at once, the filter still serving`, async () => {
    const total = GUARD.maxConnections * impl.processes + 2;
    const held = [];
    const refused = [];
    for (let i = 0; i < total; i += 1) {
      const s = net.connect(guard.port, '127.0.0.1');
      const parser = new Http1Parser({ kind: 'response' });
      const outcome = await new Promise((resolve) => {
        const got = [];
        const t = setTimeout(() => resolve({ got, closed: false }), 1000);
        s.on('data', (d) => {
          got.push(...parser.push(d));
          if (got[0]?.status === 204) {
            clearTimeout(t);
            resolve({ got, closed: false });
          }
        });
        s.on('close', () => {
          clearTimeout(t);
          resolve({ got, closed: true });
        });
        s.on('error', () => {});
        s.write(FILTERED);
      });
      if (outcome.got[0]?.status === 204 && !outcome.closed) held.push(s);
      else refused.push(outcome);
    }
    try {
      assert.ok(
        held.length <= GUARD.maxConnections * impl.processes,
        `${held.length} connections served, over the cap`,
      );
      assert.ok(held.length >= GUARD.maxConnections, `only ${held.length} connections served`);
      assert.equal(refused.length, total - held.length);
      for (const r of refused) {
        assert.equal(r.closed, true, 'a refused connection is closed');
        assert.deepEqual(
          r.got.map((x) => x.status),
          [503],
        );
      }
    } finally {
      for (const s of held) s.destroy();
    }
    // The held ones gone, new clients are served again by every process (each may take a moment
    // to see its connections close). A cluster hands fresh connections to its workers in turn, so
    // 2 x processes answers in a row reach each worker twice: the next test finds none at its cap.
    const wanted = 2 * impl.processes;
    let inARow = 0;
    for (let i = 0; i < 40 && inARow < wanted; i += 1) {
      const status = (await exchange(guard.port, FILTERED)).responses[0]?.status;
      inARow = status === 204 ? inARow + 1 : 0;
      if (status !== 204) await sleep(50);
    }
    assert.equal(inARow, wanted, `${inARow} fresh clients served in a row after the held ones closed`);
  });

  // A pipelining client gets at most GUARD.maxPipeline requests in flight (relayed to the slow
  // backend at once); the others wait in the socket until answers go out. The Erlang filter
  // answers a connection's requests one at a time.
  implTest(`pipelined requests: at most max-pipeline in flight per connection`, async () => {
    const count = () => guardBackendServer.received['/slow'] || 0;
    const before0 = count();
    const n = 12;
    const answers = exchange(guard.port, postTo('/slow', '{"relay":true}').repeat(n), {
      expect: GUARD.maxPipeline + 1,
      timeoutMs: 3000,
    });
    // Counted half a backend delay after the first request arrived: no answer has gone out yet.
    for (let i = 0; i < 100 && count() === before0; i += 1) await sleep(5);
    await sleep(SLOW_MS / 2);
    const inFlight = count() - before0;
    const r = await answers;
    assert.ok(
      inFlight >= 1 && inFlight <= GUARD.maxPipeline,
      `${inFlight} of ${n} pipelined requests in flight at once (answers: ${r.responses.map((x) => x.status).join(' ') || 'none'})`,
    );
    assert.deepEqual(
      r.responses.slice(0, GUARD.maxPipeline + 1).map((x) => x.status),
      Array(GUARD.maxPipeline + 1).fill(204),
      'the next ones dispatched as answers go out',
    );
  });

  // A client that pipelines requests with big answers and never reads: the filter must stop
  // reading and dispatching while its writes are pending, or it buffers every answer. The
  // filter's peak RSS (all its processes) is measured against its RSS before. The peak also
  // holds answers already dead that the garbage collector has not freed yet: for the Node filter
  // 0 to 12 MiB with the same 63 answers relayed, as V8's young generation was sized or the
  // parser made less garbage (docs/journal/json-filter.md). So the load is one whose buffering would be
  // ten times the bound, and the answers dispatched are counted too.
  implTest(`a client that never reads: the filter's memory stays bounded`, async (t) => {
    const n = 4000; // 4000 x 64 KiB = 250 MiB of answers
    const count = () => guardBackendServer.received['/big'] || 0;
    // Warmed up by clients that read the same answers (one per process: the cluster hands
    // connections to its workers in turn): the heap and allocator have grown to the work itself,
    // and what the peak adds is what the client that never reads costs.
    for (let i = 0; i < impl.processes; i += 1) {
      const warm = await exchange(guard.port, postTo('/big', '{"relay":true}').repeat(100), {
        expect: 100,
        timeoutMs: 5000,
      });
      assert.equal(warm.responses.length, 100);
    }
    const pids = processTree(guard.filter.pid);
    resetPeak(pids);
    const rssBefore = memoryKb(pids, 'VmRSS');
    const before0 = count();
    const s = await neverReading(guard.port);
    s.on('error', () => {});
    s.write(postTo('/big', '{"relay":true}').repeat(n));
    const relayed = await settle(() => count() - before0, { target: n });
    const growthMb = (memoryKb(pids, 'VmHWM') - rssBefore) / 1024;
    s.destroy();
    t.diagnostic(
      `${impl.name}: ${relayed} of ${n} answers of ${BIG_BYTES >> 10} KiB relayed; RSS ${(rssBefore / 1024).toFixed(1)} MiB before, peak +${growthMb.toFixed(1)} MiB`,
    );
    assert.ok(
      growthMb < 25,
      `the filter grew by ${growthMb.toFixed(1)} MiB for a client that reads nothing (${relayed} answers relayed)`,
    );
    // The socket buffers on both sides hold a few MiB (about 63 answers here); the rest of the
    // requests must wait unread.
    assert.ok(relayed <= 200, `${relayed} of ${n} requests dispatched to the backend for a client that reads nothing`);
  });

  // The same client is cut off once no byte could be written for GUARD.sendTimeoutMs: its
  // side of the connection on the filter leaves ESTABLISHED (closed, or FIN_WAIT1 with
  // the unread answers), the process and socket freed.
  implTest(`a client that never reads is cut off after the send timeout`, async () => {
    const s = await neverReading(guard.port);
    s.on('error', () => {});
    const t0 = Date.now();
    s.write(postTo('/big', '{"relay":true}').repeat(200));
    let state = serverSideState(guard.port, s.localPort);
    while (state === '01' && Date.now() - t0 < GUARD.sendTimeoutMs + 2000) {
      await sleep(50);
      state = serverSideState(guard.port, s.localPort);
    }
    const waited = Date.now() - t0;
    s.destroy();
    assert.notEqual(state, '01', `still ESTABLISHED after ${waited} ms`);
    assert.ok(waited >= GUARD.sendTimeoutMs && waited < GUARD.sendTimeoutMs + 1500, `cut off after ${waited} ms`);
  });

  implTest(`fuzz: 3000 random and mutated requests, then still correct, alive, no leaked connections`, async () => {
    const rand = seededRandom(`fuzz:${impl.name}`);
    const seeds = [RELAY, FILTERED, post('[1,2,3]'), 'GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n'];
    const mutate = (s) => {
      const b = Buffer.from(s);
      const kind = Math.floor(rand() * 5);
      if (kind === 0)
        return Buffer.from(Array.from({ length: Math.floor(rand() * 300) }, () => Math.floor(rand() * 256)));
      if (kind === 1) return b.subarray(0, Math.floor(rand() * b.length)); // truncated
      const n = 1 + Math.floor(rand() * 8);
      for (let i = 0; i < n; i += 1) b[Math.floor(rand() * b.length)] = Math.floor(rand() * 256); // flipped bytes
      if (kind === 3) return Buffer.concat([b, b]); // pipelined twin
      if (kind === 4)
        return Buffer.from(s.replace(/content-length: \d+/, `content-length: ${Math.floor(rand() * 99999)}`));
      return b;
    };
    // A leak is a server-side connection on the filter's port that outlives its client:
    // still ESTABLISHED (01) or CLOSE_WAIT (08) once every client has closed.
    const hex = `:${ctx.port.toString(16).toUpperCase().padStart(4, '0')}`;
    const open = () =>
      ['/proc/net/tcp', '/proc/net/tcp6']
        .flatMap((f) => readFileSync(f, 'utf8').split('\n').slice(1))
        .map((l) => l.trim().split(/\s+/))
        .filter((f) => f[1]?.endsWith(hex) && (f[3] === '01' || f[3] === '08')).length;
    const jobs = Array.from({ length: 3000 }, () => mutate(seeds[Math.floor(rand() * seeds.length)]));
    // 250 connections at a time; a client gives up after 150 ms (a truncated request gets no answer).
    for (let i = 0; i < jobs.length; i += 250) {
      await Promise.all(
        jobs.slice(i, i + 250).map((bytes) => exchange(ctx.port, bytes, { expect: 1, timeoutMs: 150 })),
      );
    }
    assert.equal(ctx.filter.exitCode, null, 'still running');
    const r = await exchange(ctx.port, RELAY + FILTERED, { expect: 2 });
    assert.deepEqual(
      r.responses.map((x) => x.status),
      [204, 204],
    );
    let left = open();
    for (let i = 0; i < 30 && left > 0; i += 1) {
      await new Promise((res) => setTimeout(res, 100));
      left = open();
    }
    assert.equal(left, 0, `${left} server-side connections left on port ${ctx.port}`);
  });
}

// The Node filter's backend pool (lib/backend-pool.js): with every connection busy, callers wait
// in a list that is bounded (one more: 503 at once) and has a deadline (503 once it passes; the
// request never reaches the backend). One connection here, to the backend's slow paths.
const settled = (p, ms) =>
  Promise.race([
    p.then(
      (v) => ({ value: v }),
      (e) => ({ error: e }),
    ),
    sleep(ms).then(() => 'pending'),
  ]);

test('backend pool: the waiting list is bounded: one more caller gets 503 at once', async () => {
  const pool = new BackendPool({
    port: guardBackendServer.port,
    max: 1,
    timeoutMs: 1000,
    maxWaiting: 2,
    waitTimeoutMs: 5000,
  });
  try {
    const calls = Array.from({ length: 4 }, () => pool.request('POST', '/slow/pool-bound', Buffer.from('{}')));
    const fourth = await settled(calls[3], 50);
    assert.notEqual(fourth, 'pending', 'the caller over the bound still waits');
    assert.ok(fourth.error instanceof HttpError && fourth.error.status === 503, `got ${JSON.stringify(fourth)}`);
    const rest = await Promise.all(calls.slice(0, 3));
    assert.deepEqual(
      rest.map((r) => r.status),
      [204, 204, 204],
      'the ones within the bound are served in turn',
    );
  } finally {
    pool.close();
  }
});

test('backend pool: a waiting caller gets 503 when its deadline passes, and is never sent', async () => {
  const path = '/slower/pool-deadline';
  const pool = new BackendPool({
    port: guardBackendServer.port,
    max: 1,
    timeoutMs: 1000,
    maxWaiting: 10,
    waitTimeoutMs: 100,
  });
  try {
    const t0 = performance.now();
    const first = pool.request('POST', path, Buffer.from('{}'));
    const second = pool.request('POST', path, Buffer.from('{}'));
    const r = await settled(second, SLOWER_MS - 100);
    const waited = performance.now() - t0;
    assert.notEqual(r, 'pending', 'the waiting caller still waits past its deadline');
    assert.ok(r.error instanceof HttpError && r.error.status === 503, `got ${JSON.stringify(r)}`);
    // libuv starts a timer from the loop's cached millisecond clock, which can be up to 1 ms
    // behind: a 100 ms timer may fire 99.x ms after t0 (one CI run measured 99 ms).
    assert.ok(waited >= 99, `answered after ${waited.toFixed(1)} ms, before its deadline`);
    assert.equal((await first).status, 204);
    await sleep(50);
    assert.equal(guardBackendServer.received[path], 1, 'the expired caller reached the backend');
  } finally {
    pool.close();
  }
});

test('node filter broken to order (--fault): relay-all relays a filtered document, error-every-20 answers 500 to the 20th, an unknown fault is refused', async () => {
  const bport = await freePort();
  const backend = await startProcess(
    ['node', 'servers/node/no-content.js', '--port', String(bport), '--delay-ms', '1'],
    bport,
  );
  const started = [backend];
  try {
    const start = async (fault) => {
      const port = await freePort();
      started.push(
        await startProcess(
          [
            'node',
            'servers/node/json-filter.js',
            '--port',
            String(port),
            '--backend',
            `127.0.0.1:${bport}`,
            '--fault',
            fault,
          ],
          port,
        ),
      );
      return port;
    };
    const relayAll = await start('relay-all');
    const before = (await getJson(bport, '/stats')).received;
    assert.equal((await exchange(relayAll, FILTERED)).responses[0]?.status, 204);
    assert.equal(
      (await getJson(bport, '/stats')).received,
      before + 1,
      'a document asking not to be relayed reached the backend',
    );
    const failing = await start('error-every-20');
    const statuses = (await exchange(failing, Array(20).fill(FILTERED), { expect: 20 })).responses.map((r) => r.status);
    assert.deepEqual(statuses, [...Array(19).fill(204), 500]);
    assert.equal((await getJson(failing, '/stats')).faults, 1);
    const refused = spawnSync(
      'node',
      ['servers/node/json-filter.js', '--port', '1', '--backend', '127.0.0.1:2', '--fault', 'sometimes'],
      { cwd: root, encoding: 'utf8' },
    );
    assert.equal(refused.status, 2);
    assert.match(refused.stderr, /--fault is one of none, relay-all, error-every-20, got 'sometimes'/);
  } finally {
    for (const c of started) await stop(c);
  }
});

test('lab/profiles/ab.mjs refuses bad input before it loads anything, naming what is wrong', () => {
  const ab = fileURLToPath(new URL('../lab/profiles/ab.mjs', import.meta.url));
  const run = (args, env = { LAB_BODY: 'body.json' }) =>
    spawnSync(process.execPath, [ab, ...args], {
      env: { PATH: process.env.PATH, ...env },
      encoding: 'utf8',
      timeout: 10_000,
    });
  const sleeper = spawn('sleep', ['30']); // in this process group, not one of its own
  try {
    const cases = [
      [['3', '21001', '1'], 'five or six arguments'],
      [['3', '21001', 'x', '21004', '1'], "'x' is not a whole number"],
      [['3', '21001', '-1', '21004', '1'], "'-1' is not a whole number"],
      [['3', '99999', '1', '21004', '1'], '99999 is not a port'],
      [['3', '21001', String(sleeper.pid), '21004', String(sleeper.pid)], `process ${sleeper.pid} is in process group`],
    ];
    for (const [args, message] of cases) {
      const r = run(args);
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, new RegExp(message.replace(/[()]/g, '\\$&')));
    }
    assert.match(run(['3', '21001', '1', '21004', '1'], {}).stderr, /LAB_BODY names the document/);
  } finally {
    sleeper.kill();
  }
});

test('lab/profiles/floors.mjs refuses a bad number of rounds before it starts anything', () => {
  const floors = fileURLToPath(new URL('../lab/profiles/floors.mjs', import.meta.url));
  for (const args of [['0'], ['x'], ['-3'], ['100'], ['3', '4'], ['3; ls']]) {
    const r = spawnSync(process.execPath, [floors, ...args], {
      env: { PATH: process.env.PATH },
      encoding: 'utf8',
      timeout: 10_000,
    });
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /ROUNDS is a whole number from 1 to 99/);
  }
});

test("two servers loaded at once (two-at-once.mjs): each one's CPU per relayed request over the same seconds, the order swapped every round", async (t) => {
  if (needs(t, notRun('wrk', spawnSync('wrk', ['-v'])))) return; // wrk -v exits 1
  const { twoAtOnce } = await import('../lab/bench/two-at-once.mjs');
  // Two servers answering 204, each leading a process group of its own, one burning CPU per request.
  // The burn spins on the process's own CPU clock, as the filter's --burn-us does: on the wall
  // clock, a server preempted mid-spin would burn less CPU than asked.
  const code = (burnUs) =>
    `const cpu = () => { const u = process.cpuUsage(); return u.user + u.system; }; require('http').createServer((q, s) => { q.resume(); q.on('end', () => { const e = cpu() + ${burnUs}; while (cpu() < e); s.writeHead(204); s.end(); }); }).listen(+process.argv[1], '127.0.0.1', () => console.log('up'));`;
  const ports = [await freePort(), await freePort()];
  const servers = [200, 0].map((burn, i) =>
    spawn(process.execPath, ['-e', code(burn), String(ports[i])], {
      detached: true,
      stdio: ['ignore', 'pipe', 'ignore'],
    }),
  );
  try {
    await Promise.all(
      servers.map(
        (s) =>
          new Promise((resolve, reject) => {
            s.stdout.once('data', resolve);
            s.once('exit', (code) => reject(new Error(`a test server exited (${code})`)));
          }),
      ),
    );
    const dir = mkdtempSync(join(tmpdir(), 'two-at-once-'));
    writeFileSync(join(dir, 'body.json'), '{"relay": true}');
    const pair = ['slow', 'fast'].map((name, i) => ({
      name,
      url: `http://127.0.0.1:${ports[i]}/`,
      group: servers[i].pid,
    }));
    const rows = await twoAtOnce(process.env, pair, {
      rounds: 2,
      connections: 4,
      seconds: 1,
      warmS: 1,
      body: join(dir, 'body.json'),
    });
    rmSync(dir, { recursive: true });
    assert.deepEqual(
      rows.map((r) => r.first),
      ['slow', 'fast'],
      'the order swapped every round',
    );
    for (const r of rows) {
      assert.ok(
        r.relayed.every((n) => n > 0),
        `round ${r.round}: both answered`,
      );
      assert.equal(r.errors, 0);
      assert.equal(r.ratio, r.costUs[0] / r.costUs[1]);
      // 200 us burnt per request on top of what a request costs the other.
      assert.ok(
        r.costUs[0] - r.costUs[1] > 150,
        `round ${r.round}: ${r.costUs.map((x) => x.toFixed(0)).join(' vs ')} us`,
      );
    }
  } finally {
    for (const s of servers) process.kill(-s.pid, 'SIGKILL');
  }
});
