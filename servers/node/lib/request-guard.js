/*
 * What the lab's Node servers (app.js, hello.js, no-content.js) accept from a client before
 * they act on a request, so that no client can stop them or grow their state without bound:
 *   - a request target is a path (origin-form, RFC 9112 3.2.1, RFC 3986 characters); anything
 *     else, absolute-form and `*` included, is refused with 400: the lab's proxies and k6 send
 *     paths only;
 *   - x-lab-case, when sent, is one case name as the lab writes them (b400-fill, envoy-1s,
 *     cpu0.5-mem256m: CASE_NAME); anything else, a repeated field too, is refused with 400;
 *   - x-lab-hold-ms, when sent (hello.js: how long a case's answer is held, for a proxy's
 *     limit_conn to count), is a whole number of ms up to MAX_HOLD_MS; anything else is refused
 *     with 400;
 *   - a server keeps counts for at most MAX_NAMES distinct names (cases, paths): the lab's
 *     suites name a few dozen. A request naming one more is refused with 400 rather than counted
 *     elsewhere, so a figure the lab reads is never silently short;
 *   - what Node's parser refuses gets Node's own answer (400, 408, 431) and the connection is
 *     closed; CONNECT gets 400: none of these servers is a proxy.
 */
import { STATUS_CODES } from 'node:http';

export const CASE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
export const MAX_NAMES = 512;
export const MAX_HOLD_MS = 60_000;

/** How long a request asks its answer held (x-lab-hold-ms): ms, 0 when it asks nothing, null when not a hold. */
export function holdMs(req) {
  const value = req.headers['x-lab-hold-ms'];
  if (value === undefined || value === '') return 0;
  if (!/^[0-9]{1,5}$/.test(value) || Number(value) > MAX_HOLD_MS) return null;
  return Number(value);
}

// RFC 3986: a path's characters (pchar and '/'), a query's (pchar, '/', '?'); % only as %XX.
const ORIGIN_FORM =
  /^\/(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-Fa-f]{2})*(?:\?(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9A-Fa-f]{2})*)?$/;

/** The path a request target names, without its query; null when the target is not one. */
export function targetPath(target) {
  if (typeof target !== 'string' || !ORIGIN_FORM.test(target)) return null;
  const q = target.indexOf('?');
  return q < 0 ? target : target.slice(0, q);
}

/** The lab case a request names: '' when it names none, null when x-lab-case is no case name. */
export function labCase(req) {
  const value = req.headers['x-lab-case'];
  if (value === undefined || value === '') return '';
  return CASE_NAME.test(value) ? value : null;
}

/** A set of names that stops growing at `limit`: admit(name) says whether the name is in it. */
export function nameBook(limit = MAX_NAMES) {
  const names = new Set();
  return {
    admit(name) {
      if (names.has(name)) return true;
      if (names.size >= limit) return false;
      names.add(name);
      return true;
    },
    get size() {
      return names.size;
    },
  };
}

/**
 * Checks a request's target and lab case, admitting the case to `cases` (a nameBook):
 * { path, kase } for a request the server can act on, or { status: 400, why } for one it must
 * refuse.
 */
export function checkRequest(req, cases) {
  const path = targetPath(req.url);
  if (path === null) return { status: 400, why: 'the request target must be a path' };
  const kase = labCase(req);
  if (kase === null) return { status: 400, why: 'x-lab-case must be one case name, like b400-fill' };
  if (!cases.admit(kase)) return { status: 400, why: `this server counts at most ${MAX_NAMES} lab cases` };
  const hold = holdMs(req);
  if (hold === null) return { status: 400, why: `x-lab-hold-ms must be a whole number of ms up to ${MAX_HOLD_MS}` };
  return { path, kase, hold };
}

/** Answers with `status` and a one-line plain-text reason. */
export function refuse(res, status, { why = STATUS_CODES[status], headers = {} } = {}) {
  const body = `${why}\n`;
  res.writeHead(status, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

/**
 * CONNECT gets 400 on a closing connection: none of these servers is a proxy, and Node, left
 * alone, drops such a connection without a word. (What Node's parser refuses, the servers leave
 * to Node: 400, 408 or 431, then the connection is closed.)
 */
export function refuseConnect(server) {
  server.on('connect', (req, socket) => {
    socket.on('error', () => {});
    socket.setTimeout(1000, () => socket.destroy()); // a client that never closes its side
    socket.end(`HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`);
  });
}
