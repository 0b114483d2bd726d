/*
 * What a team's policy adds to the models and the reading: limit_conn beside limit_req, Envoy's
 * descriptor buckets spent in its order, the name a policy gets, and the check that nothing a
 * rendered config could reach is off the machine.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { limitReqChain } from '../thresholds/models/limit-req-chain.js';
import { localRateLimit } from '../thresholds/models/local-rate-limit.js';
import { nginxOutbound, envoyOutbound, isLoopback } from '../lab/policy/outbound.mjs';
import { policyName } from '../lab/policy/name.mjs';
import { readPolicy, policyTools } from '../lab/policy/index.mjs';
import { policyExperiment } from '../lab/policy/experiment.mjs';
import { resolveKnobs } from '../thresholds/knobs.js';
import { statusCode, denominator } from '../lab/policy/envoy/enums.mjs';
import { needs } from './lib/needs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tools = policyTools(root);

test('limit_conn: a request in progress holds its slot; one limit_req delays holds none while it waits', () => {
  // limit_req 10 r/s burst 5 (delay all), limit_conn 1.
  const chain = limitReqChain([{ rateMilli: 10000, burst: 5, delay: 0 }], { conns: [{ conn: 1 }] });
  // Held 300 ms: the second request, 50 ms later, finds the slot taken.
  assert.deepEqual([chain.offer(0, 'k', { holdMs: 300 }).ok, chain.offer(50, 'k', { holdMs: 300 }).ok], [true, false]);
  // At 301 ms the first is done: the slot is free again.
  assert.equal(chain.offer(301, 'k', { holdMs: 300 }).ok, true);
  // The request at 302, which limit_req delays (the one at 50 was charged there before limit_conn
  // rejected it), meets limit_conn after its wait, while the 301 one (held to 601) has the slot.
  const delayed = chain.offer(302, 'k', { holdMs: 0 });
  assert.equal(delayed.ok, false);
  assert.equal(delayed.by, 'conn');
  // Dry run: nothing rejected.
  const dry = limitReqChain([], { conns: [{ conn: 1 }], connDryRun: true });
  assert.deepEqual([dry.offer(0, 'k', { holdMs: 100 }).ok, dry.offer(1, 'k', { holdMs: 100 }).ok], [true, true]);
});

test("Envoy's buckets in its order: a descriptor that denies spends no default token; one that passes does, and is not refunded", () => {
  const random = () => 0;
  // A descriptor of 1 token, then the default of 2; none refills within the test.
  const lrl = localRateLimit(
    {
      buckets: [
        { maxTokens: 1, tokensPerFill: 1, fillIntervalMs: 1e9 },
        { maxTokens: 2, tokensPerFill: 1, fillIntervalMs: 1e9 },
      ],
    },
    random,
  );
  assert.deepEqual(
    [0, 1, 2].map((t) => lrl.offer(t).ok),
    [true, false, false],
  );
  // The default alone still has its second token: the denied requests never reached it.
  const defaultOnly = localRateLimit({ maxTokens: 2, tokensPerFill: 1, fillIntervalMs: 1e9 }, random);
  assert.deepEqual([defaultOnly.offer(0).ok, defaultOnly.offer(1).ok, defaultOnly.offer(2).ok], [true, true, false]);
  // A shadow descriptor counts but denies nothing.
  const shadow = localRateLimit(
    { buckets: [{ maxTokens: 0, tokensPerFill: 1, fillIntervalMs: 1e9, shadow: true }] },
    random,
  );
  assert.equal(shadow.offer(0).ok, true);
});

test("Envoy's enums by name (in any case) or number; an unknown one said with where", () => {
  assert.equal(statusCode('ServiceUnavailable', 'x:1'), 503);
  assert.equal(statusCode('toomanyrequests', 'x:1'), 429);
  assert.equal(statusCode('503', 'x:1'), 503);
  assert.throws(() => statusCode('SERVICE_UNAVAILABLE', 'x.yaml:7'), /x\.yaml:7: status code "SERVICE_UNAVAILABLE"/);
  assert.equal(denominator('TEN_THOUSAND', 'x:1'), 10000);
  assert.equal(denominator(2, 'x:1'), 1e6);
  assert.equal(denominator(undefined, 'x:1'), 100);
});

test('a policy is named by its file, else by what it says of itself, else its folder, or by --name', () => {
  assert.deepEqual(policyName('/a/gateway.conf'), { name: 'gateway', from: 'its file name, gateway.conf' });
  const says = [
    { name: '_', what: 'server name', at: 'nginx.conf:3' },
    { name: 'shop.example.com', what: 'server name', at: 'nginx.conf:9' },
  ];
  assert.deepEqual(policyName('/etc/nginx/nginx.conf', says), {
    name: 'shop-example-com',
    from: 'its server name shop.example.com (nginx.conf:9)',
  });
  assert.deepEqual(policyName('/srv/payments/nginx.conf', [{ name: 'localhost', what: 'server name', at: 'x:1' }]), {
    name: 'payments',
    from: 'its folder, payments',
  });
  assert.throws(() => policyName('/etc/nginx/default.conf', []), /name it with --name=NAME/);
  assert.deepEqual(policyName('/etc/nginx/nginx.conf', [], 'team-a'), { name: 'team-a', from: '--name' });
  assert.throws(() => policyName('/x/nginx.conf', [], '../x'), /--name=\.\.\/x: lower-case letters/);
});

test('nothing a rendered config could reach is off the machine: passes, upstreams, resolvers, OCSP; Envoy endpoints and DNS', () => {
  assert.ok(isLoopback('127.0.0.1') && isLoopback('127.9.9.9') && isLoopback('[::1]') && isLoopback('unix:'));
  assert.ok(!isLoopback('10.0.0.1') && !isLoopback('app.internal') && !isLoopback(''));
  const d = (directive, args, block) => ({ directive, args, ...(block ? { block } : {}) });
  const tree = [
    d(
      'http',
      [],
      [
        d('upstream', ['app'], [d('server', ['127.0.0.1:18202']), d('server', ['10.0.0.2:80'])]),
        d('resolver', ['9.9.9.9']),
        d(
          'server',
          [],
          [
            d('location', ['/'], [d('proxy_pass', ['http://127.0.0.1:18202'])]),
            d('location', ['/x'], [d('fastcgi_pass', ['php.internal:9000'])]),
            d('ssl_stapling', ['on']),
          ],
        ),
      ],
    ),
  ];
  assert.deepEqual(nginxOutbound(tree), [
    'server 10.0.0.2:80',
    'resolver 9.9.9.9',
    'fastcgi_pass php.internal:9000',
    'ssl_stapling on',
  ]);
  const cfg = {
    static_resources: {
      clusters: [
        {
          name: 'ok',
          type: 'STATIC',
          load_assignment: {
            endpoints: [
              {
                lb_endpoints: [{ endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: 1 } } } }],
              },
            ],
          },
        },
        {
          name: 'dns',
          type: 'STRICT_DNS',
          load_assignment: {
            endpoints: [
              {
                lb_endpoints: [
                  { endpoint: { address: { socket_address: { address: 'svc.internal', port_value: 80 } } } },
                ],
              },
            ],
          },
        },
      ],
    },
  };
  const found = envoyOutbound(cfg);
  assert.equal(found.length, 2);
  assert.match(found.join('\n'), /svc\.internal:80/);
  assert.match(found.join('\n'), /a STRICT_DNS cluster/);
});

const missing =
  [tools.crossplane, tools.envoy].filter((f) => !existsSync(f)).map((f) => `${f} is not installed`)[0] ?? null;

test("Envoy descriptors: a class per descriptor its actions make, each sending what makes it, its buckets in Envoy's order", (t) => {
  if (needs(t, missing, './labw setup installs Envoy')) return;
  const { experiment } = policyExperiment(readPolicy(join(root, 'test', 'policies', 'envoy-descriptors.yaml'), tools));
  const targets = experiment.targets(resolveKnobs(experiment));
  assert.deepEqual(
    targets.map((x) => x.id),
    ['v1', 'v1-d1-free', 'v1-d2-premium'],
  );
  const [plain, free, premium] = targets;
  assert.deepEqual(plain.request.slots[0].headers, {});
  assert.deepEqual(free.request.slots[0].headers, { 'x-plan': 'free' });
  assert.deepEqual(premium.request.slots[0].headers, { 'x-tier': 'gold' });
  // The descriptor's bucket first, then the route's default one (always consumed, as unset).
  assert.deepEqual(
    free.policy.buckets.map((b) => b.maxTokens),
    [5, 60],
  );
  assert.deepEqual(
    plain.policy.buckets.map((b) => b.maxTokens),
    [60],
  );
});
