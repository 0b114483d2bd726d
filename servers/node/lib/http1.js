/*
 * A small incremental HTTP/1.1 message parser for raw sockets, used both for requests (the
 * JSON filter's clients) and for responses (the filter's backend connections). It is the
 * seed's idea (no `http` module on the hot path), with the limits a proxy needs.
 */
const CRLF2 = Buffer.from('\r\n\r\n');
const CR = 13;
const LF = 10;
const SP = 32;
/** A table by byte: `1` for the bytes `chars` holds (a string of single-byte characters). */
const table = (chars) => {
  const t = new Uint8Array(256);
  for (const c of chars) t[c.charCodeAt(0)] = 1;
  return t;
};
const range = (lo, hi) => String.fromCharCode(...Array.from({ length: hi - lo + 1 }, (_, k) => lo + k));
// tchar (RFC 9110 5.6.2): a method and a field name are made of them.
const TCHAR = table("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ");
// A request-target: visible ASCII. A field value: no control characters but HTAB (NUL, CR and LF
// are the dangerous ones). A reason phrase: anything but CR and LF.
const VCHAR = table(range(0x21, 0x7e));
const FIELD_CHAR = table(`\t${range(0x20, 0x7e)}${range(0x80, 0xff)}`);
const REASON_CHAR = table(range(0, 0xff).replace(/[\r\n]/g, ''));
// What a Host value may hold: uri-host [":" port], from RFC 3986's characters.
const AUTHORITY = /^[A-Za-z0-9\-._~!$&'()*+,;=%:[\]]*$/;
const DIGIT = (c) => c >= 48 && c <= 57;

/**
 * The header fields a message keeps, as named properties: the ones framing and the filter read.
 * Every other field is checked as strictly, and dropped. An absent field is undefined.
 */
class Fields {
  constructor() {
    this.host = undefined;
    this['content-length'] = undefined;
    this['content-type'] = undefined;
    this.connection = undefined;
    this['transfer-encoding'] = undefined;
  }
}
// Each as its name and its bytes: the name a match returns is this string, made once.
const KEPT = Object.keys(new Fields()).map((name) => ({ name, bytes: Buffer.from(name, 'latin1') }));
/** The kept field whose name the bytes b[from, to) spell, in any case (they are tchars), or null. */
function keptName(b, from, to) {
  for (const { name, bytes } of KEPT) {
    if (bytes.length !== to - from) continue;
    let k = 0;
    // A tchar ORed with 0x20 is a lower-case letter only if it was that letter in either case.
    while (k < bytes.length && (b[from + k] | 0x20) === bytes[k]) k += 1;
    if (k === bytes.length) return name;
  }
  return null;
}

/** A parsed message: its start line's parts, the kept fields, its framing, its body. */
class Message {
  constructor() {
    this.method = undefined;
    this.target = undefined;
    this.minor = 0;
    this.status = 0;
    this.headers = new Fields();
    this.contentLength = 0;
    this.keepAlive = false;
    this.body = null;
  }
}

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
      this.head = this.parseHead(this.buf, end);
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

  /**
   * The head in b[0, end), walked byte by byte where it lies (no string made of it but the
   * fields kept: docs/journal/json-filter.md has what the string-and-regex parser cost).
   */
  parseHead(b, end) {
    const request = this.kind === 'request';
    const bad = request ? 400 : 502;
    const msg = new Message();
    let i = request ? this.requestLine(b, end, msg) : this.statusLine(b, end, msg);
    const h = msg.headers;
    // The header lines: name ":" OWS value OWS, the name tchars, the value FIELD_CHARs.
    while (i < end) {
      const from = i;
      while (i < end && TCHAR[b[i]] === 1) i += 1;
      if (i === from || i === end || b[i] !== 58 /* : */) throw new HttpError(bad, 'malformed header line');
      const to = i;
      i += 1;
      while (i < end && FIELD_CHAR[b[i]] === 1) i += 1;
      if (i < end && !(b[i] === CR && b[i + 1] === LF)) throw new HttpError(bad, 'malformed header value');
      const name = keptName(b, from, to);
      if (name !== null) {
        let v0 = to + 1;
        let v1 = i;
        while (v0 < v1 && (b[v0] === SP || b[v0] === 9)) v0 += 1;
        while (v1 > v0 && (b[v1 - 1] === SP || b[v1 - 1] === 9)) v1 -= 1;
        const value = b.latin1Slice(v0, v1);
        // A repeated field is joined with commas, as RFC 9110 combines them: a second
        // Content-Length or Host then fails its own check below.
        h[name] = h[name] === undefined ? value : `${h[name]}, ${value}`;
      }
      i += 2;
    }
    if (request && (msg.minor >= 1 || h.host !== undefined)) {
      // HTTP/1.1 needs exactly one Host, whose value can be an authority.
      if (h.host === undefined) throw new HttpError(400, 'Host is required in HTTP/1.1');
      if (!AUTHORITY.test(h.host)) throw new HttpError(400, 'bad Host');
    }
    if (h['transfer-encoding'] !== undefined) {
      throw new HttpError(request ? 411 : 502, 'chunked bodies are not accepted: send Content-Length');
    }
    const length = h['content-length'];
    if (length !== undefined) {
      if (!/^\d{1,15}$/.test(length)) throw new HttpError(400, 'bad Content-Length');
      msg.contentLength = Number(length);
      if (msg.contentLength > this.maxBodyBytes) throw new HttpError(413, 'body too large');
    }
    if (!request && (msg.status === 204 || msg.status === 304 || msg.status < 200)) msg.contentLength = 0;
    const conn = h.connection === undefined ? '' : h.connection.toLowerCase();
    msg.keepAlive = msg.minor === 1 ? !conn.includes('close') : conn.includes('keep-alive');
    return msg;
  }

  /**
   * RFC 9112: method SP request-target SP HTTP-version CRLF, single spaces, the method tchars,
   * the target visible ASCII. Where the header lines start.
   */
  requestLine(b, end, msg) {
    let i = 0;
    while (i < end && TCHAR[b[i]] === 1) i += 1;
    const m = i;
    if (m === 0 || b[i] !== SP) throw new HttpError(400, 'malformed request line');
    i += 1;
    while (i < end && VCHAR[b[i]] === 1) i += 1;
    const t = i;
    if (t === m + 1 || b[i] !== SP) throw new HttpError(400, 'malformed request line');
    i += 1;
    // HTTP/d.d
    if (!(
      i + 8 <= end &&
      b[i] === 72 &&
      b[i + 1] === 84 &&
      b[i + 2] === 84 &&
      b[i + 3] === 80 &&
      b[i + 4] === 47 &&
      DIGIT(b[i + 5]) &&
      b[i + 6] === 46 &&
      DIGIT(b[i + 7]) &&
      b[i + 8] === CR &&
      b[i + 9] === LF
    )) {
      throw new HttpError(400, 'malformed request line');
    }
    if (b[i + 5] !== 49 /* 1 */) throw new HttpError(505, 'HTTP version not supported: use HTTP/1.1');
    msg.minor = b[i + 7] - 48; // a higher minor version is read as 1.1 (RFC 9110, 2.5)
    msg.method = m === 4 && b[0] === 80 && b[1] === 79 && b[2] === 83 && b[3] === 84 ? 'POST' : b.latin1Slice(0, m);
    msg.target = b.latin1Slice(m + 1, t);
    return i + 10;
  }

  /** HTTP/1.x SP status-code [SP reason-phrase] CRLF; where the header lines start. */
  statusLine(b, end, msg) {
    if (!(
      end >= 12 &&
      b[0] === 72 &&
      b[1] === 84 &&
      b[2] === 84 &&
      b[3] === 80 &&
      b[4] === 47 &&
      b[5] === 49 &&
      b[6] === 46 &&
      (b[7] === 48 || b[7] === 49) &&
      b[8] === SP &&
      DIGIT(b[9]) &&
      DIGIT(b[10]) &&
      DIGIT(b[11])
    )) {
      throw new HttpError(502, 'malformed status line from backend');
    }
    let i = 12;
    if (b[i] === SP) while (i < end && REASON_CHAR[b[i]] === 1) i += 1;
    if (!(b[i] === CR && b[i + 1] === LF)) throw new HttpError(502, 'malformed status line from backend');
    msg.minor = b[7] - 48;
    msg.status = (b[9] - 48) * 100 + (b[10] - 48) * 10 + (b[11] - 48);
    return i + 2;
  }
}

const REASONS = {
  200: 'OK',
  204: 'No Content',
  400: 'Bad Request',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  411: 'Length Required',
  413: 'Content Too Large',
  431: 'Request Header Fields Too Large',
  505: 'HTTP Version Not Supported',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

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
