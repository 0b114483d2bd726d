// A team's haproxy.cfg read (lab/policy/haproxy/read.mjs): what the model reads, and each
// construct it cannot read yet refused by name at its file:line, after HAProxy's own check.
import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { haproxyPolicy, words } from '../lab/policy/haproxy/read.mjs';
import { proxyClaiming } from '../lab/policy/proxies/index.mjs';
import { policyExperiment } from '../lab/policy/experiment.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const RATE = join(root, 'test', 'policies', 'haproxy-rate.cfg');

const HEAD = [
  'defaults',
  '  mode http',
  '  timeout connect 5s',
  '  timeout client 30s',
  '  timeout server 30s',
  'frontend api',
  '  bind :8080',
  '  stick-table type ip size 100k expire 30s store http_req_rate(10s)',
];
const TAIL = ['  default_backend app', 'backend app', '  server app1 127.0.0.1:8000'];

/** haproxyPolicy's answer (or its error's message) on a config of HEAD, `lines` and TAIL. */
function readLines(lines, { head = HEAD, tail = TAIL } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'lab-haproxy-read-'));
  try {
    const file = join(dir, 'team.cfg');
    writeFileSync(file, `${[...head, ...lines, ...tail].join('\n')}\n`);
    return haproxyPolicy(file);
  } catch (e) {
    return e.message;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test("HAProxy's words: quotes keep spaces, a # outside them ends the line", () => {
  assert.deepEqual(words('  http-request return status 200 string "a # b" # note'), [
    'http-request',
    'return',
    'status',
    '200',
    'string',
    'a # b',
  ]);
});

test('a frontend that tracks src and denies on its rate: the limit, period, expire and status, where each stands', () => {
  const policy = haproxyPolicy(RATE);
  const [api] = policy.routes;
  assert.equal(api.frontend, 'api');
  assert.equal(api.place, '*:8080');
  assert.deepEqual(
    [
      api.limit.deny.limit,
      api.limit.deny.op,
      api.limit.deny.status,
      api.limit.table.periodMs,
      api.limit.table.expireMs,
    ],
    [20, 'gt', 429, 10_000, 30_000],
  );
  assert.equal(api.limit.deny.at, 'haproxy-rate.cfg:20');
  assert.equal(proxyClaiming('frontend api\n  bind :80\n').name, 'haproxy');
  const { experiment } = policyExperiment(policy, { name: 'haproxy-rate' });
  assert.deepEqual(
    Object.keys(experiment.knobs).filter((k) => k.startsWith('api_')),
    ['api_limit', 'api_period', 'api_expire'],
  );
});

test('what the model cannot read yet is refused by name at its file:line, after haproxy -c', () => {
  const track = '  http-request track-sc0 src';
  const deny = '  http-request deny deny_status 429 if { sc_http_req_rate(0) gt 20 }';
  const cases = [
    [
      [track, '  http-request deny if { sc_http_req_rate(0) gt 20 } || { path /x }'],
      /team.cfg:10: http-request deny if .*reads a deny if/,
    ],
    [['  http-request track-sc1 src', deny], /team.cfg:9: track-sc1: the lab models track-sc0 alone yet/],
    [
      ['  http-request track-sc0 req.hdr(x-api-key)', deny],
      /team.cfg:9: track-sc0 req.hdr\(x-api-key\): the lab keys on src alone yet/,
    ],
    [['  tcp-request content track-sc0 src', deny], /team.cfg:9: tcp-request content: connection-level rules/],
    [
      [track, '  http-request tarpit if { sc_http_req_rate(0) gt 20 }'],
      /team.cfg:10: http-request tarpit: the lab's HAProxy model does not read it yet/,
    ],
    [
      [track, '  http-request deny if { sc_http_req_rate(0) gt 20 }', '  use_backend app if { path /x }'],
      /team.cfg:11: use_backend/,
    ],
    [[track, deny, '  http-request set-header X-Tier %[src,map_ip(/etc/haproxy/tiers.map,std)]'], /team.cfg:11: a map/],
    [['  bind :8081 ssl crt /etc/ssl/x.pem'], /haproxy -c refuses it|bind \.\.\. ssl/],
    [['this is not haproxy'], /haproxy -c refuses it/],
  ];
  for (const [lines, said] of cases) assert.match(String(readLines(lines)), said, lines.join(' | '));
  assert.match(
    String(readLines([], { tail: [...TAIL, 'peers mypeers', '  peer a 127.0.0.1:10000'] })),
    /team.cfg:\d+: peers mypeers: stick tables shared/,
  );
  assert.match(
    String(readLines(['  default_backend app'], { tail: ['backend app', '  server app1 127.0.0.1:8000'] })),
    /no frontend denies on a tracked counter/,
  );
});
