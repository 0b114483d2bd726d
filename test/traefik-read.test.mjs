// A team's Traefik config read (lab/policy/traefik/read.mjs): a static config and the dynamic
// file it names, or a dynamic config alone, in YAML or TOML; what the model reads, a router's
// reason when it gets no cases, and each construct it cannot read refused by name at file:line.
import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { traefikPolicy } from '../lab/policy/traefik/read.mjs';
import { parseDuration } from '../lab/policy/traefik/words.mjs';
import { readRule } from '../lab/policy/traefik/rule.mjs';
import { proxyClaiming } from '../lab/policy/proxies/index.mjs';
import { renderTraefik } from '../lab/policy/traefik/render.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const policies = join(root, 'test', 'policies');

/** traefikPolicy's answer (or its error's message) on files written in a scratch folder: {name: text}. */
function readFiles(files, main = Object.keys(files)[0]) {
  const dir = mkdtempSync(join(tmpdir(), 'lab-traefik-read-'));
  try {
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    return traefikPolicy(join(dir, main));
  } catch (e) {
    return e.message.replace(dir, '<dir>');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A dynamic YAML config with one router, its middlewares (YAML lines under http.middlewares). */
const dynamic = (middlewares, router = '      middlewares: [limit]') =>
  [
    'http:',
    '  routers:',
    '    api:',
    '      rule: "PathPrefix(`/api`)"',
    '      service: app',
    router,
    '  middlewares:',
    ...middlewares,
    '  services:',
    '    app:',
    '      loadBalancer:',
    '        servers:',
    '          - url: "http://10.0.0.1:80"',
    '',
  ].join('\n');

test('a static config and its dynamic file: entry points, the router with its limit where each number stands', () => {
  const p = traefikPolicy(join(policies, 'traefik-rate.yml'));
  assert.deepEqual(
    p.entryPoints.map((e) => [e.name, e.place]),
    [['web', '*:8080']],
  );
  const api = p.routes.find((r) => r.router === 'api');
  assert.equal(api.path, '/api');
  assert.deepEqual([api.limit.average, api.limit.periodS, api.limit.burst], [10, 1, 20]);
  assert.match(api.limit.atOf.average, /traefik-rate\.dynamic\.yml:16$/);
  assert.equal(p.routes.find((r) => r.router === 'site').none, 'no rateLimit middleware');
  assert.match(p.leftOut[0].at, /traefik-rate\.yml:9$/);
  assert.match(p.leftOut[0].what, /^providers\.docker: its routers are not read/);
});

test('a TOML dynamic config alone: its numbers on their lines, a per-minute period, the header it is keyed by', () => {
  const p = traefikPolicy(join(policies, 'traefik-per-minute.toml'));
  const r = p.routes[0];
  assert.deepEqual([r.host, r.path], ['partners.example.com', '/v2']);
  assert.deepEqual([r.limit.average, r.limit.periodS, r.limit.burst], [90, 60, 3]);
  assert.deepEqual([r.limit.criterion.by, r.limit.criterion.header], ['header', 'X-Api-Key']);
  assert.match(r.limit.criterion.at, /traefik-per-minute\.toml:13$/);
  assert.match(r.limit.atOf.period, /traefik-per-minute\.toml:11$/);
  assert.match(r.limit.at, /traefik-per-minute\.toml:9$/);
});

test('refused by name with file:line: a Redis-backed limit, an excluded address that is none, a bad period', () => {
  assert.match(
    readFiles({
      'd.yml': dynamic([
        '    limit:',
        '      rateLimit:',
        '        average: 5',
        '        redis:',
        '          endpoints: [r:6379]',
      ]),
    }),
    /d\.yml:11: rateLimit\.redis: a Redis-backed limit/,
  );
  assert.match(
    readFiles({
      'd.yml': dynamic([
        '    limit:',
        '      rateLimit:',
        '        average: 5',
        '        sourceCriterion:',
        '          ipStrategy:',
        '            excludedIPs: [10.0.0.0/33]',
      ]),
    }),
    /d\.yml:\d+: ipStrategy\.excludedIPs '10\.0\.0\.0\/33' is not an address or a CIDR/,
  );
  assert.match(
    readFiles({
      'd.yml': dynamic(['    limit:', '      rateLimit:', '        average: 5', '        period: 10 seconds']),
    }),
    /d\.yml:11: '10 seconds' is not a duration/,
  );
  assert.match(
    readFiles({
      's.yml': 'entryPoints:\n  web:\n    address: ":80"\nproviders:\n  file:\n    filename: nowhere.yml\n',
    }),
    /s\.yml:6: providers\.file\.filename nowhere\.yml: no such file/,
  );
});

test('a router the lab cannot send to, or whose middleware answers itself, says why and gets no cases', () => {
  const auth = readFiles({
    'd.yml': dynamic(
      ['    limit:', '      rateLimit: {average: 5}', '    auth:', '      basicAuth: {users: ["a:b"]}'],
      '      middlewares: [auth, limit]',
    ),
  });
  assert.match(auth, /no router with a rateLimit middleware/);
  const two = readFiles({
    'd.yml': dynamic(['    limit:', '      rateLimit: {average: 5}']).replace(
      '\n  middlewares:\n',
      '\n    other:\n      rule: "HostRegexp(`.+`)"\n      service: app\n      middlewares: [limit]\n  middlewares:\n',
    ),
  });
  assert.match(two.routes.find((r) => r.router === 'other').none, /'HostRegexp\(`\.\+`\)' is not read/);
});

test('the small languages: Go durations, rules', () => {
  assert.equal(parseDuration('1m30s', 'x'), 90);
  assert.equal(parseDuration(10, 'x'), 10);
  assert.equal(parseDuration('250ms', 'x'), 0.25);
  assert.deepEqual(readRule('Host(`a.b`) && PathPrefix(`/x`)', 'x'), { host: 'a.b', path: '/x' });
  assert.deepEqual(readRule('(Path(`/y`))', 'x'), { host: null, path: '/y' });
  // Alternatives: the first a request can meet, passing over what is not read.
  assert.deepEqual(readRule('(Host(`a.b`) || Host(`www.a.b`)) && PathPrefix(`/api/v1`)', 'x'), {
    host: 'a.b',
    path: '/api/v1',
  });
  assert.deepEqual(readRule('HostRegexp(`{h:.+}`) || PathPrefix(`/ping`)', 'x'), { host: null, path: '/ping' });
  assert.deepEqual(readRule('Host(`a.b`, `c.d`) && Path("/x")', 'x'), { host: 'a.b', path: '/x' });
  assert.deepEqual(readRule('PathPrefix(`/a`) && (Path(`/b`) || Path(`/a/c`))', 'x'), { host: null, path: '/a/c' });
  assert.match(readRule('!PathPrefix(`/a`)', 'x').none, /'a negation \(!\)' is not read/);
  assert.match(readRule('Path(`/a`) && Path(`/b`)', 'x').none, /no request meets it/);
  assert.match(readRule('Path(`/a`) &&', 'x').none, /'the end' where a matcher was expected/);
  assert.match(readRule('Path(`/a`) + 1', 'x').none, /'\+ 1' is not read/);
});

test('claims: Traefik files are Traefik', () => {
  assert.equal(proxyClaiming('entryPoints:\n  web:\n    address: ":80"\n').name, 'traefik');
  assert.equal(proxyClaiming('[http.routers.a]\n  rule = "Path(`/`)"\n').name, 'traefik');
  assert.equal(proxyClaiming('http:\n  routers:\n    a: {}\n').name, 'traefik');
});

test('the render: entry points on the lab ports, servers at the backend, knobs placed, /healthz ahead of the routers', () => {
  const p = traefikPolicy(join(policies, 'traefik-rate.yml'));
  const text = renderTraefik(p, {
    ports: { '*:8080': 18200 },
    ownPort: 18201,
    backend: '127.0.0.1:18202',
    prefix: '/run/x',
    placed: [{ path: ['http', 'middlewares', 'api-limit', 'rateLimit', 'period'], value: 2 }],
  });
  assert.match(text, /address: 127\.0\.0\.1:18200/);
  assert.match(text, /url: http:\/\/127\.0\.0\.1:18202/);
  assert.match(text, /period: 2000ms/);
  assert.match(text, /service: ping@internal/);
  assert.match(text, /filename: \/run\/x\/traefik\.yml/);
  assert.doesNotMatch(text, /docker|dashboard/);
});

test("Traefik's check reads a refusal from its JSON log and from an exit's message, and nothing else", async () => {
  const { refusals } = await import('../lab/policy/traefik/check.mjs');
  const built =
    '{"level":"error","providerName":"file","error":"t.yml: strconv.ParseInt: parsing \\"x\\": invalid syntax","time":"2026-11-27T05:23:07Z","message":"Error while building configuration (for the first time)"}';
  const decode =
    '{"level":"error","error":"command traefik error: field not found, node: bogus","message":"Command error"}';
  const fine = '{"level":"info","message":"Configuration loaded from file: t.yml"}';
  assert.deepEqual(refusals([fine, built, decode, ''].join('\n')), [
    'Error while building configuration (for the first time): t.yml: strconv.ParseInt: parsing "x": invalid syntax',
    'Command error: command traefik error: field not found, node: bogus',
  ]);
  assert.deepEqual(refusals(fine), []);
});

test("TLS as deployed: a router's tls or its entry point's, served with the lab's certificate; resolvers and options said", () => {
  const files = {
    's.yml': [
      'entryPoints:',
      '  web:',
      '    address: ":80"',
      '    http:',
      '      redirections: {entryPoint: {to: websecure, scheme: https}}',
      '  websecure:',
      '    address: ":443"',
      'providers:',
      '  file: {filename: d.yml}',
      '',
    ].join('\n'),
    'd.yml': [
      dynamic(
        ['    limit:', '      rateLimit: {average: 5}'],
        '      middlewares: [limit]\n      tls:\n        certResolver: le',
      ),
      'tls:',
      '  options:',
      '    default: {minVersion: VersionTLS12, sniStrict: true}',
      '',
    ].join('\n'),
  };
  const p = readFiles(files);
  assert.equal(typeof p, 'object', p);
  const api = p.routes.find((r) => r.router === 'api');
  assert.equal(api.tls, true);
  assert.deepEqual([api.places, api.place], [['*:80', '*:443'], '*:443']);
  assert.ok(
    p.leftOut.some((x) => /d\.yml:\d+$/.test(x.at) && /^tls\.options: left out/.test(x.what)),
    JSON.stringify(p.leftOut),
  );
  assert.ok(
    p.leftOut.some((x) => /d\.yml:\d+$/.test(x.at) && /^routers\.api\.tls\.certResolver: left out/.test(x.what)),
    JSON.stringify(p.leftOut),
  );
  const dir = mkdtempSync(join(tmpdir(), 'lab-traefik-tls-'));
  try {
    const text = renderTraefik(p, {
      ports: { '*:80': 18200, '*:443': 18201 },
      ownPort: 18203,
      backend: '127.0.0.1:18202',
      prefix: dir,
    });
    assert.match(text, /certFile: .*lab-cert\.pem/);
    assert.doesNotMatch(text, /certResolver|sniStrict/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a rateLimit's fields in any case, as Traefik matches them; a key it has no field for refused where it stands", () => {
  const p = readFiles({
    'd.yml': dynamic(['    limit:', '      rateLimit:', '        Average: 5', '        BURST: 7']),
  });
  const api = p.routes.find((r) => r.router === 'api');
  assert.deepEqual([api.limit.average, api.limit.burst], [5, 7]);
  assert.match(api.limit.atOf.burst, /d\.yml:11$/);
  assert.equal(
    readFiles({ 'd.yml': dynamic(['    limit:', '      rateLimit:', '        average: 5', '        bogus: 1']) }),
    "<dir>/d.yml:11: rateLimit.bogus: Traefik's rateLimit has no such field (average, period, burst, sourceCriterion, redis)",
  );
});

test("X-Forwarded-For as a limit's source: each case its own address where the entry point trusts a forwarder, one bucket where it trusts none", async () => {
  const { traefikTargets } = await import('../lab/policy/traefik/targets.mjs');
  const p = traefikPolicy(join(policies, 'traefik-forwarded.yml'));
  const [api, search] = traefikTargets(p).targets;
  assert.equal(api.shared, false);
  assert.equal(api.slots.length, 12);
  assert.deepEqual(
    api.slots.slice(0, 2).map((s) => s.headers['x-forwarded-for']),
    ['192.0.2.1', '192.0.2.2'],
  );
  // 192.0.2.0/24 is excluded there: the next documentation range.
  assert.equal(search.slots[0].headers['x-forwarded-for'], '198.51.100.1');
  const text = renderTraefik(p, {
    ports: { '*:80': 18200, '*:8081': 18203 },
    ownPort: 18201,
    backend: 'b:1',
    prefix: '/x',
  });
  assert.match(text, /trustedIPs:\n\s+- 10\.0\.0\.0\/8\n\s+- 127\.0\.0\.1\/32/);
  assert.equal(text.match(/forwardedHeaders/g).length, 1, 'the office entry point trusts no one, as written');

  const dyn = (strategy, statics = '') =>
    readFiles(
      {
        ...(statics ? { 's.yml': statics } : {}),
        'd.yml': dynamic([
          '    limit:',
          '      rateLimit:',
          '        average: 5',
          '        sourceCriterion:',
          ...strategy,
        ]),
      },
      statics ? 's.yml' : 'd.yml',
    );
  const deep = traefikTargets(dyn(['          ipStrategy:', '            depth: 2'])).targets[0];
  // No static config read: the lab's entry point trusts k6 as the forwarder.
  assert.equal(deep.slots[3].headers['x-forwarded-for'], '192.0.2.4, 203.0.113.254');
  const direct = dyn(
    ['          ipStrategy:', '            depth: 1'],
    'entryPoints:\n  web:\n    address: ":80"\nproviders:\n  file:\n    filename: d.yml\n',
  );
  const [untrusted] = traefikTargets(direct).targets;
  assert.equal(untrusted.shared, true);
  assert.equal(untrusted.slots.length, 1);
  assert.match(untrusted.keys[0].how, /entryPoint web trusts no forwarder .* every request's source is ''/);
  const all = traefikTargets(dyn(['          ipStrategy:', '            excludedIPs: [0.0.0.0/0]'])).targets[0];
  assert.match(all.keys[0].how, /every address the lab could send is in excludedIPs/);
});

test('a limit keyed by a header: each case sends a value of its own and runs beside the others', async () => {
  const { traefikTargets } = await import('../lab/policy/traefik/targets.mjs');
  const [t] = traefikTargets(traefikPolicy(join(policies, 'traefik-per-minute.toml'))).targets;
  assert.equal(t.shared, false);
  assert.deepEqual([t.slots[0].headers['x-api-key'], t.slots[11].headers['x-api-key']], ['lab-key-1', 'lab-key-12']);
  assert.equal(t.slots[0].headers.host, 'partners.example.com');
});

test("a folder of dynamic files read as Traefik's file provider reads it: the first definition kept, routers by priority, a users file replaced", () => {
  const p = traefikPolicy(join(policies, 'traefik-routers.yml'));
  const route = (name) => p.routes.find((r) => r.router === name);
  // 30-overrides.yml's api-limit is skipped: 20-middlewares.yml's stands.
  assert.deepEqual([route('orders').limit.average, route('orders').limit.burst], [60, 10]);
  assert.ok(
    p.leftOut.some((x) => /30-overrides\.yml:\d+$/.test(x.at) && /^http\.middlewares\.api-limit: skipped/.test(x.what)),
  );
  // `entrypoints` is entryPoints; an || of hosts sends the first; site's priority takes legacy's request.
  assert.equal(route('site').place, '*:443');
  assert.deepEqual([route('site').host, route('site').path], ['shop.example.org', '/']);
  assert.match(
    route('legacy').none,
    /goes to router site \(.*10-routers\.yml:6\), whose rule meets it at priority 100/,
  );
  assert.deepEqual(route('orders').path, '/api/v1/orders');
  const text = renderTraefik(p, { ports: { '*:443': 18210 }, ownPort: 18201, backend: 'b:1', prefix: '/x' });
  assert.match(text, /api:\n\s+dashboard: true\n\s+insecure: false/);
  assert.match(text, /users:\n\s+- lab:\{SHA\}/);
  assert.doesNotMatch(text, /admin\.htpasswd/);
  assert.match(text, /entryPoints:\n\s+- websecure/);
});

test('the pause between cases that share a bucket: a refill scales with --quick, a ttl drop does not', async () => {
  const { pauseAt } = await import('../lab/policy/words.mjs');
  assert.equal(pauseAt([[90, null]], 1), 91);
  assert.equal(pauseAt([[90, null]], 5), 91 / 5);
  // Traefik's ttl of 2 s binds at x5: (2 * 5 + 1) / 5, not (2 + 1) / 5.
  assert.equal(pauseAt([[90, 2]], 5), 11 / 5);
  assert.equal(pauseAt([[0.4, 2]], 1), 2);
});

test("a router's rule against a request: true, false, or null where a matcher is not read", async () => {
  const { ruleMeets } = await import('../lab/policy/traefik/rule.mjs');
  const req = { host: 'a.b', path: '/api/x' };
  assert.equal(ruleMeets('Host(`A.b`) && PathPrefix(`/api`)', req), true);
  assert.equal(ruleMeets('Host(`c.d`) || Path(`/api`)', req), false);
  assert.equal(ruleMeets('HostRegexp(`.+`) && PathPrefix(`/api`)', req), null);
  assert.equal(ruleMeets('HostRegexp(`.+`) && PathPrefix(`/web`)', req), false);
  assert.equal(ruleMeets('!PathPrefix(`/web`)', req), true);
});

test("an entry point's middlewares put ahead of its routers' own: the limit read through them, one set of knobs, rendered as written", async () => {
  const { traefikTargets } = await import('../lab/policy/traefik/targets.mjs');
  const p = traefikPolicy(join(policies, 'traefik-entrypoint.yml'));
  const [app, docs, status] = p.routes;
  assert.match(app.limit.via, /^entryPoints\.websecure\.http\.middlewares \(.*traefik-entrypoint\.yml:17\)$/);
  assert.equal(docs.limit.middleware, 'per-client');
  // An allow list of the client address lets k6 on where it holds 127.0.0.1 (app), and answers
  // every request itself where it does not (status).
  assert.match(
    status.none,
    /^ipAllowList office-only \(.*:\d+\): sourceRange \(10\.20\.0\.0\/16\) leaves out k6's 127\.0\.0\.1, so it answers every request 403$/,
  );
  assert.ok(p.leftOut.some((l) => /serversTransports\.internal-ca: left out/.test(l.what)));
  // Each router its own buckets, the middleware's numbers one set of knobs.
  const targets = traefikTargets(p).targets;
  assert.deepEqual(
    targets.map((t) => t.numbers.map((n) => n.knob)),
    [
      ['per_client_average', 'per_client_period', 'per_client_burst'],
      ['per_client_average', 'per_client_period', 'per_client_burst'],
    ],
  );
  assert.match(targets[0].numbers[0].doc, /^routers app, docs: rateLimit per-client's/);
  const text = renderTraefik(p, {
    ports: { '*:80': 18200, '*:443': 18203, '*:8082': 18204 },
    ownPort: 18201,
    backend: 'b:1',
    prefix: '/x',
  });
  assert.doesNotMatch(text, /serversTransport|rootCAs/);
  assert.match(
    text,
    /websecure:\n\s+address: 127\.0\.0\.1:18203\n\s+http:\n\s+tls: \{\}\n\s+middlewares:\n\s+- per-client@file\n\s+- secure-headers@file/,
  );

  // TOML's comma-separated list; a middleware of another provider is not read, and said.
  const statics = (list) =>
    `[entryPoints.web]\naddress = ":80"\n[entryPoints.web.http]\nmiddlewares = ${list}\n[providers.file]\nfilename = "d.yml"\n`;
  const withList = (list) =>
    readFiles(
      {
        's.toml': statics(list),
        'd.yml': dynamic(['    limit:', '      rateLimit:', '        average: 5', '    hdr:', '      headers: {}'], ''),
      },
      's.toml',
    );
  const [api] = withList('"hdr@file, limit@file"').routes;
  assert.equal(api.limit.average, 5);
  // Where the list stands: its key, the line after the table it is in.
  assert.match(api.limit.via, /^entryPoints\.web\.http\.middlewares \(.*s\.toml:4\)$/);
  assert.match(
    withList('["limit@docker"]'),
    /no router with a rateLimit middleware: nothing to load \(api: middleware limit@docker: from provider docker, not read\)$/,
  );
});

test("an inFlightReq beside a rateLimit: read in the chain's order with its amount a knob where it stands; keyed by the Host where it names no source, and refused where the two key apart", async () => {
  const { policyExperiment } = await import('../lab/policy/experiment.mjs');
  const p = traefikPolicy(join(policies, 'traefik-in-flight.yml'));
  const { inFlight } = p.routes[0].limit;
  assert.deepEqual(
    [inFlight.middleware, inFlight.amount, inFlight.first, inFlight.criterion.by],
    ['per-key-in-flight', 4, false, 'header'],
  );
  const { experiment } = policyExperiment(p, { name: 'in-flight' });
  const k = Object.fromEntries(Object.entries(experiment.knobs).map(([n, v]) => [n, v.default]));
  assert.equal(k.api_in_flight, 4);
  const [target] = experiment.targets({ ...k, api_in_flight: 7 });
  assert.deepEqual(target.policy, {
    kind: 'traefik_chain',
    steps: [{ average: 20, periodS: 1, burst: 40 }, { inFlight: 7 }],
  });
  const placed = experiment.placed({ ...k, api_in_flight: 7 });
  const text = renderTraefik(p, {
    ports: { '*:80': 18200 },
    ownPort: 18201,
    backend: '127.0.0.1:18202',
    prefix: '/run/x',
    placed,
  });
  assert.match(text, /inFlightReq:\n\s+amount: 7\n/);
  // No sourceCriterion: Traefik keys an inFlightReq by the Host, the rateLimit by the address.
  const apart = readFiles({
    'd.yml': dynamic(
      ['    limit:', '      rateLimit: {average: 5}', '    held:', '      inFlightReq: {amount: 3}'],
      '      middlewares: [held, limit]',
    ),
  });
  assert.match(
    apart,
    /inFlightReq held \(.*d.yml:\d+\) keys by host, rateLimit limit by address: the lab models one source per router yet/,
  );
  const alone = readFiles({
    'd.yml': dynamic(['    held:', '      inFlightReq: {amount: 3}'], '      middlewares: [held]'),
  });
  assert.match(alone, /an inFlightReq with no rateLimit: not modelled yet/);
  const zero = readFiles({
    'd.yml': dynamic(
      ['    limit:', '      rateLimit: {average: 5}', '    held:', '      inFlightReq: {amount: 0}'],
      '      middlewares: [held, limit]',
    ),
  });
  assert.match(zero, /d.yml:\d+: inFlightReq.amount 0: a whole number >= 1/);
});
