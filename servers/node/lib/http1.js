/*
 * A small incremental HTTP/1.1 message parser for raw sockets, used both for requests (the
 * JSON filter's clients) and for responses (the filter's backend connections). It is the
 * seed's idea (no `http` module on the hot path), with the limits a proxy needs.
 */
const CRLF2 = Buffer.from('\r\n\r\n');
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// RFC 9112: method SP request-target SP HTTP-version, single spaces; the target visible ASCII.
const REQUEST_LINE = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+) ([\x21-\x7e]+) HTTP\/(\d)\.(\d)$/;
const STATUS_LINE = /^HTTP\/1\.([01]) (\d{3})(?: .*)?$/;
// A field value: no control characters but HTAB (NUL, CR and LF are the dangerous ones).
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
// What a Host value may hold: uri-host [":" port], from RFC 3986's characters.
const AUTHORITY = /^[A-Za-z0-9\-._~!$&'()*+,;=%:[\]]*$/;

export class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/**
 * Feed it bytes with push() (every complete message out), or feed() and next() (one message at
 * a time, the rest left unparsed). The limits: a head (request line + headers) over its cap -> 431
 * (requests); bodies need Content-Length (chunked is refused with 411: send Content-Length); a
 * body over its cap -> 413; a malformed start line or header -> 400. After an error the
 * connection must be closed.
 */
export class Http1Parser {
  /** kind: 'request' or 'response'; for responses, `noBody(status)` tells 204/304-like cases. */
  constructor({ kind = 'request', maxHeadBytes = 8192, maxBodyBytes = 1 << 20 } = {}) {
    this.kind = kind;
    this.maxHeadBytes = maxHeadBytes;
    this.maxBodyBytes = maxBodyBytes;
    this.buf = Buffer.alloc(0);
    this.head = null; // parsed head waiting for its body
  }

  /**
   * Bytes in; complete messages out: the complete messages found so far, so pipelined requests
   * come out in order. Throws HttpError on a protocol error.
   */
  push(chunk) {
    this.feed(chunk);
    const out = [];
    for (let msg = this.next(); msg; msg = this.next()) out.push(msg);
    return out;
  }

  /** Bytes in, kept until next() takes the messages out of them. */
  feed(chunk) {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
  }

  /**
   * The next complete message in the bytes fed so far, or null until more bytes come. Throws
   * HttpError on a protocol error. One at a time, so that a server takes no more pipelined
   * requests than it is willing to have in flight: the rest wait here, unparsed.
   */
  next() {
    if (!this.head) {
      const end = this.buf.indexOf(CRLF2);
      if (end < 0) {
        if (this.buf.length > this.maxHeadBytes) throw new HttpError(431, 'request header fields too large');
        return null;
      }
      if (end + 4 > this.maxHeadBytes) throw new HttpError(431, 'request header fields too large');
      this.head = this.parseHead(this.buf.toString('latin1', 0, end));
      this.buf = this.buf.subarray(end + 4);
    }
    const need = this.head.contentLength;
    if (this.buf.length < need) return null;
    const msg = this.head;
    msg.body = this.buf.subarray(0, need);
    this.buf = this.buf.subarray(need);
    this.head = null;
    return msg;
  }

  /** True while a message has started but not finished (for the slow-client timeout). */
  get partial() {
    return this.head !== null || this.buf.length > 0;
  }

  parseHead(text) {
    const lines = text.split('\r\n');
    const first = lines.shift();
    const msg = { headers: {}, contentLength: 0 };
    if (this.kind === 'request') {
      const m = REQUEST_LINE.exec(first);
      if (!m) throw new HttpError(400, 'malformed request line');
      [, msg.method, msg.target] = m;
      if (m[3] !== '1') throw new HttpError(505, 'HTTP version not supported: use HTTP/1.1');
      msg.minor = Number(m[4]); // a higher minor version is read as 1.1 (RFC 9110, 2.5)
    } else {
      const m = STATUS_LINE.exec(first);
      if (!m) throw new HttpError(502, 'malformed status line from backend');
      msg.minor = Number(m[1]);
      msg.status = Number(m[2]);
    }
    for (const line of lines) {
      const colon = line.indexOf(':');
      const name = colon > 0 ? line.slice(0, colon) : '';
      if (!TOKEN.test(name)) throw new HttpError(this.kind === 'request' ? 400 : 502, 'malformed header line');
      const key = name.toLowerCase();
      const value = line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, '');
      if (!FIELD_VALUE.test(value)) throw new HttpError(this.kind === 'request' ? 400 : 502, 'malformed header value');
      // A repeated field is joined with commas, as RFC 9110 combines them: a second
      // Content-Length or Host then fails its own check below.
      msg.headers[key] = key in msg.headers ? `${msg.headers[key]}, ${value}` : value;
    }
    if (this.kind === 'request' && (msg.minor >= 1 || 'host' in msg.headers)) {
      // HTTP/1.1 needs exactly one Host, whose value can be an authority.
      if (!('host' in msg.headers)) throw new HttpError(400, 'Host is required in HTTP/1.1');
      if (!AUTHORITY.test(msg.headers.host)) throw new HttpError(400, 'bad Host');
    }
    if ('transfer-encoding' in msg.headers) {
      throw new HttpError(this.kind === 'request' ? 411 : 502, 'chunked bodies are not accepted: send Content-Length');
    }
    if ('content-length' in msg.headers) {
      const v = msg.headers['content-length'];
      if (!/^\d{1,15}$/.test(v)) throw new HttpError(400, 'bad Content-Length');
      msg.contentLength = Number(v);
      if (msg.contentLength > this.maxBodyBytes) throw new HttpError(413, 'body too large');
    }
    if (this.kind === 'response' && (msg.status === 204 || msg.status === 304 || msg.status < 200)) msg.contentLength = 0;
    const conn = (msg.headers.connection || '').toLowerCase();
    msg.keepAlive = msg.minor === 1 ? !conn.includes('close') : conn.includes('keep-alive');
    return msg;
  }
}

const REASONS = { 200: 'OK', 204: 'No Content', 400: 'Bad Request', 404: 'Not Found', 405: 'Method Not Allowed', 408: 'Request Timeout', 411: 'Length Required', 413: 'Content Too Large', 431: 'Request Header Fields Too Large', 505: 'HTTP Version Not Supported', 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout' };

// The answer most requests get, built once (profiling showed per-request response building,
// and the garbage it makes, among the filter's own costs).
const NO_CONTENT = Buffer.from('HTTP/1.1 204 No Content\r\n\r\n', 'latin1');
const NO_CONTENT_CLOSE = Buffer.from('HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n', 'latin1');

/** A response as bytes: status line, headers, Content-Length unless 204, body. */
export function response(status, { body = '', close = false, headers = EMPTY } = {}) {
  if (status === 204 && headers === EMPTY) return close ? NO_CONTENT_CLOSE : NO_CONTENT;
  const b = Buffer.isBuffer(body) ? body : Buffer.from(body);
  let head = `HTTP/1.1 ${status} ${REASONS[status] || 'Status'}\r\n`;
  for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
  if (status !== 204 && status !== 304) head += `content-length: ${b.length}\r\n`;
  if (close) head += 'connection: close\r\n';
  return Buffer.concat([Buffer.from(`${head}\r\n`, 'latin1'), status === 204 ? Buffer.alloc(0) : b]);
}
const EMPTY = Object.freeze({});
