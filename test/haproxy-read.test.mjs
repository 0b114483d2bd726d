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
import { addExperiment } from '../thresholds/experiments/index.js';
import { plan as makePlan, explainCase } from '../thresholds/plan.js';
import { casesWords } from '../lab/policy/words.mjs';

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

/** An experiment's knobs at their defaults. */
const knobDefaults = (experiment) =>
  Object.fromEntries(Object.entries(experiment.knobs).map(([n, v]) => [n, v.default]));

/** The haproxy.cfg the lab runs for `policy`, its one bind at 18080, with `knobs` over its defaults. */
async function renderedWith(policy, knobs) {
  const { renderHaproxy } = await import('../lab/policy/haproxy/render.mjs');
  const { experiment } = policyExperiment(policy, { name: 'rendered' });
  return renderHaproxy(policy, {
    ports: { [policy.routes[0].place]: 18080 },
    ownPort: 18081,
    backend: '127.0.0.1:18082',
    placed: experiment.placed({ ...knobDefaults(experiment), ...knobs }),
    prefix: '/nonexistent',
  });
}

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
      /team.cfg:10: a condition with '\|\|': the lab reads terms that must all hold yet/,
    ],
    [
      ['  http-request track-sc1 src', deny],
      /team.cfg:10: a deny on sc0 before any track-sc0: the counter it reads is not tracked yet/,
    ],
    [
      ['  http-request track-sc0 req.cook(sid)', deny],
      /team.cfg:9: track-sc0 req.cook\(sid\): the lab keys on src, a request header/,
    ],
    [
      ['  http-request redirect location /x', track, deny],
      /team.cfg:9: http-request redirect location \/x: the lab reads a redirect of plain HTTP to TLS/,
    ],
    [
      ['  http-request redirect scheme https unless { ssl_fc }', track, deny],
      /team.cfg:9: frontend api redirects to https, and has no bind with ssl/,
    ],
    [
      ['  tcp-request connection track-sc0 src', deny],
      /team.cfg:9: tcp-request connection track-sc0: tracked once per connection/,
    ],
    [
      ['  tcp-request content track-sc0 src', '  tcp-request content reject if { sc_http_req_rate(0) gt 20 }'],
      /team.cfg:10: tcp-request content reject: connection-level actions are not modelled yet/,
    ],
    [
      [track, '  http-request silent-drop if { sc_http_req_rate(0) gt 20 }'],
      /team.cfg:10: http-request silent-drop: the lab's HAProxy model does not read it yet/,
    ],
    [
      [
        track,
        '  http-request deny if { sc_http_req_rate(0) gt 20 }',
        '  use_backend app if { hdr(host) -i a.example }',
      ],
      /team.cfg:11: \{ hdr\(host\) -i a.example \}: the lab cannot tell whether it holds for its requests/,
    ],
    [[track, deny, '  http-request set-header X-Tier %[src,map_ip(/etc/haproxy/tiers.map,std)]'], /team.cfg:11: a map/],
    [['this is not haproxy'], /haproxy -c refuses it/],
  ];
  for (const [lines, said] of cases) assert.match(String(readLines(lines)), said, lines.join(' | '));
  // A condition after a named table is one too (a public config tracks an Authorization header so).
  const tableTail = [
    ...TAIL,
    'backend st',
    '  stick-table type string len 64 size 1m expire 10s store http_req_rate(10s)',
  ];
  assert.match(
    String(
      readLines(
        [
          '  http-request track-sc1 req.hdr(Authorization) table st if { req.hdr(Authorization) -m beg bearer }',
          '  http-request deny if { sc_http_req_rate(1) gt 2 }',
        ],
        { tail: tableTail },
      ),
    ),
    /team.cfg:9: track-sc1 req.hdr\(Authorization\) table st if .*: \{ req.hdr\(Authorization\) -m beg bearer \}: the lab cannot tell whether it holds for its requests/,
  );
  assert.match(
    String(readLines([], { tail: [...TAIL, 'peers mypeers', '  peer a 127.0.0.1:10000'] })),
    /team.cfg:\d+: peers mypeers: stick tables shared/,
  );
  assert.match(
    String(readLines(['  default_backend app'], { tail: ['backend app', '  server app1 127.0.0.1:8000'] })),
    /no frontend denies on a tracked counter/,
  );
});

test("a tarpit: a deny held for the frontend's timeout tarpit, from its defaults, a listen's timeout connect, or none (a frontend has no connect timeout to fall back on)", () => {
  const tarpit = ['  http-request track-sc0 src', '  http-request tarpit if { sc_http_req_rate(0) gt 20 }'];
  const held = (head, tail = TAIL) => readLines(tarpit, { head, tail }).routes[0].limit.deny;
  const fromDefaults = held([...HEAD.slice(0, 5), '  timeout tarpit 2s', ...HEAD.slice(5)]);
  assert.deepEqual(
    [fromDefaults.action, fromDefaults.status, fromDefaults.hold],
    ['tarpit', 500, { ms: 2000, at: 'team.cfg:6', why: 'timeout tarpit', knob: true }],
  );
  // The frontend's own line, not the defaults' (src/proxy.c: a section's timeout replaces what it inherited).
  const own = held([...HEAD.slice(0, 5), '  timeout tarpit 2s', ...HEAD.slice(5), '  timeout tarpit 750ms']);
  assert.deepEqual(own.hold, { ms: 750, at: 'team.cfg:10', why: 'timeout tarpit', knob: true });
  // The defaults' timeout connect 5s does not reach a frontend: held 0 ms.
  const none = held(HEAD);
  assert.equal(none.hold.ms, 0);
  assert.match(none.hold.why, /a frontend has no timeout connect to fall back on/);
  // A listen is a backend too: its connect timeout is the tarpit's.
  const listen = held([...HEAD.slice(0, 5), 'listen api', ...HEAD.slice(6)], ['  server app1 127.0.0.1:8000']);
  assert.deepEqual(listen.hold, { ms: 5000, at: 'team.cfg:3', why: 'timeout connect (no timeout tarpit)' });
  // A second defaults section is the one the frontend takes.
  const later = held([...HEAD.slice(0, 5), 'defaults', '  mode http', '  timeout tarpit 3s', ...HEAD.slice(5)]);
  assert.deepEqual(later.hold, { ms: 3000, at: 'team.cfg:8', why: 'timeout tarpit', knob: true });
});

