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
    this.authority = `${host}:${port}`;
    this.idle = [];
    this.open = 0;
    this.waiting = [];
  }

  /** Sends one request; resolves {status, headers, body} or rejects with an HttpError. */
  request(method, path, body) {
    return new Promise((resolve, reject) => {
      this.send(method, path, body, (err, res) => (err ? reject(err) : resolve(res)));
    });
  }

  /**
   * The same without a Promise (the filter's hot path): `done(err, {status, headers, body})` is
   * called once. The request goes out as one buffer, head and body, so one write.
   */
  send(method, path, body, done) {
    const head = `${method} ${path} HTTP/1.1\r\nhost: ${this.authority}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`;
    const bytes = Buffer.allocUnsafe(head.length + body.length);
    bytes.latin1Write(head, 0);
    body.copy(bytes, head.length);
    const job = { bytes, done };
    const conn = this.idle.pop();
    if (conn) this.run(conn, job);
    else if (this.open < this.max) this.run(this.connect(), job);
    else this.wait(job);
  }

  /** Every connection busy: the caller waits its turn if the list has room, until its deadline. */
  wait(job) {
    if (this.waiting.length >= this.maxWaiting) {
      job.done(new HttpError(503, 'backend pool busy: too many requests waiting'));
      return;
    }
    job.waitTimer = setTimeout(() => this.expire(job), this.waitTimeoutMs);
    this.waiting.push(job);
  }

  /** A caller's deadline passed while it waited: out of the list (usually its head), 503. */
  expire(job) {
    const i = this.waiting.indexOf(job);
    if (i >= 0) this.waiting.splice(i, 1);
    job.done(new HttpError(503, 'no backend connection free in time'));
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
    const conn = { socket, parser: new Http1Parser({ kind: 'response' }), job: null, connected: false, timer: null };
    socket.on('connect', () => {
      conn.connected = true;
    });
    socket.on('data', (chunk) => {
      let msg;
      try {
        conn.parser.feed(chunk);
        msg = conn.parser.next();
      } catch (e) {
        this.fail(conn, e);
        return;
      }
      if (msg && conn.job) this.finish(conn, msg);
    });
    socket.on('error', (e) => this.fail(conn, new HttpError(502, `backend: ${e.code || e.message}`)));
    socket.on('close', () => this.fail(conn, new HttpError(502, 'backend closed the connection')));
    return conn;
  }

  /**
   * One request on a connection. Its deadline is the connection's own timer, made once and
   * restarted per request (not a timer made and cleared per relay); it fires only while a
   * request is out.
   */
  run(conn, job) {
    conn.job = job;
    if (conn.timer) conn.timer.refresh();
    else
      conn.timer = setTimeout(() => {
        if (conn.job) this.fail(conn, new HttpError(504, 'backend timed out'));
      }, this.timeoutMs);
    conn.socket.write(job.bytes);
  }

  finish(conn, msg) {
    const { job } = conn;
    conn.job = null;
    job.done(null, { status: msg.status, headers: msg.headers, body: msg.body });
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
      conn.job = null;
      job.done(err);
    }
    this.drop(conn);
  }

  drop(conn) {
    if (conn.dead) return;
    conn.dead = true;
    clearTimeout(conn.timer);
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
