#!/usr/bin/env node
/*
 * What a Node filter cannot cost less than, for docs/journal/json-filter.md: one backend connection per
 * client connection, and
 * - `relay`: bytes passed through both ways, unparsed;
 * - `minimal`: each request framed by its Content-Length, its body through JSON.parse and the
 *   filter rule, relayed or answered 204; the backend's answer passed back (204 as a constant).
 * No limits, no timeouts, no validation beyond that: a measuring stick, not a server to run.
 *   floor.js relay|minimal <port> <backend port>
 */
import net from 'node:net';
import { shouldRelay } from '../../node/lib/filter-rule.js';

const [mode, port, backendPort] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])];
if (!['relay', 'minimal'].includes(mode) || !(port > 0) || !(backendPort > 0)) {
  console.error('usage: floor.js relay|minimal <port> <backend port>');
  process.exit(2);
}
const CRLF2 = Buffer.from('\r\n\r\n');
const NO_CONTENT = Buffer.from('HTTP/1.1 204 No Content\r\n\r\n');

/** minimal: the complete requests in `buf` handled; what is left of it returned. */
function requests(buf, client, backend) {
  for (;;) {
    const end = buf.indexOf(CRLF2);
    if (end < 0) return buf;
    const head = buf.latin1Slice(0, end);
    const at = head.toLowerCase().indexOf('content-length:');
    const length = at < 0 ? 0 : parseInt(head.slice(at + 15), 10);
    if (buf.length < end + 4 + length) return buf;
    const body = buf.subarray(end + 4, end + 4 + length);
    let doc = null;
    try {
      doc = JSON.parse(body.toString('utf8'));
    } catch {
      /* answered 204 like a filtered one */
    }
    if (shouldRelay(doc)) {
      backend.write(
        Buffer.concat([
          Buffer.from(
            `POST /filter HTTP/1.1\r\nhost: backend\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n\r\n`,
            'latin1',
          ),
          body,
        ]),
      );
    } else client.write(NO_CONTENT);
    buf = buf.subarray(end + 4 + length);
  }
}

net
  .createServer({ noDelay: true }, (client) => {
    const backend = net.connect({ port: backendPort, host: '127.0.0.1', noDelay: true });
    if (mode === 'relay') {
      client.on('data', (d) => backend.write(d));
      backend.on('data', (d) => client.write(d));
    } else {
      let left = Buffer.alloc(0);
      client.on('data', (d) => {
        left = requests(left.length ? Buffer.concat([left, d]) : d, client, backend);
      });
      backend.on('data', (d) => client.write(d.latin1Slice(9, 12) === '204' ? NO_CONTENT : d));
    }
    for (const [a, b] of [
      [client, backend],
      [backend, client],
    ]) {
      a.on('error', () => b.destroy());
      a.on('close', () => b.destroy());
    }
  })
  .listen(port, '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));