test('a TLS bind is served with the lab certificate, a plain one redirecting to it is not sent to, and its ALPN says HTTP/2', () => {
  const policy = readLines([
    '  bind :8443 ssl crt /etc/haproxy/certs/site.pem strict-sni alpn h2,http/1.1 ssl-min-ver TLSv1.2',
    '  http-request redirect scheme https code 301 unless { ssl_fc }',
    '  http-request track-sc0 req.hdr(X-Api-Key)',
    '  http-request return status 429 content-type text/plain string "slow down" if { sc_http_req_rate(0) ge 20 }',
  ]);
  const [api] = policy.routes;
  assert.deepEqual([api.place, api.tls, api.http2, api.places], ['*:8443', true, true, ['*:8080', '*:8443']]);
  assert.deepEqual(api.limit.track.key, { fetch: 'header', name: 'x-api-key', text: 'req.hdr(X-Api-Key)' });
  assert.deepEqual([api.limit.deny.action, api.limit.deny.status, api.limit.deny.op], ['return', 429, 'ge']);
  assert.deepEqual(policy.tlsPlaces, ['*:8443']);
  assert.match(
    policy.leftOut[0].what,
    /bind :8443 ssl: served with the lab's certificate \(crt, strict-sni left out\)/,
  );
  // A return that reads no counter answers as it did (the lab's own /healthz is one such).
  const plain = readLines([
    '  http-request return status 200 if { path /ping }',
    '  http-request track-sc0 url_param(key)',
    '  http-request deny deny_status 429 if { sc_http_req_rate(0) gt 20 }',
  ]);
  assert.deepEqual(
    [plain.routes[0].tls, plain.routes[0].limit.deny.action, plain.routes[0].limit.track.key.fetch],
    [false, 'deny', 'param'],
  );
});

test("a header's or a parameter's key gives each case its own entry, as the table's type stores it", () => {
  const policy = readLines([
    '  http-request track-sc0 req.hdr(x-forwarded-for)',
    '  http-request deny deny_status 429 if { sc_http_req_rate(0) gt 20 }',
  ]);
  const { experiment } = policyExperiment(policy, { name: 'keyed' });
  const [target] = experiment.targets(
    Object.fromEntries(Object.entries(experiment.knobs).map(([k, v]) => [k, v.default])),
  );
  assert.deepEqual(target.request.slots.slice(0, 2), [
    { path: '/', headers: { 'x-forwarded-for': '192.0.2.1' } },
    { path: '/', headers: { 'x-forwarded-for': '192.0.2.2' } },
  ]);
  const strings = readLines(
    ['  http-request track-sc0 url_param(key)', '  http-request deny if { sc_http_req_cnt(0) gt 5 }'],
    {
      head: HEAD.map((l) => l.replace('type ip', 'type string len 32').replace('http_req_rate(10s)', 'http_req_cnt')),
    },
  );
  const keyed = policyExperiment(strings, { name: 'keyed' }).experiment;
  const [t2] = keyed.targets(Object.fromEntries(Object.entries(keyed.knobs).map(([k, v]) => [k, v.default])));
  assert.equal(t2.request.slots[0].path, '/?key=lab-key-1');
  assert.match(
    String(
      readLines(['  http-request track-sc0 src', '  http-request deny if { sc_http_req_cnt(0) gt 5 }'], {
        head: HEAD.map((l) => l.replace('type ip', 'type string len 32').replace('http_req_rate(10s)', 'http_req_cnt')),
      }),
    ),
    /track-sc0 src into a table of type string/,
  );
});

test("the cases' VUs together stay within HAProxy's maxconn (k6 holds a connection per VU), or the plan is refused naming it", () => {
  const planWith = (maxconn, name) => {
    const policy = readLines(
      ['  http-request track-sc0 src', '  http-request deny deny_status 429 if { sc_http_req_rate(0) gt 20 }'],
      {
        head: ['global', `  maxconn ${maxconn}`, ...HEAD],
      },
    );
    assert.deepEqual(policy.maxconn, { limit: maxconn, at: 'team.cfg:2', what: `maxconn ${maxconn}` });
    const { experiment } = policyExperiment(policy, { name });
    addExperiment(experiment);
    return makePlan({ experiment: name, suite: 'spike', factor: 5 });
  };
  const roomy = planWith(4000, 'maxconn-roomy');
  const tight = planWith(120, 'maxconn-tight');
  const sum = (p) => p.cases.reduce((a, c) => a + c.vus, 0);
  assert.ok(sum(roomy) > 112, `without the limit the cases ask ${sum(roomy)} VUs`);
  assert.ok(sum(tight) <= 112, `within maxconn 120 less the lab's 8: ${sum(tight)}`);
  assert.ok(tight.cases.every((c) => c.vus >= 2));
  assert.throws(
    () => planWith(9, 'maxconn-none'),
    /team.cfg:2: maxconn 9: the cases hold up to \d+ requests in flight/,
  );
});

test('several trackers, each deny on its own, read in the file order into one chain with a knob per number', () => {
  const policy = haproxyPolicy(join(root, 'test', 'policies', 'haproxy-two-trackers.cfg'));
  const { chain } = policy.routes[0].limit;
  assert.deepEqual(
    chain.trackers.map((t) => [t.sc, t.key.text, t.table.type]),
    [
      [0, 'src', 'ip'],
      [1, 'req.hdr(X-API-Key)', 'string'],
    ],
  );
  assert.deepEqual(chain.rules, [{ track: 0 }, { track: 1 }, { deny: 0 }, { deny: 1 }]);
  assert.deepEqual(
    chain.denies.map((d) => [d.sc, d.limit]),
    [
      [0, 50],
      [1, 20],
    ],
  );
  const { experiment } = policyExperiment(policy, { name: 'two-trackers' });
  const k = knobDefaults(experiment);
  assert.deepEqual(
    Object.keys(k).filter((n) => n.startsWith('api_')),
    ['api_limit', 'api_limit2', 'api_period', 'api_expire', 'api_sc1_period', 'api_sc1_expire'],
  );
  const [target] = experiment.targets({ ...k, api_limit2: 7 });
  assert.equal(target.policy.kind, 'stick_table_chain');
  assert.deepEqual(target.policy.rules.at(-1), { deny: 1, counter: 'http_req_rate', op: 'gt', limit: 7 });
  assert.deepEqual(target.request.slots[0], { path: '/', headers: { 'x-api-key': 'lab-key-1' } });
  assert.match(
    String(
      readLines([
        '  http-request track-sc0 src',
        '  http-request track-sc0 src',
        '  http-request deny if { sc_http_req_cnt(0) gt 5 }',
      ]),
    ),
    /team.cfg:10: track-sc0 again \(team.cfg:9\)/,
  );
});

test("a tarpit's timeout is a knob where it stands: the model holds the refusals that long, the render writes it on its line", async () => {
  const { renderHaproxy } = await import('../lab/policy/haproxy/render.mjs');
  const policy = haproxyPolicy(join(root, 'test', 'policies', 'haproxy-tarpit.cfg'));
  const { experiment } = policyExperiment(policy, { name: 'tarpit' });
  const k = knobDefaults(experiment);
  assert.equal(k.api_tarpit, 2);
  const [target] = experiment.targets({ ...k, api_tarpit: 0.5 });
  assert.deepEqual([target.policy.tarpitMs, target.limitedStatus], [500, 500]);
  const conf = renderHaproxy(policy, {
    ports: { '*:8080': 18080 },
    ownPort: 18081,
    backend: '127.0.0.1:18082',
    placed: experiment.placed({ ...k, api_tarpit: 0.5 }),
    prefix: '/nonexistent',
  });
  assert.match(conf, /^defaults\n(.*\n)* {2}timeout tarpit 500ms\n/m);
  // A deny holds nothing: no tarpit number, no hold in its model.
  const rate = policyExperiment(haproxyPolicy(RATE), { name: 'rate' }).experiment;
  const [deny] = rate.targets(knobDefaults(rate));
  assert.equal('tarpitMs' in deny.policy, false);
});

