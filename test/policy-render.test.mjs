/*
 * A team's policy as the lab runs it (lab/policy/render-nginx.mjs, render-envoy.mjs, stack.mjs):
 * the file as written with only what must move moved (listeners, upstreams, pid, logs, temp),
 * the lab's counters, clock and readiness added, accepted by nginx -t and Envoy's validate mode;
 * what cannot be moved refused, naming its file:line; and each case's requests carrying what
 * its route needs (its Host, its own key in a header or an argument).
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readPolicy, policyTools } from '../lab/policy/index.mjs';
import { policyExperiment } from '../lab/policy/experiment.mjs';
import { renderNginx } from '../lab/policy/render-nginx.mjs';
import { renderEnvoy } from '../lab/policy/render-envoy.mjs';
import { policyFlags, parseRunArgs } from '../lab/cli/args.mjs';
import { addExperiment } from '../thresholds/experiments/index.js';
import { plan as makePlan } from '../thresholds/plan.js';
import { needs } from './lib/needs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tools = policyTools(root);
const missing =
  [tools.crossplane, tools.envoy].filter((f) => !existsSync(f)).map((f) => `${f} is not installed`)[0] ?? null;
const fixture = (name) => join(root, 'test', 'fixtures', 'policies', name);
const policyFile = (name) => join(root, 'test', 'policies', name);
const PORTS = { port: 18200, metricsPort: 18201, backend: '127.0.0.1:18202' };

/** A scratch folder for one test, removed after it. */
function scratch(t) {
  const dir = mkdtempSync(join(tmpdir(), 'lab-policy-render-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('nginx: listeners, upstreams and paths moved, client keys by the case, the lab watching; nginx -t accepts it', (t) => {
  if (needs(t, missing, './labw setup installs crossplane')) return;
  const dir = scratch(t);
  const text = renderNginx(readPolicy(fixture('gateway.conf'), tools), {
    ...PORTS,
    prefix: dir,
    root,
    python: tools.python,
  });
  assert.deepEqual(
    [...text.matchAll(/listen ([^;]+);/g)].map((m) => m[1]),
    ['127.0.0.1:18200 default_server', '127.0.0.1:18201'],
  );
  assert.deepEqual(
    [...text.matchAll(/^\s*server (\S+);/gm)].map((m) => m[1]),
    ['127.0.0.1:18202', '127.0.0.1:18202'],
  );
  assert.match(text, /limit_req_zone \$lab_client zone=per_ip:10m rate=5r\/s;/);
  assert.match(text, /limit_req_zone \$server_name zone=per_server/);
  assert.match(text, /map \$http_x_lab_case \$lab_client/);
  assert.ok(text.includes(`pid ${join(dir, 'nginx.pid')};`));
  // The file's own /healthz is kept (no second one), and both limited locations are watched.
  assert.equal(text.match(/location = \/healthz/g).length, 2);
  assert.equal(text.match(/require\("lab_clock"\)\.stamp\(\)/g).length, 2);
  const conf = join(dir, 'nginx.conf');
  writeFileSync(conf, text);
  const r = spawnSync('nginx', ['-t', '-q', '-p', `${dir}/`, '-c', conf, '-e', 'stderr'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
});

test('nginx: what the lab cannot point at its backend is refused, naming its file:line', (t) => {
  if (needs(t, missing, './labw setup installs crossplane')) return;
  const dir = scratch(t);
  const cases = [
    [
      'location /php { limit_req zone=z; fastcgi_pass 127.0.0.1:9000; }',
      /x\.conf:5: fastcgi_pass: the lab's backend speaks HTTP only/,
    ],
    [
      'location / { limit_req zone=z; proxy_pass http://$upstream_host; }',
      /x\.conf:5: proxy_pass http:\/\/\$upstream_host: an address from variables needs a resolver/,
    ],
    [
      'location / { limit_req zone=z; log_by_lua_block { ngx.log(ngx.ERR, "x") } }',
      /x\.conf:5: log_by_lua_block: the lab counts every request with its own log_by_lua/,
    ],
  ];
  for (const [location, message] of cases) {
    const file = join(dir, 'x.conf');
    writeFileSync(
      file,
      `events {}\nhttp {\n  limit_req_zone $http_x_key zone=z:1m rate=1r/s;\n  server {\n    ${location}\n  }\n}\n`,
    );
    assert.throws(
      () => renderNginx(readPolicy(file, tools), { ...PORTS, prefix: dir, root, python: tools.python }),
      message,
    );
  }
});

test("Envoy: listener, admin and clusters moved, the lab's access log and readiness route added; Envoy validates it", (t) => {
  if (needs(t, missing, './labw setup installs Envoy')) return;
  const dir = scratch(t);
  const text = renderEnvoy(readPolicy(policyFile('envoy-route-bucket.yaml'), tools), {
    port: 18200,
    adminPort: 18201,
    backend: '127.0.0.1:18202',
    prefix: dir,
  });
  assert.match(text, /port_value: 18200/);
  assert.match(text, /port_value: 18201/);
  assert.match(text, /address: 127\.0\.0\.1\s+port_value: 18202/);
  assert.match(text, /type: STATIC/);
  assert.match(text, /%REQ\(X-LAB-CASE\)% %START_TIME\(%s\.%6f\)% %RESPONSE_CODE%/);
  assert.ok(text.indexOf('path: /healthz') < text.indexOf('prefix: /checkout'));
  const file = join(dir, 'envoy.yaml');
  writeFileSync(file, text);
  const r = spawnSync(tools.envoy, ['--mode', 'validate', '-c', file, '--log-level', 'error'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr + r.stdout);
});

test("each case's requests carry its route's Host and its own key, in the header or argument the zone keys by", (t) => {
  if (needs(t, missing, './labw setup installs crossplane and Envoy')) return;
  const casesOf = (file) => {
    const { experiment } = policyExperiment(readPolicy(file, tools));
    addExperiment(experiment);
    return makePlan({ experiment: experiment.name, suite: 'smoke' }).cases;
  };
  const [header] = casesOf(policyFile('header-key.conf'));
  assert.deepEqual([header.path, header.headers], ['/v1/', { 'x-api-key': 'v1-smoke' }]);
  const [argument] = casesOf(policyFile('argument-key.conf'));
  assert.deepEqual([argument.path, argument.headers], ['/search?user=search-smoke', undefined]);
  const [named] = casesOf(policyFile('per-minute.conf'));
  assert.deepEqual(named.headers, { host: 'auth.example' });
  const envoy = casesOf(policyFile('envoy-route-bucket.yaml'));
  assert.deepEqual(
    envoy.map((c) => [c.id, c.headers?.host]),
    [
      ['checkout-smoke', 'shop.example.com'],
      ['root-smoke', 'shop.example.com'],
    ],
  );
});

test('--policy and --stack-policy are read off the words; a policy run names its suite alone', (t) => {
  assert.deepEqual(policyFlags(['spike', '--policy', 'a.conf', '--stack-policy=b.conf', 'x=1']), {
    rest: ['spike', 'x=1'],
    policy: 'a.conf',
    stackPolicy: 'b.conf',
  });
  assert.throws(() => policyFlags(['spike', '--stack-policy=b.conf']), /give --policy too/);
  assert.throws(() => policyFlags(['spike', '--policy=a', '--policy=b']), /--policy is given twice/);
  if (needs(t, missing, './labw setup installs crossplane')) return;
  const { experiment } = policyExperiment(readPolicy(policyFile('dry-run.conf'), tools));
  addExperiment(experiment);
  assert.deepEqual(parseRunArgs(['spike'], { only: experiment.name }).experiments, ['dry-run']);
  assert.throws(() => parseRunArgs(['spike/burst'], { only: experiment.name }), /name the suite alone/);
  assert.throws(() => parseRunArgs(['stress'], { only: experiment.name }), /a policy has no 'stress' cases/);
});
