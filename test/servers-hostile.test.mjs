// The lab's Node servers (app.js, hello.js, no-content.js) against clients that misbehave
// (issue 17, "servers that survive their clients"): requests they cannot handle get a 4xx and
// they keep serving; a client names only a bounded set of well-formed lab cases; the
// application's queue is bounded and forgets the clients that left it.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { freePort, startListening } from './lib/listening.mjs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const started = []; // every server this file started, stopped at its end whatever happened

/** Starts servers/node/<script> on a free port; resolves once it accepts connections. */
async function start(script, args = []) {
  const port = await freePort();
  const { child, out } = await startListening(
    ['node', `servers/node/${script}`, '--port', String(port), ...args],
    port,
    { cwd: root },
  );
  started.push({ child });
  return { port, child, out, error: () => out().match(/^\w*Error\b.*$/m)?.[0] ?? 'no error printed' };
}

const stop = (srv) =>
  new Promise((r) => {
    if (!srv || srv.child.exitCode !== null || srv.child.signalCode !== null) r();
    else {
      srv.child.on('exit', r);
      srv.child.kill('SIGTERM');
    }
  });

/** A chunked body once its last chunk has come, else null. */
function dechunk(text) {
  let out = '';
  for (let at = 0; ;) {
    const eol = text.indexOf('\r\n', at);
    if (eol < 0) return null;
    const size = parseInt(text.slice(at, eol), 16);
    if (size === 0) return out;
    if (text.length < eol + 2 + size + 2) return null;
    out += text.slice(eol + 2, eol + 2 + size);
    at = eol + 2 + size + 2;
  }
}

/** The first response in `text` once it is complete (a HEAD's without its body): status, headers, body; else null. */
function firstResponse(text, closed, head = false) {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const [line, ...fields] = text.slice(0, end).split('\r\n');
  const headers = Object.fromEntries(
    fields.map((f) => [f.slice(0, f.indexOf(':')).toLowerCase(), f.slice(f.indexOf(':') + 1).trim()]),
  );
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(line)?.[1]);
  const body = text.slice(end + 4);
  const length = headers['content-length'] === undefined ? null : Number(headers['content-length']);
  if (head) return { status, headers, body: '' };
  if (headers['transfer-encoding'] === 'chunked') {
    const chunked = dechunk(body);
    return chunked === null ? null : { status, headers, body: chunked };
  }
  if (length === null && status !== 204 && status !== 304 && !closed) return null;
  if (length !== null && Buffer.byteLength(body) < length) return null;
  return { status, headers, body: length === null ? body : body.slice(0, length) };
}

/**
 * Writes raw bytes on a new connection. `reply` resolves the first response (status null when
 * the connection closed or timed out without one) and how long it took; `socket` is the client.
 */
function send(port, bytes, { timeoutMs = 2000 } = {}) {
  const socket = net.connect(port, '127.0.0.1');
  const t0 = Date.now();
  const head = bytes.startsWith('HEAD ');
  const reply = new Promise((resolve) => {
    let text = '';
    let settled = false;
    const done = (closed) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const r = firstResponse(text, closed, head);
      resolve({
        status: r?.status ?? null,
        headers: r?.headers ?? {},
        body: r?.body ?? '',
        text,
        closed,
        ms: Date.now() - t0,
      });
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.on('connect', () => socket.write(bytes));
    socket.on('data', (d) => {
      text += d.toString('latin1');
      if (firstResponse(text, false, head)) done(false);
    });
    socket.on('close', () => done(true));
    socket.on('error', () => {});
  });
  return { socket, reply };
}

const request = (target, { method = 'GET', kase, headers = '' } = {}) =>
  `${method} ${target} HTTP/1.1\r\nhost: x\r\n${kase === undefined ? '' : `x-lab-case: ${kase}\r\n`}${headers}\r\n`;

async function exchange(port, bytes, opts) {
  const { socket, reply } = send(port, bytes, opts);
  const r = await reply;
  socket.destroy();
  return r;
}

