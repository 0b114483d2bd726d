/*
 * Keep-alive connections from the filter to its backend, on raw sockets like the filter itself:
 * one request at a time per connection, up to `max` connections, callers queue beyond that.
 * A connection that fails -> 502; no answer within `timeoutMs` -> 504.
 * The queue is bounded and has a deadline, or a backend slower than the clients would grow it
 * without end: over `maxWaiting` callers -> 503 at once; a caller still waiting after
 * `waitTimeoutMs` -> 503. Either way the request never reached the backend.
 */
import net from 'node:net';
import { Http1Parser, HttpError } from './http1.js';

export class BackendPool {
  constructor({ host = '127.0.0.1', port, max = 512, timeoutMs = 1000, maxWaiting = 8192, waitTimeoutMs = 5000 }) {
    Object.assign(this, { host, port, max, timeoutMs, maxWaiting, waitTimeoutMs });
    this.idle = [];
    this.open = 0;
    this.waiting = [];
  }

  /** Sends one request; resolves {status, headers, body} or rejects with an HttpError. */
  request(method, path, body, contentType = 'application/json') {
    const head = `${method} ${path} HTTP/1.1\r\nhost: ${this.host}:${this.port}\r\ncontent-type: ${contentType}\r\ncontent-length: ${body.length}\r\n\r\n`;
    const bytes = Buffer.concat([Buffer.from(head, 'latin1'), body]);
    return new Promise((resolve, reject) => {
      const job = { bytes, resolve, reject };
      const conn = this.idle.pop();
      if (conn) this.run(conn, job);
      else if (this.open < this.max) this.run(this.connect(), job);
      else this.wait(job);
    });
  }

  /** Every connection busy: the caller waits its turn if the list has room, until its deadline. */
  wait(job) {
    if (this.waiting.length >= this.maxWaiting) {
      job.reject(new HttpError(503, 'backend pool busy: too many requests waiting'));
      return;
    }
    job.waitTimer = setTimeout(() => this.expire(job), this.waitTimeoutMs);
    this.waiting.push(job);
  }

  /** A caller's deadline passed while it waited: out of the list (usually its head), 503. */
  expire(job) {
    const i = this.waiting.indexOf(job);
    if (i >= 0) this.waiting.splice(i, 1);
    job.reject(new HttpError(503, 'no backend connection free in time'));
  }

  /** The longest-waiting caller, its deadline cleared; undefined when none waits. */
  nextWaiting() {
    const job = this.waiting.shift();
    if (job) clearTimeout(job.waitTimer);
    return job;
  }

  connect() {
    this.open += 1;
    const socket = net.connect({ host: this.host, port: this.port });
    socket.setNoDelay(true);
    const conn = { socket, parser: new Http1Parser({ kind: 'response' }), job: null, connected: false };
    socket.on('connect', () => { conn.connected = true; });
    socket.on('data', (chunk) => {
      let msgs;
      try {
        msgs = conn.parser.push(chunk);
      } catch (e) {
        this.fail(conn, e);
        return;
      }
      if (msgs.length && conn.job) this.finish(conn, msgs[0]);
    });
    socket.on('error', (e) => this.fail(conn, new HttpError(502, `backend: ${e.code || e.message}`)));
    socket.on('close', () => this.fail(conn, new HttpError(502, 'backend closed the connection')));
    return conn;
  }

  run(conn, job) {
    conn.job = job;
    job.timer = setTimeout(() => this.fail(conn, new HttpError(504, 'backend timed out')), this.timeoutMs);
    conn.socket.write(job.bytes);
  }

  finish(conn, msg) {
    const { job } = conn;
    clearTimeout(job.timer);
    conn.job = null;
    job.resolve({ status: msg.status, headers: msg.headers, body: msg.body });
    if (!msg.keepAlive) {
      this.drop(conn);
      return;
    }
    const next = this.nextWaiting();
    if (next) this.run(conn, next);
    else this.idle.push(conn);
  }

  fail(conn, err) {
    if (conn.dead) return;
    const { job } = conn;
    if (job) {
      clearTimeout(job.timer);
      conn.job = null;
      job.reject(err);
    }
    this.drop(conn);
  }

  drop(conn) {
    if (conn.dead) return;
    conn.dead = true;
    this.open -= 1;
    this.idle = this.idle.filter((c) => c !== conn);
    conn.socket.destroy();
    const next = this.nextWaiting();
    if (next) this.run(this.connect(), next);
  }

  close() {
    for (const c of [...this.idle]) this.drop(c);
  }
}