test('a key of Host and path (base32+src) gives each case a path of its own; a limit held in a set-var and read back from the table compares as the counter does', async () => {
  const policy = haproxyPolicy(join(root, 'test', 'policies', 'haproxy-per-path.cfg'));
  const { deny, track } = policy.routes[0].limit;
  assert.deepEqual(track.key, { fetch: 'base', text: 'base32+src' });
  // 20 - rate < 0 is rate > 20; the limit stands on the set-var's line.
  // Its acl reads the rate through sub(req.request_rate): a limit, answered by a return.
  assert.deepEqual(
    [deny.sc, deny.counter, deny.op, deny.limit, deny.limitAt, deny.acl, deny.action, deny.status],
    [0, 'http_req_rate', 'gt', 20, 'haproxy-per-path.cfg:20', 'haproxy-per-path.cfg:22', 'return', 429],
  );
  const { experiment } = policyExperiment(policy, { name: 'per-path' });
  const [target] = experiment.targets({ ...knobDefaults(experiment), gateway_limit: 24 });
  assert.deepEqual(
    target.request.slots.slice(0, 2).map((x) => x.path),
    ['/lab-key-1', '/lab-key-2'],
  );
  assert.equal(target.policy.limit, 24);
  const conf = await renderedWith(policy, { gateway_limit: 24 });
  assert.match(conf, /^ {2}http-request set-var\(req\.rate_limit\) int\(24\)$/m);
  assert.match(conf, /^ {2}acl rate_abuse var\(req\.rate_limit\),sub\(req\.request_rate\) lt 0$/m);
});

test('variables: a counter fetched into one and compared, the subtraction either way, and what they cannot say refused', () => {
  const track = '  http-request track-sc0 src';
  const deny = (test) => readLines([track, ...test]).routes?.[0].limit.deny ?? readLines([track, ...test]);
  const rate = '  http-request set-var(txn.rate) sc_http_req_rate(0)';
  const limit = '  http-request set-var(txn.limit) int(30)';
  const direct = deny([rate, '  http-request deny if { var(txn.rate) -m int ge 12 }']);
  assert.deepEqual([direct.op, direct.limit, direct.limitAt], ['ge', 12, undefined]);
  // rate - limit >= 0 is rate >= limit.
  const other = deny([rate, limit, '  http-request deny if { var(txn.rate),sub(txn.limit) ge 0 }']);
  assert.deepEqual([other.op, other.limit, other.limitAt], ['ge', 30, 'team.cfg:11']);
  // Set before the tracking, the variable holds no counter: refused, not guessed.
  assert.match(
    String(readLines([rate, track, '  http-request deny if { var(txn.rate) -m int gt 5 }'])),
    /team.cfg:11: http-request deny if \{ var\(txn.rate\) -m int gt 5 \}: the lab reads deny if/,
  );
  // Read from the table by another key than the tracker's: not this request's entry.
  assert.match(
    String(
      readLines([
        track,
        '  http-request set-var(txn.rate) req.hdr(x-user),table_http_req_rate()',
        '  http-request deny if { var(txn.rate) -m int gt 5 }',
      ]),
    ),
    /team.cfg:11: http-request deny .*: the lab reads deny if/,
  );
  // A limit set per path, the last that applies winning: the lab's GET / meets the default.
  const perPath = deny([
    rate,
    limit,
    '  http-request set-var(txn.limit) int(5) if { path_beg /login }',
    '  http-request deny if { var(txn.rate),sub(txn.limit) ge 0 }',
  ]);
  assert.deepEqual([perPath.limit, perPath.limitAt], [30, 'team.cfg:11']);
  const everywhere = deny([
    rate,
    limit,
    `${limit.replace('30', '12')} if { method GET }`,
    '  http-request deny if { var(txn.rate),sub(txn.limit) ge 0 }',
  ]);
  assert.deepEqual([everywhere.limit, everywhere.limitAt], [12, 'team.cfg:12']);
  // A set-var on a condition the lab cannot decide, compared: refused.
  assert.match(
    String(
      readLines([
        track,
        `${limit} if { req.hdr(x-tier) -m found }`,
        rate,
        '  http-request deny if { var(txn.limit),sub(txn.rate) lt 0 }',
      ]),
    ),
    /team.cfg:12: http-request deny .*: the lab reads deny if/,
  );
});

test("a deny in the frontend's backend: read after the frontend's rules, with the frontend's trackers, its tarpit held for the backend's timeouts", () => {
  const policy = readLines(['  http-request track-sc0 src table api_limits', '  default_backend api_limits'], {
    head: HEAD.slice(0, 7),
    tail: [
      'backend api_limits',
      '  stick-table type ip size 50k expire 30s store http_req_rate(5s)',
      '  http-request tarpit deny_status 429 if { sc_http_req_rate(0) gt 200 }',
      '  server app1 127.0.0.1:8000',
    ],
  });
  const { deny, track } = policy.routes[0].limit;
  assert.deepEqual([track.at, track.table.at, track.table.periodMs], ['team.cfg:8', 'team.cfg:11', 5000]);
  // A backend has a connect timeout (the defaults' 5s): without timeout tarpit, that is the hold.
  assert.deepEqual(
    [deny.at, deny.action, deny.status, deny.limit, deny.hold.ms, deny.hold.at],
    ['team.cfg:12', 'tarpit', 429, 200, 5000, 'team.cfg:3'],
  );
  // What the lab cannot read there is refused there too.
  assert.match(
    String(
      readLines(['  http-request track-sc0 src', '  default_backend app'], {
        tail: [
          'backend app',
          '  http-request silent-drop if { sc_http_req_rate(0) gt 5 }',
          '  server a 127.0.0.1:8000',
        ],
      }),
    ),
    /team.cfg:12: http-request silent-drop: the lab's HAProxy model does not read it yet/,
  );
});