const get = (port, target, kase) => exchange(port, request(target, { kase }));
const counts = async (port) => JSON.parse((await get(port, '/counts')).body);
const metricsText = async (port) => (await get(port, '/metrics')).body;
const sample = (text, name) =>
  Number(new RegExp(`^${name.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);

/** Sends requests pipelined on one connection; resolves their statuses, in order. */
function pipelined(port, requests, timeoutMs = 3000) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(requests.join('')));
    let text = '';
    const statuses = () => [...text.matchAll(/^HTTP\/1\.1 (\d{3}) /gm)].map((m) => Number(m[1]));
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(statuses());
    };
    const timer = setTimeout(done, timeoutMs);
    socket.on('data', (d) => {
      text += d;
      if (statuses().length >= requests.length) done();
    });
    socket.on('close', done);
    socket.on('error', () => {});
  });
}

/** Many requests, pipelined on four connections at once; resolves their statuses. */
async function fill(port, requests) {
  const share = Math.ceil(requests.length / 4);
  const parts = [0, 1, 2, 3].map((i) => requests.slice(i * share, (i + 1) * share));
  return (await Promise.all(parts.map((part) => pipelined(port, part)))).flat();
}

/** Waits (`withinMs` at most) until the app's queue holds `n`; returns the last length seen. */
async function queueLength(port, n, withinMs = 1000) {
  const until = Date.now() + withinMs;
  let seen;
  do {
    seen = sample(await metricsText(port), 'lab_app_queue_length');
    if (seen === n) return seen;
    await sleep(20);
  } while (Date.now() < until);
  return seen;
}

// Requests no server of the lab can handle, each with the answer it must get; the same for all three.
const HOSTILE = [
  ['a target that is no path (GET //[)', request('//['), 400],
  ['a target with a bare %', request('/a%zz'), 400],
  ['asterisk-form (OPTIONS *)', request('*', { method: 'OPTIONS' }), 400],
  ['absolute-form', request('http://x/hare'), 400],
  ['CONNECT', 'CONNECT x:443 HTTP/1.1\r\nhost: x:443\r\n\r\n', 400],
  ['a header over 16 KiB', request('/', { headers: `x-big: ${'a'.repeat(20_000)}\r\n` }), 431],
  ['a control character in a header', request('/', { headers: 'x-note: a\x01b\r\n' }), 400],
  ['HTTP/1.1 without Host', 'GET / HTTP/1.1\r\n\r\n', 400],
  ['not HTTP at all', 'HELLO THERE\r\n\r\n', 400],
];

/** Every hostile request gets its 4xx, and a well-formed request on a new connection after it is served. */
async function survives(srv, followUp) {
  for (const [what, bytes, status] of HOSTILE) {
    const r = await exchange(srv.port, bytes);
    if (r.status === null) await sleep(100); // a server that died: let its exit be seen
    const died = srv.child.exitCode === null ? '' : `; the server died (${srv.error()})`;
    assert.equal(
      r.status,
      status,
      `${what}: answered ${JSON.stringify(r.text.slice(0, 80))}${r.closed ? ' (closed)' : ''}${died}`,
    );
    assert.equal(srv.child.exitCode, null, `${what}: the server died (${srv.error()})`);
    assert.equal(
      (await get(srv.port, followUp)).status,
      200,
      `${what}: the next request was not served (${srv.error()})`,
    );
  }
}

let app; // one worker: the queue tests need it
let appCases;
let hello;
let nc;
before(async () => {
  [app, appCases, hello, nc] = await Promise.all([
    start('app.js', ['--workers', '1', '--resources', 'fast=0:0,slow=600:0']),
    start('app.js', ['--resources', 'fast=0:0']),
    start('hello.js'),
    start('no-content.js', ['--delay-ms', '0']),
  ]);
});
after(() => Promise.all(started.map(stop)));

describe('app.js', () => {
  test('app.js: GET //[ and other requests it cannot handle get a 4xx, and it keeps serving', async () => {
    await survives(app, '/healthz');
    assert.equal((await get(app.port, '/fast', 'after-hostile')).status, 200);
  });

  test('app.js: x-lab-case __proto__ gets 400 and pollutes nothing: a new case counts from 1', async () => {
    assert.equal((await get(app.port, '/fast', '__proto__')).status, 400, `no 400 (${app.error()})`);
    assert.equal((await get(app.port, '/fast', 'fresh-after-proto')).status, 200, app.error());
    const c = await counts(app.port);
    assert.deepEqual(c['fresh-after-proto'], { fast: 1 });
    assert.equal(Object.hasOwn(c, '__proto__'), false);
  });

  test("app.js: a malformed x-lab-case gets 400; the lab's case ids are counted as before", async () => {
    const bad = ['x'.repeat(65), '../etc', '-lead', 'sp ace', 'a/b', 'caf\xe9', '__defineGetter__'];
    for (const kase of bad) assert.equal((await get(app.port, '/fast', kase)).status, 400, `x-lab-case: ${kase}`);
    const twice = await exchange(
      app.port,
      request('/fast', { kase: 'b400-fill', headers: 'x-lab-case: envoy-1s\r\n' }),
    );
    assert.equal(twice.status, 400, 'two x-lab-case fields');
    // Names an Object.prototype also has are cases like any other: counted, nothing else touched.
    const lab = [
      'b400-fill',
      'envoy-1s',
      'hare-3',
      'none-stress',
      'cpu0.5-mem256m',
      'json-filter-node-cluster-closed',
      'constructor',
      'toString',
    ];
    for (const kase of lab) assert.equal((await get(app.port, '/fast', kase)).status, 200, `x-lab-case: ${kase}`);
    assert.equal((await get(app.port, '/fast')).status, 200, 'no x-lab-case at all');
    const c = await counts(app.port);
    for (const kase of lab) assert.deepEqual(Object.hasOwn(c, kase) && c[kase], { fast: 1 }, kase);
    for (const kase of bad) assert.equal(Object.hasOwn(c, kase), false, kase);
    assert.ok(c[''].fast >= 1, 'requests without a case count under ""');
  });

  test('app.js: 404, 405 and HEAD as before', async () => {
    assert.equal((await get(app.port, '/nope', 'old-ways')).status, 404);
    const post = await exchange(
      app.port,
      request('/fast', { method: 'POST', kase: 'old-ways', headers: 'content-length: 0\r\n' }),
    );
    assert.equal(post.status, 405);
    assert.equal(post.headers.allow, 'GET, HEAD');
    const head = await exchange(app.port, request('/fast', { method: 'HEAD', kase: 'old-ways' }));
    assert.equal(head.status, 200);
    assert.equal(head.headers['cache-control'], 'max-age=0');
    assert.equal((await get(app.port, '/healthz')).body, 'ok\n');
  });

  test('app.js: a queued request whose client left is never served, and the next one does not wait for it', async () => {
    const keeper = send(app.port, request('/slow', { kase: 'keeper' }));
    await sleep(50); // the keeper takes the one worker
    const quitters = [1, 2, 3].map(() => send(app.port, request('/slow', { kase: 'quitter' })));
    assert.equal(await queueLength(app.port, 3), 3, 'three quitters queued');
    // Two reset their connections; one closes its side and is gone as well (Node's server does
    // not keep half-open connections).
    quitters[0].socket.end();
    for (const q of quitters.slice(1)) q.socket.destroy();
    // At once: the keeper (600 ms) still has the worker, so only leaving can empty the queue.
    assert.equal(await queueLength(app.port, 0, 200), 0, 'the quitters leave the queue when their clients do');
    const later = await get(app.port, '/fast', 'later');
    assert.equal(later.status, 200);
    assert.ok(later.ms < 1000, `the next request waited ${later.ms} ms: the quitters took the worker`);
    assert.equal((await keeper.reply).status, 200);
    keeper.socket.destroy();
    await sleep(100);
    const c = await counts(app.port);
    assert.equal(c.quitter, undefined, `the quitters were served: ${JSON.stringify(c.quitter)}`);
    assert.deepEqual(c.keeper, { slow: 1 });
    assert.match(await metricsText(app.port), /^lab_app_abandoned_total\{case="quitter"\} 3$/m);
  });

  test('app.js: the default queue holds more than the stress suite (100 users); pipelined requests a client drops leave it too', async () => {
    const n = 150;
    const piped = send(app.port, request('/slow', { kase: 'piped' }).repeat(n));
    assert.equal(await queueLength(app.port, n - 1), n - 1, 'all but one queued, none refused');
    piped.socket.destroy();
    assert.equal(await queueLength(app.port, 0, 200), 0, 'the dropped pipeline left the queue');
    const later = await get(app.port, '/fast', 'after-pipe');
    assert.equal(later.status, 200);
    assert.ok(later.ms < 1000, `waited ${later.ms} ms`);
    const m = await metricsText(app.port);
    assert.equal(sample(m, 'lab_app_requests_total{case="piped",resource="slow",status="503"}'), NaN, 'none refused');
  });
});

describe('app.js --queue', () => {
  test('app.js: --queue 2: a request beyond a full queue gets 503 at once, counted in /metrics', async () => {
    const appQueue2 = await start('app.js', ['--workers', '1', '--queue', '2', '--resources', 'slow=300:0']);
    const held = [1, 2, 3].map(() => send(appQueue2.port, request('/slow', { kase: 'q2' })));
    assert.equal(await queueLength(appQueue2.port, 2), 2);
    const over = await get(appQueue2.port, '/slow', 'q2');
    assert.equal(over.status, 503);
    assert.ok(over.ms < 200, `the 503 took ${over.ms} ms`);
    assert.equal(over.headers['retry-after'], '1');
    for (const h of held) assert.equal((await h.reply).status, 200);
    for (const h of held) h.socket.destroy();
    const m = await metricsText(appQueue2.port);
    assert.equal(sample(m, 'lab_app_requests_total{case="q2",resource="slow",status="503"}'), 1);
    assert.equal(sample(m, 'lab_app_requests_total{case="q2",resource="slow",status="200"}'), 3);
    assert.deepEqual((await counts(appQueue2.port)).q2, { slow: 3 });
  });

  test('app.js: --queue must be a whole number', async () => {
    await assert.rejects(start('app.js', ['--queue=-1']), /--queue must be a whole number >= 0, got '-1'/);
  });
});

describe('app.js case bound', () => {
  test('app.js: 512 distinct lab cases are counted; a 513th gets 400; a known one is still served', async () => {
    // Requests without a case count under '' (one of the 512): 511 others fill it.
    assert.equal((await get(appCases.port, '/fast')).status, 200);
    const statuses = await fill(
      appCases.port,
      Array.from({ length: 511 }, (_, i) => request('/fast', { kase: `c${i}` })),
    );
    assert.deepEqual(
      statuses,
      statuses.map(() => 200),
    );
    assert.equal((await get(appCases.port, '/fast', 'one-too-many')).status, 400);
    assert.equal((await get(appCases.port, '/fast', 'c7')).status, 200);
    const c = await counts(appCases.port);
    assert.equal(Object.keys(c).length, 512);
    assert.deepEqual(c.c7, { fast: 2 });
  });
});

describe('hello.js', () => {
  test('hello.js: GET //[ and other requests it cannot handle get a 4xx, and it keeps serving', async () => {
    await survives(hello, '/');
  });

  test('hello.js: a malformed x-lab-case gets 400 and never becomes a metrics label', async () => {
    const long = 'y'.repeat(65);
    for (const kase of ['__proto__', long, 'a/b']) assert.equal((await get(hello.port, '/', kase)).status, 400, kase);
    assert.equal((await get(hello.port, '/', 'b400-fill')).status, 200);
    const m = await metricsText(hello.port);
    assert.equal(m.includes(long), false);
    assert.equal(m.includes('__proto__'), false);
    assert.equal(sample(m, 'lab_http_requests_total{case="b400-fill",status="200"}'), 1);
  });

  test('hello.js: 512 distinct lab cases; a 513th gets 400', async () => {
    // b400-fill and '' (the /metrics scrapes) came before: 510 of these are in, the rest refused.
    const statuses = await fill(
      hello.port,
      Array.from({ length: 512 }, (_, i) => request('/', { kase: `h${i}` })),
    );
    assert.equal(statuses.filter((x) => x === 200).length, 510);
    assert.equal((await get(hello.port, '/', 'one-too-many')).status, 400);
    assert.equal((await get(hello.port, '/', 'b400-fill')).status, 200);
    const m = await metricsText(hello.port);
    assert.equal(sample(m, 'lab_http_requests_total{case="one-too-many",status="200"}'), NaN);
  });
});

describe('no-content.js', () => {
  test('no-content.js: GET //[ and other requests it cannot handle get a 4xx, and it keeps serving', async () => {
    await survives(nc, '/healthz');
    assert.equal(
      (await exchange(nc.port, request('/filter/x', { method: 'POST', headers: 'content-length: 2\r\n' }) + '{}'))
        .status,
      204,
    );
  });

  test('no-content.js: it counts 512 distinct paths; a request to a 513th gets 400', async () => {
    const stats = async () => JSON.parse((await get(nc.port, '/stats')).body);
    const already = Object.keys((await stats()).paths).length;
    const statuses = await fill(
      nc.port,
      Array.from({ length: 512 - already }, (_, i) => request(`/p/${i}`)),
    );
    assert.deepEqual(
      statuses,
      statuses.map(() => 204),
    );
    assert.equal((await get(nc.port, '/one/too/many')).status, 400);
    assert.equal((await get(nc.port, '/p/0')).status, 204);
    const s = await stats();
    assert.equal(Object.keys(s.paths).length, 512);
    assert.equal(s.paths['/p/0'], 2);
    assert.equal(Object.hasOwn(s.paths, '/one/too/many'), false);
  });
});
