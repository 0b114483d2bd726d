/*
 * One client connection of the JSON filter, in named steps: framing (the HTTP/1.1 parser fed
 * with what arrives), taking requests while there is room (--max-pipeline), the answer queue
 * (answers go out in request order, several in one write), the limits (write backpressure with
 * --send-timeout-ms, a header deadline, the idle timeout), and the close. The request itself is
 * `handle(msg, slot, reply)`'s (json-filter.js).
 *
 * While the socket's write buffer is full (the client reads slower than we answer, or not at
 * all) nothing more is read or dispatched, and if it stays full for the send timeout the
 * connection is cut off. Reading pauses whenever no more requests may be taken, so the client's
 * bytes wait in the kernel.
 */
import { Http1Parser, HttpError, response } from './http1.js';

export class Connection {
  /**
   * `limits`: the parser's; `maxPipeline`, `headerTimeoutMs`, `idleTimeoutMs`, `sendTimeoutMs`;
   * `handle(msg, slot, reply)` answers a request; `rejected()` counts a request refused here.
   */
  constructor(socket, { limits, maxPipeline, headerTimeoutMs, idleTimeoutMs, sendTimeoutMs, handle, rejected }) {
    Object.assign(this, { socket, maxPipeline, headerTimeoutMs, sendTimeoutMs, handle, rejected });
    this.parser = new Http1Parser(limits);
    this.queue = []; // pending answers, in request order: {bytes, close} once ready
    this.done = false; // no more requests are taken (the last one asked to close, or an error)
    this.blocked = false; // the write buffer is full: wait for 'drain'
    this.pumping = false; // taking requests: answers made meanwhile are written when it ends
    this.headerTimer = null;
    this.sendTimer = null;
    this.reply = (slot, bytes, close) => this.answer(slot, bytes, close);
    this.unblock = () => this.drained();
    socket.setNoDelay(true);
    socket.on('data', (chunk) => this.received(chunk));
    // A keep-alive connection with nothing in progress is closed after the idle timeout (one
    // whose answers wait to be written is the send timeout's).
    socket.setTimeout(idleTimeoutMs, () => {
      if (this.queue.length === 0 && !this.parser.partial && !this.blocked) socket.destroy();
    });
    socket.on('error', () => socket.destroy());
    socket.on('close', () => this.clearTimers());
  }

  /** Framing: the bytes go to the parser, then requests are taken. */
  received(chunk) {
    if (this.done) return;
    this.parser.feed(chunk);
    this.pump();
  }

  /**
   * Takes the requests already received while there is room, writes the answers made at once,
   * and again; then reads from the client only if more may be taken (otherwise its bytes wait
   * in the kernel, and the client's writes stall).
   */
  pump() {
    for (;;) {
      if (this.socket.destroyed) return;
      this.pumping = true;
      this.takeRequests();
      this.pumping = false;
      if (!(this.queue.length && this.queue[0].ready)) break;
      if (!this.writeReady()) return;
    }
    const room = !this.done && !this.blocked && this.queue.length < this.maxPipeline;
    if (this.done || room)
      this.socket.resume(); // after the last request: read and drop
    else this.socket.pause();
    this.armHeaderTimer(room && this.parser.partial);
  }

  /** The parsed requests, one at a time while there is room, each given its slot in the queue. */
  takeRequests() {
    while (!this.done && !this.blocked && this.queue.length < this.maxPipeline) {
      let msg;
      try {
        msg = this.parser.next();
      } catch (e) {
        if (!(e instanceof HttpError)) throw e;
        this.refuseRequest(e);
        return;
      }
      if (!msg) return;
      if (!msg.keepAlive) this.done = true; // RFC 9112 9.6: nothing after a request that closes
      this.handle(msg, this.slotFor(!msg.keepAlive), this.reply);
    }
  }

  slotFor(close) {
    const slot = { ready: false, bytes: null, close };
    this.queue.push(slot);
    return slot;
  }

  /** A request the parser refuses: its error answer (after the answers before it), then close. */
  refuseRequest(e) {
    this.rejected();
    this.done = true;
    this.answer(this.slotFor(true), response(e.status, { body: `${e.message}\n`, close: true }));
  }

  /** An answer is ready: written now unless requests are being taken (then when that ends). */
  answer(slot, bytes, close) {
    slot.bytes = bytes;
    slot.ready = true;
    if (close) slot.close = true;
    if (!this.pumping && !this.socket.destroyed && this.queue[0] === slot && this.writeReady()) this.pump();
  }

  /**
   * The answer queue: writes the answers that are ready, in order (several in one write); false
   * once the connection is finished (an answer that closes it went out).
   */
  writeReady() {
    const { queue, socket } = this;
    const several = queue.length > 1 && queue[1].ready;
    if (several) socket.cork();
    let open = true;
    while (queue.length && queue[0].ready) {
      const a = queue.shift();
      const written = socket.write(a.bytes);
      if (a.close) {
        open = false;
        break;
      }
      if (!written) this.block();
    }
    if (several) socket.uncork();
    if (!open) this.finish();
    return open;
  }

  /** Write backpressure: the client is not taking our answers; wait for 'drain', a while at most. */
  block() {
    if (this.blocked) return;
    this.blocked = true;
    this.sendTimer = setTimeout(() => this.socket.destroy(), this.sendTimeoutMs);
    this.socket.once('drain', this.unblock);
  }

  drained() {
    this.blocked = false;
    clearTimeout(this.sendTimer);
    this.sendTimer = null;
    this.pump();
  }

  /**
   * A client that starts a request and does not finish it within the timeout is cut off. The
   * clock starts at the request's first byte and is not reset by more bytes, or a client
   * trickling a byte at a time would hold the connection for ever. It runs only while we wait
   * for the client, not while its requests wait for room.
   */
  armHeaderTimer(waitingForClient) {
    if (!waitingForClient) {
      clearTimeout(this.headerTimer);
      this.headerTimer = null;
    } else if (!this.headerTimer) {
      this.headerTimer = setTimeout(() => this.socket.destroy(), this.headerTimeoutMs);
    }
  }

  /** The last answer is written: close our side; read and drop what the client still sends, a second at most. */
  finish() {
    this.done = true;
    this.queue.length = 0;
    this.clearTimers();
    this.socket.end();
    this.socket.resume();
    setTimeout(() => this.socket.destroy(), 1000).unref();
  }

  clearTimers() {
    clearTimeout(this.headerTimer);
    clearTimeout(this.sendTimer);
    this.headerTimer = null;
  }
}