test("HAProxy runs in one thread in the lab (with two, it drops a log line when both write it at once), the file's nbthread said and left out", async () => {
  const { renderHaproxy } = await import('../lab/policy/haproxy/render.mjs');
  const { proxyNamed } = await import('../lab/policy/proxies/index.mjs');
  const policy = haproxyPolicy(join(root, 'test', 'policies', 'haproxy-table-backend.cfg'));
  const conf = renderHaproxy(policy, {
    ports: { '0.0.0.0:8053': 18080 },
    ownPort: 18081,
    backend: '127.0.0.1:18082',
    prefix: '/nonexistent',
  });
  const global = conf.slice(conf.indexOf('\nglobal\n'), conf.indexOf('\ndefaults'));
  assert.match(global, /^ {2}nbthread 1$/m);
  assert.doesNotMatch(global, /nbthread 2/);
  const said = proxyNamed('haproxy')
    .changes(policy)
    .find((c) => /^nbthread 2/.test(c.what));
  assert.match(said.what, /left out \(the lab runs one thread: .*drops a log line/);
  // A global maxconn asks for two open files a connection: HAProxy starts with what the machine
  // gives it (with strict limits, a maxconn over half the machine's open files made it exit).
  assert.match(global, /^ {2}no strict-limits$/m);
  const fds = proxyNamed('haproxy')
    .changes(policy)
    .find((c) => /^maxconn /.test(c.what));
  assert.match(fds.what, /kept; .*no strict-limits/);
});

test('a flag: sc-inc-gpc0 on a rate, a deny on gpc0, read in the file order into a chain whose knobs stand where they are written', async () => {
  const { renderHaproxy } = await import('../lab/policy/haproxy/render.mjs');
  const policy = haproxyPolicy(join(root, 'test', 'policies', 'haproxy-abuse-flag.cfg'));
  const { chain } = policy.routes[0].limit;
  assert.deepEqual(chain.rules, [{ track: 0 }, { deny: 0 }, { inc: 0 }]);
  assert.deepEqual(
    [chain.denies[0].counter, chain.incs[0]],
    [
      'gpc0',
      {
        inc: 0,
        gpc: 0,
        action: 'sc-inc-gpc0(0)',
        at: 'haproxy-abuse-flag.cfg:19',
        sc: 0,
        counter: 'http_req_rate',
        op: 'gt',
        limit: 20,
      },
    ],
  );
  const { experiment } = policyExperiment(policy, { name: 'flag' });
  const k = knobDefaults(experiment);
  assert.deepEqual(
    Object.keys(k).filter((n) => n.startsWith('api_')),
    ['api_limit', 'api_flag_limit', 'api_period', 'api_expire'],
  );
  // The flag's limit sets the target's rate; the deny's `gt 0` may be moved down to 0.
  assert.equal(experiment.knobs.api_limit.min, undefined);
  const [target] = experiment.targets({ ...k, api_flag_limit: 9 });
  assert.deepEqual(target.policy.rules, [
    { track: 0 },
    { deny: 0, counter: 'gpc0', op: 'gt', limit: 0 },
    { inc: 0, gpc: 0, reads: 0, counter: 'http_req_rate', op: 'gt', limit: 9 },
  ]);
  const conf = renderHaproxy(policy, {
    ports: { '*:8080': 18080 },
    ownPort: 18081,
    backend: '127.0.0.1:18082',
    placed: experiment.placed({ ...k, api_flag_limit: 9, api_expire: 12 }),
    prefix: '/nonexistent',
  });
  assert.match(conf, /\n {2}http-request sc-inc-gpc0\(0\) if \{ sc_http_req_rate\(0\) gt 9 \}\n/);
  assert.match(conf, /\n {2}stick-table type ip size 100k expire 12000ms store gpc0,http_req_rate\(10000ms\)\n/);
});

test('a flag the model cannot follow is refused by name: added to before it is tracked, to a table that stores no gpc, or on src never forgotten', () => {
  const table = (store, expire = 'expire 30s ') => `  stick-table type ip size 100k ${expire}store ${store}`;
  const gpc = table('gpc0,http_req_rate(10s)');
  const deny = '  http-request deny if { sc_get_gpc0(0) gt 0 }';
  const track = '  http-request track-sc0 src';
  const flag = '  http-request sc-inc-gpc0(0) if { sc_http_req_rate(0) gt 5 }';
  const cases = [
    [[gpc, flag, track, deny], /team.cfg:9: sc-inc-gpc0\(0\) before any track-sc0/],
    [
      [table('http_req_rate(10s)'), track, flag, deny],
      /team.cfg:10: sc-inc-gpc0\(0\): the table \(team.cfg:8\) stores neither gpc0/,
    ],
    [
      [gpc, track, deny, '  http-request sc-inc-gpc0(0) if { path_beg /admin }'],
      /team.cfg:11: http-request sc-inc-gpc0\(0\) if \{ path_beg \/admin \}: the lab reads/,
    ],
    [
      [gpc, track, '  http-request deny if { sc0_get_gpc1 gt 0 }'],
      /team.cfg:10: the deny reads gpc1, and the table \(team.cfg:8\) does not store it/,
    ],
  ];
  const head = HEAD.slice(0, -1);
  for (const [lines, said] of cases) assert.match(String(readLines(lines, { head })), said, lines.join(' | '));
  const never = readLines([table('gpc0,http_req_rate(10s)', ''), track, deny, flag], { head });
  assert.throws(
    () => policyExperiment(never, { name: 'never' }),
    /team.cfg:8: a count read from this table \(gpc0\) is never forgotten without an expire/,
  );
});

test("tcp-request content track-sc runs before every http-request rule, wherever written; the lab's /healthz is accepted before it, so HAProxy counts no probe", async () => {
  const { renderHaproxy } = await import('../lab/policy/haproxy/render.mjs');
  const { freePort, startListening } = await import('./lib/listening.mjs');
  const policy = haproxyPolicy(join(root, 'test', 'policies', 'haproxy-tcp-content.cfg'));
  const { chain, track, deny } = policy.routes[0].limit;
  assert.equal(chain, undefined);
  assert.deepEqual([track.key.text, track.table.periodMs, deny.limit], ['src', 5000, 15]);
  const [port, own] = [await freePort(), await freePort()];
  const { createServer } = await import('node:http');
  const backend = createServer((_, res) => res.end('ok'));
  await new Promise((resolve) => backend.listen(0, '127.0.0.1', resolve));
  const conf = renderHaproxy(policy, {
    ports: { '*:8080': port },
    ownPort: own,
    backend: `127.0.0.1:${backend.address().port}`,
    prefix: '/nonexistent',
  });
  const dir = mkdtempSync(join(tmpdir(), 'lab-haproxy-tcp-'));
  let haproxy = null;
  try {
    writeFileSync(join(dir, 'haproxy.cfg'), conf);
    haproxy = (await startListening(['haproxy', '-db', '-f', join(dir, 'haproxy.cfg')], port)).child;
    const get = async (path) => (await fetch(`http://127.0.0.1:${port}${path}`)).status;
    // More probes than the limit: none of them counts, so the next request is not refused.
    for (let i = 0; i < 20; i += 1) assert.equal(await get('/healthz'), 200);
    assert.equal(await get('/'), 200);
  } finally {
    haproxy?.kill();
    backend.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('after an overload on one entry, a window lets a client that slowed down back in within two periods, a flag keeps it out: the recover case tells them apart, and a period a fifth longer or shorter', () => {
  const recoverOf = (file, name, overrides = {}) => {
    const { experiment } = policyExperiment(haproxyPolicy(join(root, 'test', 'policies', file)), { name });
    addExperiment(experiment);
    const plan = makePlan({ experiment: name, suite: 'spike', factor: 5, overrides });
    const [over, recover] = plan.cases.filter((c) => c.step === 'over' || c.step === 'recover');
    // Every case from 127.0.0.1 meets one entry: the recover case right after the overload, on it,
    // sending as the overload did (a key of its own per case would be a fresh entry).
    assert.deepEqual([recover.follows, recover.startMs], [over.id, over.startMs + over.durationMs]);
    assert.deepEqual([recover.path, recover.headers], [over.path, over.headers]);
    return recover;
  };
  // 6 r/s for 8 s (48 requests, all counted), then 1 r/s for 22 s (--quick 5: five times faster):
  // the model lets 13 through, judged 11..15.
  const window = recoverOf('haproxy-rate.cfg', 'recover-window');
  assert.deepEqual([window.expected.ok.lo, window.expected.ok.hi, window.requests], [11, 15, 22]);
  // Two trackers, src shared and X-API-Key one per case: the recover case sends the overload's key.
  const keyed = recoverOf('haproxy-two-trackers.cfg', 'recover-keyed');
  assert.deepEqual([keyed.headers, keyed.expected.ok.lo, keyed.expected.ok.hi], [{ 'x-api-key': 'lab-key-3' }, 11, 15]);
  // The flag set on the overload holds while every request touches the entry.
  const flag = recoverOf('haproxy-abuse-flag.cfg', 'recover-flag');
  assert.ok(flag.expected.ok.hi <= 2 && flag.requests >= 30, JSON.stringify(flag.expected.ok));
  // A flag in a table of its own (gpc0 alone, expire 10 s) is touched by each request's tracking
  // too: it holds through the recovery, where a model touching it only when flagged let 1..6 in.
  const apart = recoverOf('haproxy-flag-table.cfg', 'recover-flag-table');
  assert.ok(apart.expected.ok.hi <= 2, JSON.stringify(apart.expected.ok));
  // The window's period moved by a fifth either way: what the model then gives fails the range.
  for (const period of [8, 12]) {
    const { min, max } = recoverOf('haproxy-rate.cfg', `recover-period-${period}`, { api_period: period }).expected.ok;
    assert.ok(max < window.expected.ok.lo || min > window.expected.ok.hi, `period ${period} s: ${min}..${max}`);
  }
  // What a stack with its period at 12 s measured (8 of 22 let in) fits, by the plan's model, a
  // period about that long: the recover case explained after the overload it follows.
  const plan = makePlan({ experiment: 'recover-window', suite: 'spike', factor: 5 });
  const fits = explainCase(plan, 'api-recover', { ok: 8, limited: 14, sent: 22 });
  const period = fits.found.find((f) => f.knob === 'api_period');
  assert.ok(period.lo <= 12.5 && period.hi >= 12, JSON.stringify(fits.found));
});

test("where each case has a key of its own, the overload is still followed on its key: the cases start together, the recover case at the overload's end, and it tells the period apart", () => {
  const planOf = (name, overrides = {}) => {
    const { experiment, routes } = policyExperiment(
      haproxyPolicy(join(root, 'test', 'policies', 'haproxy-tls-key.cfg')),
      { name },
    );
    addExperiment(experiment);
    return { plan: makePlan({ experiment: name, suite: 'spike', factor: 5, overrides }), routes };
  };
  const { plan, routes } = planOf('recover-own-key');
  assert.deepEqual(
    plan.cases.map((c) => [c.step, c.startMs - plan.leadInMs]),
    [
      ['under', 0],
      ['fill', 0],
      ['over', 0],
      ['recover', 1000],
    ],
  );
  const [over, recover] = plan.cases.slice(2);
  assert.equal(recover.follows, over.id);
  // The overload's key, which no other case sends.
  assert.deepEqual(recover.headers, over.headers);
  assert.equal(plan.cases.filter((c) => c.headers['x-api-key'] === over.headers['x-api-key']).length, 2);
  assert.match(
    casesWords(routes.find((r) => r.target)),
    /^together, each with a fresh bucket, but the recovery right after the overload, on its key/,
  );
  // 30 in 5 s: locked out through the overload whatever the period; the slower client let back
  // in as the window forgets it, sooner or later by a fifth of the period.
  for (const period of [4, 6]) {
    const moved = planOf(`recover-own-key-${period}`, { api_period: period }).plan.cases.at(-1).expected.ok;
    const o = plan.cases.at(-1).expected.ok;
    assert.ok(
      moved.max < o.lo || moved.min > o.hi,
      `period ${period} s: ${moved.min}..${moved.max} against ${o.lo}..${o.hi}`,
    );
    assert.deepEqual(
      planOf(`over-own-key-${period}`, { api_period: period }).plan.cases[2].expected.ok,
      over.expected.ok,
    );
  }
});

test('conn_cur and conn_rate tracked per request: read with their periods and knobs, conn_cur planned as requests held in progress, a table without them refused', () => {
  const name = 'conn-limits';
  const { experiment } = policyExperiment(haproxyPolicy(join(root, 'test', 'policies', 'haproxy-conn-limits.cfg')), {
    name,
  });
  addExperiment(experiment);
  const knobs = knobDefaults(experiment);
  assert.deepEqual([knobs.api_limit, knobs.api_limit2, knobs.api_conn_period], [4, 30, 3]);
  const plan = makePlan({ experiment: name, suite: 'spike', factor: 5 });
  // The rate is conn_rate's (30 in 3 s); conn_cur's cases hold the answers: twice its 4, then half.
  const held = plan.cases.filter((c) => c.holdMs);
  assert.deepEqual(
    held.map((c) => c.id),
    ['api-conn-sc0-conn-cur', 'api-conn-sc0-conn-cur-free'],
  );
  const [binds, free] = held;
  assert.ok(
    binds.expected.limited.lo > 0 && free.expected.limited.lo === 0,
    JSON.stringify([binds.expected, free.expected]),
  );
  const head = HEAD.slice(0, -1);
  for (const [store, test, refused] of [
    [
      'http_req_rate(10s)',
      'sc_conn_cur(0) gt 4',
      /team.cfg:10: the deny reads conn_cur, and the table \(team.cfg:8\) does not store it/,
    ],
    [
      'conn_cur',
      'sc0_conn_rate gt 4',
      /team.cfg:10: the deny reads conn_rate, and the table \(team.cfg:8\) does not store it/,
    ],
  ])
    assert.match(
      readLines(
        [
          `  stick-table type ip size 1k expire 30s store ${store}`,
          '  http-request track-sc0 src',
          `  http-request deny deny_status 429 if { ${test} }`,
        ],
        { head },
      ),
      refused,
    );
});

test('a conn_cur limit its cases cannot bind within a minute (200 in progress at 1 r/s) gets no case, and its route says why', () => {
  const dir = mkdtempSync(join(tmpdir(), 'lab-haproxy-conn-'));
  try {
    const file = join(dir, 'team.cfg');
    const lines = [
      ...HEAD.slice(0, -1),
      '  stick-table type ip size 1k expire 30s store conn_rate(10s),conn_cur',
      '  http-request track-sc0 src',
      '  http-request deny if { sc_conn_rate(0) gt 20 }',
      '  http-request deny if { sc_conn_cur(0) gt 100 }',
      ...TAIL,
    ];
    writeFileSync(file, `${lines.join('\n')}\n`);
    const { experiment, routes } = policyExperiment(haproxyPolicy(file), { name: 'conn-unbound' });
    assert.match(
      routes[0].unplanned.join(),
      /sc0_conn_cur: no conn case: 200 in progress at 1 r\/s would need each answer held 200 s/,
    );
    addExperiment(experiment);
    const plan = makePlan({ experiment: 'conn-unbound', suite: 'spike', factor: 5 });
    assert.deepEqual(
      plan.cases.filter((c) => c.holdMs),
      [],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a table's size, read as HAProxy reads it (k, m, g: powers of 1024); one too small for the lab's keys is refused at its line", () => {
  // HEAD with its table's line written over.
  const keyed = (size, extra = '') => [
    ...HEAD.slice(0, -1),
    `  stick-table type string len 32 size ${size} expire 30s store http_req_rate(10s)${extra}`,
  ];
  const deny = ['  http-request track-sc0 req.hdr(X-API-Key)', '  http-request deny if { sc_http_req_rate(0) gt 20 }'];
  const roomy = readLines(deny, { head: keyed('100k') });
  assert.equal(roomy.routes[0].limit.table.size, 102_400);
  assert.doesNotThrow(() => policyExperiment(roomy, { name: 'size-roomy' }));
  for (const [extra, how] of [
    ['', /trash the oldest to make room/],
    [' nopurge', /leave new keys untracked \(nopurge\)/],
  ]) {
    const tight = readLines(deny, { head: keyed(4, extra) });
    assert.equal(tight.routes[0].limit.table.nopurge, extra !== '');
    assert.throws(
      () => policyExperiment(tight, { name: 'size-tight' }),
      (e) =>
        /^team.cfg:8: stick-table size 4 holds fewer entries than the 12 keys the lab's cases send it/.test(
          e.message,
        ) && how.test(e.message),
    );
  }
  // By src, every case shares one entry: a table of one holds it.
  const one = readLines(['  http-request track-sc0 src', deny[1]], {
    head: keyed(1).map((l) => l.replace('string len 32', 'ip')),
  });
  assert.doesNotThrow(() => policyExperiment(one, { name: 'size-one' }));
  assert.match(
    String(readLines(deny, { head: keyed('10x') })),
    /team.cfg:8: stick-table size '10x' is not a size HAProxy reads|haproxy -c refuses it/,
  );
});

test("a condition's terms beside the counter's: those on the path or the method hold for every request of the lab's, or the rule is refused; a counter read in its tracker's own table", async () => {
  const track = '  http-request track-sc0 src';
  const health = '  acl is_health_check path /health';
  const limitOf = (lines) => {
    const read = readLines(lines);
    return typeof read === 'string' ? read : read.routes[0].limit.deny.limit;
  };
  // A health check's path is not the lab's: `!is_health_check` holds for every case, either side.
  assert.equal(limitOf([health, track, '  http-request deny if !is_health_check { sc_http_req_rate(0) gt 20 }']), 20);
  const after = readLines([health, track, '  http-request deny if { sc_http_req_rate(0) gt 20 } !is_health_check']);
  assert.equal(after.routes[0].limit.deny.limit, 20);
  // Its limit is written where the test stands, not over the term after it.
  const conf = await renderedWith(after, { api_limit: 24 });
  assert.match(conf, /^ {2}http-request deny if \{ sc_http_req_rate\(0\) gt 24 \} !is_health_check$/m);
  assert.equal(limitOf([track, '  http-request deny if { method GET } { sc_http_req_rate(0) gt 20 }']), 20);
  // A term false for the lab's GET / never lets the rule apply to its cases; one it cannot decide is said.
  assert.match(
    limitOf([track, '  http-request deny if { sc_http_req_rate(0) gt 20 } { path_beg /api }']),
    /team.cfg:10: .*\{ path_beg \/api \} holds for none of the lab's requests \(GET \/ from 127.0.0.1\)/,
  );
  assert.match(
    limitOf([track, '  http-request deny if { sc_http_req_rate(0) gt 20 } { req.hdr(x-bot) -m found }']),
    /team.cfg:10: .*\{ req.hdr\(x-bot\) -m found \}: the lab cannot tell whether it holds for its requests/,
  );
  // A match method or a file's list (-m, -f) is not decided.
  assert.match(
    limitOf([track, '  http-request deny if { sc_http_req_rate(0) gt 20 } !{ path -m beg /static }']),
    /team.cfg:10: .*!\{ path -m beg \/static \}: the lab cannot tell whether it holds/,
  );
  // A tracking's condition on the source: the lab's requests come from 127.0.0.1.
  const deny = '  http-request deny if { sc_http_req_rate(0) gt 20 }';
  assert.equal(limitOf(['  acl internal src 10.0.0.0/8', '  http-request track-sc0 src unless internal', deny]), 20);
  assert.match(
    limitOf(['  acl is_local src 127.0.0.1 ::1', '  http-request track-sc0 src if !is_local', deny]),
    /team.cfg:10: track-sc0 src if !is_local: its condition holds for none of the lab's requests .*: it never tracks them/,
  );
  assert.match(
    limitOf(['  http-request track-sc0 src unless { req.hdr(x-internal) -m found }', deny]),
    /team.cfg:9: .*\{ req.hdr\(x-internal\) -m found \}: the lab cannot tell whether it holds/,
  );
  assert.match(
    limitOf([track, '  http-request deny if { sc_http_req_rate(0) gt 20 } !{ src 127.0.0.0/8 }']),
    /team.cfg:10: .*!\{ src 127.0.0.0\/8 \} holds for none of the lab's requests/,
  );
  // Named in the counter's fetch, the tracker's own table is read; another is refused.
  const inTable = (name) =>
    readLines(
      ['  http-request track-sc0 src table limits', `  http-request deny if { sc_http_req_rate(0,${name}) gt 20 }`],
      {
        head: HEAD.slice(0, 7),
        tail: [
          ...TAIL,
          'backend limits',
          '  stick-table type ip size 100k expire 30s store http_req_rate(10s)',
          'backend other',
          '  stick-table type ip size 100k expire 30s store http_req_rate(10s)',
        ],
      },
    );
  assert.equal(inTable('limits').routes[0].limit.deny.limit, 20);
  assert.match(
    inTable('other'),
    /team.cfg:9: reads sc0's http_req_rate in table other \(team.cfg:\d+\), not the one track-sc0 tracks into/,
  );
});

test("rate-limit sessions: read from the frontend or its defaults as a knob on its line, met by a case that opens a connection per request, the warm-up's connections accepted before the first case", async () => {
  const rules = [
    '  http-request track-sc0 src',
    '  http-request deny deny_status 429 if { sc_http_req_rate(0) gt 20 }',
  ];
  const withSessions = (line, { idle = '  timeout client 5m' } = {}) =>
    readLines(rules, {
      head: [
        'defaults',
        '  mode http',
        line,
        idle,
        ...HEAD.slice(2, 5).filter((l) => !/client/.test(l)),
        ...HEAD.slice(5),
      ],
    });
  const policy = withSessions('  rate-limit sessions 40');
  assert.deepEqual(policy.routes[0].sessions, {
    limit: 40,
    at: 'team.cfg:3',
    idle: { ms: 300_000, at: 'team.cfg:4', what: 'timeout client 5m' },
  });
  // 0 is HAProxy's "no limit"; a number is read as its strtoul(..., 0) reads it: 0x hex, 0 octal.
  assert.equal(withSessions('  rate-limit sessions 0').routes[0].sessions, undefined);
  assert.equal(withSessions('  rate-limit sessions 0x20').routes[0].sessions.limit, 32);
  assert.equal(withSessions('  rate-limit sessions 010').routes[0].sessions.limit, 8);
  const { experiment } = policyExperiment(policy, { name: 'sessions-read' });
  assert.equal(experiment.knobs.api_sessions.default, 40);
  assert.equal(experiment.knobs.api_sessions.kind, 'rate');
  const rendered = await renderedWith(policy, { api_sessions: 33 });
  assert.match(rendered, /\n {2}rate-limit sessions 33\n/);
  // The lab's own frontend (readiness, metrics) is not held by the defaults' accept limit.
  assert.match(rendered, /\nfrontend lab_own\n(?: {2}.*\n)* {2}rate-limit sessions 0\n/);
  addExperiment(experiment);
  const plan = makePlan({ experiment: 'sessions-read', suite: 'spike', factor: 1 });
  const sessions = plan.cases.find((c) => c.id === 'api-sessions');
  // 1.5 N for 2 s, each request on a connection of its own, at an origin no VU holds one to.
  assert.deepEqual([sessions.rate, sessions.requests, sessions.connects], [60, 120, true]);
  assert.match(sessions.origin, /^http:\/\/lab-connects\.test:\d+$/);
  assert.equal(plan.hosts['lab-connects.test'], '127.0.0.1');
  assert.ok(plan.cases.filter((c) => c !== sessions).every((c) => !c.connects && !c.origin?.includes('lab-connects')));
  // The first 40 at once, the next after the second, then 40 a second: the last of 120 waits
  // about a second (accepted from 2.0 s on, sent at 2.0 s).
  assert.ok(
    sessions.model.maxDelayMs.max > 900 && sessions.model.maxDelayMs.max < 1100,
    JSON.stringify(sessions.model),
  );
  // Every case after the warm-up's connections, one per VU, are accepted 40 a second, and
  // forgotten two seconds later.
  const vus = Math.max(...plan.cases.map((c) => c.vus));
  assert.ok(plan.leadInMs >= ((vus - 40) / 40) * 1000 + 2000, `${plan.leadInMs} ms for ${vus} VUs`);
  assert.ok(plan.cases.every((c) => c.startMs >= plan.leadInMs));
  // The warm-up opens a connection for every VU, and no idle one is closed before the end: the
  // plan knows every connection its cases open, which HAProxy's count of sessions is judged on.
  assert.equal(
    plan.warmVus,
    plan.cases.reduce((a, c) => a + c.vus, 0),
  );
  assert.equal(plan.countsConnections, true);
});

test('rate-limit sessions where HAProxy closes idle connections before the plan ends: a case over the limit is refused, naming the limit and the timeout', () => {
  const rules = [
    '  http-request track-sc0 src',
    '  http-request deny deny_status 429 if { sc_http_req_rate(0) gt 20 }',
  ];
  const head = [
    'defaults',
    '  mode http',
    '  rate-limit sessions 40',
    '  timeout http-keep-alive 10s',
    ...HEAD.slice(2),
  ];
  const policy = readLines(rules, { head });
  assert.deepEqual(policy.routes[0].sessions.idle, {
    ms: 10_000,
    at: 'team.cfg:4',
    what: 'timeout http-keep-alive 10s',
  });
  const { experiment } = policyExperiment(policy, { name: 'sessions-idle' });
  addExperiment(experiment);
  assert.throws(
    () => makePlan({ experiment: 'sessions-idle', suite: 'spike', factor: 1 }),
    /team.cfg:3: rate-limit sessions 40: the case api-fill sends \d+ r\/s to this frontend, whose connections HAProxy closes after timeout http-keep-alive 10s idle \(team.cfg:4\)/,
  );
  // Under the limit, every case runs.
  const calm = readLines(rules, { head: head.map((l) => l.replace('sessions 40', 'sessions 100')) });
  addExperiment(policyExperiment(calm, { name: 'sessions-calm' }).experiment);
  const calmPlan = makePlan({ experiment: 'sessions-calm', suite: 'spike', factor: 1 });
  assert.ok(calmPlan.cases.length > 3);
  // Connections closed while idle are opened again when and where k6 needs them: not counted.
  assert.equal(calmPlan.countsConnections, undefined);
});

test('a frontend whose only limit is rate-limit sessions: its rules let every request through, and its cases each open a connection per request, under the limit and over it', () => {
  const policy = readLines([], { head: [...HEAD.slice(0, 7), '  rate-limit sessions 10'] });
  assert.equal(policy.routes[0].limit, undefined);
  assert.equal(policy.routes[0].sessions.limit, 10);
  const { experiment } = policyExperiment(policy, { name: 'sessions-only' });
  addExperiment(experiment);
  const spike = makePlan({ experiment: 'sessions-only', suite: 'spike', factor: 1 });
  assert.deepEqual(
    spike.cases.map((c) => [c.id, c.rate, c.requests, c.connects]),
    [
      ['api-sessions-under', 5, 10, true],
      ['api-sessions', 15, 30, true],
    ],
  );
  // Nothing is refused; only the connections over 10 a second wait.
  assert.ok(spike.cases.every((c) => c.expected.limited.hi <= 2 && c.expected.ok.lo >= c.requests - 2));
  assert.equal(spike.cases[0].expected.p99Ms.hi, 1000);
  assert.ok(spike.cases[1].model.maxDelayMs.max > 900, JSON.stringify(spike.cases[1].model));
  // Every case waits for the one before to be forgotten by the counter: 2 s of the run's own time.
  assert.ok(spike.cases[1].startMs - (spike.cases[0].startMs + spike.cases[0].durationMs) >= 2000);
  assert.deepEqual(
    makePlan({ experiment: 'sessions-only', suite: 'smoke', factor: 1 }).cases.map((c) => c.id),
    ['api-sessions-under'],
  );
  // With neither a deny nor a rate-limit, nothing to load.
  assert.match(readLines([]), /no frontend denies on a tracked counter or limits its sessions: nothing to load/);
  // A limit past what the machine judges gets no case over it, said; --quick keeps within it.
  const big = policyExperiment(readLines([], { head: [...HEAD.slice(0, 7), '  rate-limit sessions 120000'] }), {
    name: 'sessions-big',
  });
  assert.match(big.routes[0].unplanned.join(), /rate-limit sessions 120000 \(team.cfg:8\): no case over it/);
  assert.equal(big.experiment.maxQuick, 1);
  assert.ok(experiment.maxQuick >= 5, `${experiment.maxQuick}`);
});

test("a frontend's use_backend read as HAProxy picks one for the lab's requests (GET /), and a rule the model does not read left as written where it applies to none of them", () => {
  const rules = [
    '  http-request track-sc0 src',
    '  http-request deny deny_status 429 if { sc_http_req_rate(0) gt 20 }',
  ];
  const backends = [
    'backend static',
    '  http-request deny deny_status 429 if { sc_http_req_rate(0) gt 5 }',
    '  server s1 127.0.0.1:8001',
    'backend app',
    '  server app1 127.0.0.1:8000',
  ];
  const read = (lines) => readLines([...rules, ...lines], { tail: backends });
  // /static is none of the lab's paths: its backend, and the deny there, are not the lab's.
  const policy = read(['  use_backend static if { path_beg /static }', '  use_backend app']);
  assert.equal(policy.routes[0].limit.chain, undefined);
  // One that holds for the lab's requests passes them on, with the rules of that backend.
  const toStatic = read(['  use_backend static if { path_beg / }', '  use_backend app']);
  assert.deepEqual(
    toStatic.routes[0].limit.chain.denies.map((d) => d.limit),
    [20, 5],
  );
  assert.match(
    String(read(['  use_backend be_%[req.hdr(x-tier),lower]'])),
    /team.cfg:11: use_backend be_%\[req.hdr\(x-tier\),lower\]: a backend named from the request/,
  );
  // A rewrite on a URL the lab never asks for changes none of its counts: left as written, and said.
  const rewrite = read([
    '  http-request replace-path (/embed.*) /static\\1 if { url_beg /embed }',
    '  use_backend app',
  ]);
  assert.deepEqual(
    rewrite.leftOut.find((x) => x.at === 'team.cfg:11'),
    {
      at: 'team.cfg:11',
      what: "http-request replace-path: applies to none of the lab's requests (GET / from 127.0.0.1): left as written",
    },
  );
  // One that applies to them, or may, is refused as before.
  assert.match(
    String(read(['  http-request replace-path (.*) /v1\\1 if { url_beg / }', '  use_backend app'])),
    /team.cfg:11: http-request replace-path: the lab's HAProxy model does not read it yet/,
  );
  assert.match(
    String(read(['  http-request replace-path (.*) /v1\\1 if { url_beg /?x }', '  use_backend app'])),
    /team.cfg:11: http-request replace-path: the lab's HAProxy model does not read it yet/,
  );
});

test("rate-limit sessions on a TLS listener: no sessions case (the wait falls in the handshake, which k6 times apart), said on its route; its other cases still wait for the warm-up's connections", () => {
  const head = [
    'defaults',
    '  mode http',
    '  timeout connect 5s',
    '  timeout client 5m',
    '  timeout server 30s',
    '  rate-limit sessions 40',
    'frontend api',
    '  bind :8443 ssl crt /etc/haproxy/certs/site.pem',
    '  stick-table type ip size 100k expire 30s store http_req_rate(10s)',
  ];
  const rules = [
    '  http-request track-sc0 src',
    '  http-request deny deny_status 429 if { sc_http_req_rate(0) gt 20 }',
  ];
  const { experiment, routes } = policyExperiment(readLines(rules, { head }), { name: 'sessions-tls' });
  assert.match(
    routes[0].unplanned.join(),
    /rate-limit sessions \(team.cfg:6\): no sessions case on a TLS listener yet/,
  );
  addExperiment(experiment);
  const plan = makePlan({ experiment: 'sessions-tls', suite: 'spike', factor: 1 });
  assert.ok(plan.cases.every((c) => !c.connects));
  assert.equal(plan.countsConnections, true);
  // Its accept limit alone: nothing to plan.
  assert.throws(
    () => policyExperiment(readLines([], { head }), { name: 'sessions-tls-only' }),
    /frontend api \(team.cfg:7\): rate-limit sessions alone: no sessions case on a TLS listener yet/,
  );
});

test('a small table keyed by a header: an evict case first (its own key over the limit, the table filled, kept, filled again, let in afresh), its size a knob on the table line; where no case can tell a size, the route says why', async () => {
  const table = (size, key = 'req.hdr(X-Token)', type = 'string len 48') =>
    readLines(
      [`  http-request track-sc0 ${key}`, '  http-request deny deny_status 429 if { sc_http_req_rate(0) gt 10 }'],
      {
        head: [...HEAD.slice(0, 7), `  stick-table type ${type} size ${size} expire 30s store http_req_rate(10s)`],
      },
    );
  const policy = table(16);
  const { experiment, routes } = policyExperiment(policy, { name: 'evict-read' });
  assert.equal(experiment.knobs.api_size.default, 16);
  assert.match(await renderedWith(policy, { api_size: 20 }), /stick-table type string len 48 size 20 expire/);
  assert.equal(routes[0].pacing.sequential, true);
  addExperiment(experiment);
  const plan = makePlan({ experiment: 'evict-read', suite: 'spike', factor: 1 });
  const [evict] = plan.cases;
  assert.equal(evict.id, 'api-evict');
  assert.equal(evict.keyRuns.header, 'x-token');
  // 2 L + 1 of its own, S - 1 fresh, 5 of its own, S fresh, 5 of its own, keyless gaps between.
  const runs = evict.keyRuns.runs.filter((r) => !r.none).map((r) => [r.own ? 'own' : 'fresh', r.count]);
  assert.deepEqual(runs, [
    ['own', 21],
    ['fresh', 15],
    ['own', 5],
    ['fresh', 16],
    ['own', 5],
  ]);
  // Every gap outlasts k6's lateness the model allows (100 ms) at the case's rate.
  const gap = evict.keyRuns.runs.find((r) => r.none).count;
  assert.ok((gap * 1000) / evict.rate > 100, `${gap} at ${evict.rate} r/s`);
  // Its own key: 10 of 21, none of 5 (kept), 5 of 5 (trashed, counted afresh); each fresh key once.
  const let_ = 10 + 15 + 16 + 5 + 4 * gap;
  assert.deepEqual([evict.expected.ok.lo, evict.expected.ok.hi], [let_ - 2, let_ + 2]);
  assert.ok(plan.cases.slice(1).every((c) => c.startMs > evict.startMs + evict.durationMs && !c.keyRuns));
  // Too small for the other cases' keys beside it, or keyed by src: no evict case, and why.
  const unplannedOf = (policy) => {
    return policyExperiment(policy, { name: 'e-none' }).routes[0].unplanned[0];
  };
  assert.match(unplannedOf(table(12)), /size 12 .*: no evict case: fewer than 14 entries/);
  const bySrc = { unplanned: [unplannedOf(table(16, 'src', 'ip'))] };
  assert.match(bySrc.unplanned[0], /no evict case: tracked by src: the lab's one address/);
  // Several trackers on one request: each sized table said, once.
  const chain = policyExperiment(haproxyPolicy(join(root, 'test', 'policies', 'haproxy-two-trackers.cfg')), {
    name: 'e-chain',
  }).routes[0];
  assert.deepEqual(
    chain.unplanned.map((u) => /^stick-table size \d+ \((\S+)\): no evict case: several trackers/.exec(u)?.[1]),
    ['haproxy-two-trackers.cfg:21', 'haproxy-two-trackers.cfg:24'],
  );
});
