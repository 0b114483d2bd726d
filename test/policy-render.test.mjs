/*
 * A team's policy as the lab runs it (lab/policy/render-nginx.mjs, envoy/render.mjs, stack.mjs):
 * the file as written with only what must move moved (listeners, upstreams, pid, logs, temp),
 * the lab's counters, clock and readiness added, accepted by nginx -t and Envoy's validate mode;
 * what cannot be moved refused, naming its file:line; and each case's requests carrying what
 * its route needs (its Host, its own key in a header or an argument).
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readPolicy, policyTools } from '../lab/policy/index.mjs';
import { policyExperiment } from '../lab/policy/experiment.mjs';
import { renderNginx } from '../lab/policy/nginx/render.mjs';
import { renderEnvoy } from '../lab/policy/envoy/render.mjs';
import { policyFlags, parseRunArgs } from '../lab/cli/args.mjs';
import { addExperiment } from '../thresholds/experiments/index.js';
import { plan as makePlan } from '../thresholds/plan.js';
import YAML from 'yaml';
import { needs, notRun } from './lib/needs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tools = policyTools(root);
const missing =
  [tools.crossplane, tools.envoy].filter((f) => !existsSync(f)).map((f) => `${f} is not installed`)[0] ?? null;
const fixture = (name) => join(root, 'test', 'fixtures', 'policies', name);
const policyFile = (name) => join(root, 'test', 'policies', name);
const PORTS = { ports: { '*:8080': 18200 }, metricsPort: 18201, backend: '127.0.0.1:18202', version: [1, 22, 1] };

/** A scratch folder for one test, removed after it. */
function scratch(t) {
  const dir = mkdtempSync(join(tmpdir(), 'lab-policy-render-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('nginx: listeners, upstreams and paths moved, clients by address through realip, the lab watching; nginx -t accepts it', (t) => {
  if (needs(t, missing, './labw setup installs crossplane and nginx')) return;
  const dir = scratch(t);
  const { text, clientHeader } = renderNginx(readPolicy(fixture('gateway.conf'), tools), {
    ...PORTS,
    prefix: dir,
    root,
    python: tools.python,
  });
  assert.deepEqual(
    [...text.matchAll(/listen ([^;]+);/g)].map((m) => m[1]),
    ['127.0.0.1:18200', '127.0.0.1:18201'],
  );
  // One upstream server: two at one address would be one peer counted twice.
  assert.deepEqual(
    [...text.matchAll(/^\s*server (\S+);/gm)].map((m) => m[1]),
    ['127.0.0.1:18202'],
  );
  assert.match(text, /limit_req_zone \$binary_remote_addr zone=per_ip:10m rate=5r\/s;/);
  assert.match(text, /set_real_ip_from 127\.0\.0\.0\/8;\s+set_real_ip_from unix:;\s+real_ip_header X-Lab-Client;/);
  assert.equal(clientHeader, 'X-Lab-Client');
  assert.ok(text.includes(`pid ${join(dir, 'nginx.pid')};`));
  // The file's own /healthz is kept (no second one), and the limited locations are watched.
  assert.equal(text.match(/location = \/healthz/g).length, 2);
  assert.equal(text.match(/require\("lab_clock"\)\.stamp\(\)/g).length, 3);
  const conf = join(dir, 'nginx.conf');
  writeFileSync(conf, text);
  const r = spawnSync('nginx', ['-t', '-q', '-p', `${dir}/`, '-c', conf, '-e', 'stderr'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
});

test("nginx: a TLS and HTTP/2 listener runs with the lab's certificate; what it would fetch goes, and is said", (t) => {
  if (needs(t, missing, './labw setup installs crossplane and nginx')) return;
  const dir = scratch(t);
  const file = join(dir, 'tls.conf');
  writeFileSync(
    file,
    [
      'events {}',
      'http {',
      '  limit_req_zone $binary_remote_addr zone=z:1m rate=5r/s;',
      '  resolver 9.9.9.9;',
      '  server {',
      '    listen 443 ssl;',
      '    http2 on;',
      '    server_name shop.example;',
      '    ssl_certificate /etc/ssl/shop.pem; ssl_certificate_key /etc/ssl/shop.key;',
      '    ssl_stapling on; ssl_trusted_certificate /etc/ssl/chain.pem;',
      '    location /static/ { limit_req zone=z burst=5; root /srv/www; }',
      '    location / { limit_req zone=z; fastcgi_pass unix:/run/php.sock; }',
      '  }',
      '}',
      '',
    ].join('\n'),
  );
  const policy = readPolicy(file, tools);
  const { text, notes } = renderNginx(policy, {
    ...PORTS,
    ports: { '*:443': 18210 },
    prefix: dir,
    root,
    python: tools.python,
  });
  assert.match(text, /listen 127\.0\.0\.1:18210 ssl http2;/);
  assert.ok(text.includes(`ssl_certificate ${join(dir, 'lab-cert.pem')};`));
  assert.doesNotMatch(text, /ssl_stapling|trusted_certificate|resolver|shop\.pem|fastcgi_pass/);
  assert.ok(text.includes(`root ${join(dir, 'www', 'srv', 'www')};`));
  assert.deepEqual(
    notes.map((n) => n.at),
    ['tls.conf:4', 'tls.conf:7', 'tls.conf:9', 'tls.conf:10', 'tls.conf:10', 'tls.conf:12'],
  );
  // nginx named the file /static/ serves: the probe made it, and so does the stack.
  assert.ok(
    policy.explored.files.some((f) => f.startsWith('www/srv/www/static/')),
    JSON.stringify(policy.explored.files),
  );
  assert.equal(policy.explored.targets.length, 2);
  const conf = join(dir, 'nginx.conf');
  writeFileSync(conf, text);
  const r = spawnSync('nginx', ['-t', '-q', '-p', `${dir}/`, '-c', conf, '-e', 'stderr'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
});

test('nginx: what the lab cannot point at its backend or see into is refused, naming its file:line', (t) => {
  if (needs(t, missing, './labw setup installs crossplane and nginx')) return;
  const dir = scratch(t);
  const cases = [
    [
      'location /g { limit_req zone=z; grpc_pass 127.0.0.1:9000; }',
      /x\.conf:5: grpc_pass: the lab's backend speaks HTTP/,
    ],
    [
      'location / { limit_req zone=z; content_by_lua_block { ngx.say("x") } }',
      /x\.conf:5: content_by_lua_block: lua code whose network use the lab cannot see/,
    ],
  ];
  for (const [location, message] of cases) {
    const file = join(dir, 'x.conf');
    writeFileSync(
      file,
      `events {}\nhttp {\n  limit_req_zone $http_x_key zone=z:1m rate=1r/s;\n  server {\n    ${location}\n  }\n}\n`,
    );
    assert.throws(() => readPolicy(file, tools), message);
  }
});

test("Envoy: listener, admin and clusters moved, the lab's access log and readiness route added; Envoy validates it", (t) => {
  if (needs(t, missing, './labw setup installs Envoy')) return;
  const dir = scratch(t);
  const text = renderEnvoy(readPolicy(policyFile('envoy-route-bucket.yaml'), tools), {
    ports: { '0.0.0.0:8443': 18200 },
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

test("each case's requests carry its origin, its route's Host and its own client, where nginx gives it its own key", (t) => {
  if (needs(t, missing, './labw setup installs crossplane, nginx and Envoy')) return;
  const casesOf = (file, suite = 'smoke') => {
    const { experiment } = policyExperiment(readPolicy(file, tools));
    addExperiment(experiment);
    return makePlan({ experiment: experiment.name, suite }).cases;
  };
  // A header key: a client without it is not limited, and each case of those with it sends its own.
  const header = casesOf(policyFile('header-key.conf'), 'spike').filter((c) => c.target === 'v1');
  assert.equal(new Set(header.map((c) => c.headers['x-api-key'])).size, header.length);
  assert.ok(header.every((c) => c.headers['x-api-key'].startsWith('lab-')));
  const argument = casesOf(policyFile('argument-key.conf')).find((c) => c.target === 'search');
  assert.match(argument.path, /^\/search\?user=lab-t\d+s0$/);
  const [named] = casesOf(policyFile('per-minute.conf'));
  assert.equal(named.origin, 'http://auth.example:18200');
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
    includeDirs: [],
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

test("render: a team's policy's stack as a compose file, its proxy in its official image running the native command at the rendered folder's own path; nginx's refused, saying why", (t) => {
  const lab = (...words) =>
    spawnSync(process.execPath, [join(root, 'lab', 'cli', 'index.mjs'), ...words], { cwd: root, encoding: 'utf8' });
  const name = 'render-compose-test';
  const rendered = join(root, '.lab', 'rendered');
  try {
    const r = lab('render', `--policy=${policyFile('haproxy-tls-key.cfg')}`, `--name=${name}`);
    assert.equal(r.status, 0, r.stderr);
    const file = join(rendered, name, 'docker-compose.yml');
    const doc = YAML.parse(readFileSync(file, 'utf8'));
    const proxy = doc.services[`${name}-haproxy`];
    const dir = join(rendered, `${name}-haproxy`);
    assert.equal(proxy.image, 'haproxy:2.6.12');
    assert.equal(proxy.network_mode, 'host');
    // The command the runner runs, compose's `$` doubled; the folder mounted where it was rendered.
    assert.deepEqual(proxy.entrypoint, [
      'sh',
      '-c',
      'exec haproxy -db -f "$$0" >"$$1"',
      join(dir, 'haproxy.cfg'),
      join(dir, 'seen.log'),
    ]);
    assert.ok(proxy.volumes.includes(`${dir}:${dir}`));
    // Its TLS bind's certificate is where the config names it, in that folder.
    assert.match(readFileSync(join(dir, 'haproxy.cfg'), 'utf8'), new RegExp(`ssl crt ${dir}/lab-haproxy.pem`));
    assert.ok(existsSync(join(dir, 'lab-haproxy.pem')));
    assert.equal(
      doc.services[`${name}-backend`].image,
      YAML.parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), { merge: true, maxAliasCount: -1 })['x-node']
        .image,
    );
    const check = spawnSync('docker-compose', ['-f', file, 'config', '-q'], { encoding: 'utf8' });
    if (!needs(t, notRun('docker-compose', check), 'the Debian package: run just setup'))
      assert.equal(check.status, 0, check.stderr);
    const nginx = lab('render', `--policy=${policyFile('conn-and-req.conf')}`, `--name=${name}-nginx`);
    assert.notEqual(nginx.status, 0);
    assert.match(nginx.stderr, /nginx has no official image that runs the lab's config of it \(.*lua/);
    assert.equal(existsSync(join(rendered, `${name}-nginx`)), false);
  } finally {
    for (const d of [name, `${name}-haproxy`, `${name}-backend`])
      rmSync(join(rendered, d), { recursive: true, force: true });
  }
});
