/*
 * A team's policy planned (lab/policy/experiment.mjs): a target per limited route with the model
 * of what it meets, cases under its rate, filling its burst and overloading it, run together
 * where each case has a fresh bucket and one after another, a drain apart, where they share one;
 * and every route it cannot plan named with the reason.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readPolicy, policyTools } from '../lab/policy/index.mjs';
import { policyExperiment } from '../lab/policy/experiment.mjs';
import { addExperiment } from '../thresholds/experiments/index.js';
import { plan as makePlan } from '../thresholds/plan.js';
import { sensitivity } from '../thresholds/sensitivity.js';
import { caseThresholds } from '../thresholds/kinds/limiter.js';
import { pacingWords } from '../lab/policy/words.mjs';
import { needs } from './lib/needs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dir = join(root, 'test', 'fixtures', 'policies');
const tools = policyTools(root);
const missing =
  [tools.crossplane, tools.envoy].filter((f) => !existsSync(f)).map((f) => `${f} is not installed`)[0] ?? null;
const planned = (file, suite) => {
  const { experiment, routes } = policyExperiment(readPolicy(join(dir, file), tools));
  addExperiment(experiment);
  return { routes, plan: makePlan({ experiment: experiment.name, suite }) };
};

test('nginx: the limited routes get cases; a shared bucket puts them one after another, a drain apart', (t) => {
  if (needs(t, missing, './labw setup installs crossplane, nginx and Envoy')) return;
  const { routes, plan } = planned('gateway.conf', 'spike');
  assert.match(
    routes.find((r) => r.at === 'gateway.conf:13').none,
    /answered 200 by return \(gateway\.conf:13\) before its limits/,
  );
  // per_ip_min (2 r/s) sits behind per_ip (5 r/s): a case at 4 r/s fills its burst alone.
  assert.deepEqual(
    plan.cases.map((c) => c.id),
    [
      'api-under',
      'api-fill',
      'api-over',
      'api-fill-per-ip-min',
      'root-under',
      'root-fill',
      'root-over',
      'root-recover',
    ],
  );
  assert.deepEqual([plan.cases[3].rate, plan.cases[3].durationMs], [4, 16000]);
  // Only / shares its bucket among its cases: half its rate right after its overload, on the
  // bucket the overload left (20 r/s, burst 10: it drains at once, and lets nearly all through).
  const [over, recover] = plan.cases.slice(6);
  assert.deepEqual([recover.follows, recover.rate, recover.startMs], ['root-over', 10, over.startMs + over.durationMs]);
  assert.ok(recover.expected.ok.lo >= recover.requests - 4, JSON.stringify(recover.expected.ok));
  // /api/ binds at 120r/m (2 r/s) with burst 20; / at 20 r/s with burst 10, a bucket every case shares.
  assert.deepEqual(
    plan.cases.slice(0, 3).map((c) => c.rate),
    [1, 44, 6],
  );
  // The longest drain: 21 requests at 2 r/s, 10.5 s: 12 s between cases.
  assert.equal(plan.cases[1].startMs - (plan.cases[0].startMs + plan.cases[0].durationMs), 12000);
  const under = plan.cases[0].expected;
  assert.ok(under.limited.lo === 0 && under.ok.hi >= 10, JSON.stringify(under));
  const fill = plan.cases[1].expected;
  assert.ok(fill.limited.lo > 0 && fill.ok.hi < 44, JSON.stringify(fill));
  // Each case its own client address (nginx keys per_ip by it after realip), the route's Host by name.
  assert.deepEqual(
    plan.cases.slice(0, 2).map((c) => [c.origin, c.headers['x-lab-client']]),
    [
      ['http://gateway.example:18200', '198.18.0.1'],
      ['http://gateway.example:18200', '198.18.0.2'],
    ],
  );
  assert.deepEqual(plan.hosts, { 'gateway.example': '127.0.0.1' });
});

test('nginx: the classes of client a map and geo make, each with its cases, and one answered before any limit said', (t) => {
  if (needs(t, missing, './labw setup installs crossplane and nginx')) return;
  const { routes, plan } = planned('classes.conf', 'spike');
  const targets = [...new Set(plan.cases.map((c) => c.target))];
  assert.deepEqual(targets, ['api', 'api-addr-10-20-0-1', 'api-user-agent-crawler']);
  const policies = plan.targetPolicies;
  // Ordinary clients meet `clients` alone; the allow-listed no zone; crawlers both, in the location's order.
  assert.deepEqual(
    targets.map((id) => policies[id].limits.map((l) => l.rateMilli)),
    [[10000], [], [10000, 1000]],
  );
  const allowed = plan.cases.find((c) => c.target === 'api-addr-10-20-0-1');
  assert.equal(allowed.headers['x-lab-client'].startsWith('10.20.'), true);
  assert.equal(allowed.expected.limited.hi <= 2, true, JSON.stringify(allowed.expected));
  assert.match(plan.cases.find((c) => c.target === 'api-user-agent-crawler').headers['user-agent'], /crawler/i);
  assert.match(routes.find((r) => /evilbot/.test(r.class ?? '')).none, /answered 444 before its limits count it/);
});

test('nginx: a dry run expects nothing limited; Envoy: a per-connection bucket is not planned, and why', (t) => {
  if (needs(t, missing, './labw setup installs crossplane and Envoy')) return;
  const dry = planned(join('inc', 'main.conf'), 'spike').plan;
  assert.ok(
    dry.cases.every((c) => c.expected.limited.hi <= 3),
    dry.cases.map((c) => `${c.id} ${JSON.stringify(c.expected.limited)}`).join('; '),
  );
  const { routes, plan } = planned('envoy-edge.yaml', 'spike');
  assert.match(routes.find((r) => r.none).none, /a bucket per downstream connection/);
  assert.deepEqual(
    plan.cases.map((c) => c.id),
    ['root-under', 'root-fill', 'root-over', 'root-recover'],
  );
  // 100 tokens and 100 a second: a second at 400 r/s lets about 200 through.
  assert.ok(
    plan.cases[1].expected.ok.lo > 180 && plan.cases[1].expected.ok.hi < 220,
    JSON.stringify(plan.cases[1].expected.ok),
  );
});

test(
  'Envoy: every number read from the file is a knob, and its spike cases catch a 20 % change of each, both ways',
  { timeout: 180_000 },
  (t) => {
    if (needs(t, missing, './labw setup installs crossplane and Envoy')) return;
    const { experiment } = policyExperiment(readPolicy(join(dir, 'envoy-edge.yaml'), tools));
    addExperiment(experiment);
    assert.deepEqual(
      Object.entries(experiment.knobs).map(([k, v]) => [k, v.default]),
      [
        ['load_rates', []],
        ['load_seconds', 0],
        ['edge_rl_max_tokens', 100],
        ['edge_rl_tokens_per_fill', 50],
        ['edge_rl_fill_interval', 0.5],
      ],
    );
    const s = sensitivity({ experiment: experiment.name, suite: 'spike' });
    assert.deepEqual(
      Object.keys(s.knobs),
      ['edge_rl_max_tokens', 'edge_rl_tokens_per_fill', 'edge_rl_fill_interval'],
      "the load knobs are not the policy's",
    );
    for (const [knob, v] of Object.entries(s.knobs)) {
      const value = experiment.knobs[knob].default;
      for (const dir of ['down', 'up'])
        assert.ok(v[dir] && v[dir].delta <= value * 0.2, `${knob} ${dir}: ${JSON.stringify(v[dir])} of ${value}`);
    }
  },
);

test(
  'nginx: nodelay against delay is a switch the sensitivity tries, and says which limits no case tells apart',
  { timeout: 180_000 },
  (t) => {
    if (needs(t, missing, './labw setup installs crossplane and Envoy')) return;
    const { experiment } = policyExperiment(readPolicy(join(dir, 'gateway.conf'), tools));
    addExperiment(experiment);
    const s = sensitivity({ experiment: experiment.name, suite: 'spike' });
    // per_ip_min (delay=2) switched to nodelay, and per_server (delay all) too: the waits change.
    assert.ok(
      s.knobs.per_ip_min_mode.switch[0].cases > 0 && s.knobs.per_server_mode.switch[0].cases > 0,
      JSON.stringify(s.knobs),
    );
    // per_ip's nodelay switched to delay is hidden behind per_ip_min's longer waits: said, not guessed.
    assert.deepEqual(s.knobs.per_ip_mode.switch, [{ value: 'delay', by: null, cases: 0 }]);
    assert.ok(s.unseen.includes('per_ip_mode'));
    // per_ip_min's burst (20), hidden behind per_ip in the other cases, is caught within 20 % both ways by its own.
    for (const dir of ['down', 'up'])
      assert.ok(s.knobs.per_ip_min_burst[dir]?.delta <= 4, `${dir}: ${JSON.stringify(s.knobs.per_ip_min_burst)}`);
  },
);

test("a plan's file keeps the policies the replay judges on: nodelay, delay=N and Envoy's buckets survive JSON", (t) => {
  if (needs(t, missing, './labw setup installs crossplane, nginx and Envoy')) return;
  for (const file of ['tls-http2.conf', 'argument-key.conf', 'envoy-descriptors.yaml']) {
    const { experiment } = policyExperiment(readPolicy(join(root, 'test', 'policies', file), tools));
    addExperiment(experiment);
    const { targetPolicies } = makePlan({ experiment: experiment.name, suite: 'spike' });
    assert.deepEqual(JSON.parse(JSON.stringify(targetPolicies)), targetPolicies, file);
  }
});

test("a route's pacing said from the plan it holds, and from a run recorded before its drains were kept", async () => {
  const { pacingWords } = await import('../lab/policy/words.mjs');
  assert.equal(
    pacingWords({ sequential: true, drains: [[2, 1]], shared: true }, 5),
    'one after another, 0.6 s apart (its bucket empties or refills between)',
  );
  assert.equal(
    pacingWords({ sequential: true, pauseS: 3, shared: false }, 2),
    "one after another, 1.5 s apart (another route's bucket empties or refills between)",
  );
});

test("limit_conn beside limit_req, answered 503 and 429: each case counts the other limit's status apart, judged on its own range", (t) => {
  if (needs(t, missing, './labw setup installs crossplane, nginx and Envoy')) return;
  const { experiment } = policyExperiment(readPolicy(join(root, 'test', 'policies', 'conn-and-req.conf'), tools));
  addExperiment(experiment);
  const plan = makePlan({ experiment: experiment.name, suite: 'spike', factor: 5 });
  const byId = Object.fromEntries(plan.cases.map((c) => [c.id, c]));
  const over = byId['root-over'];
  // A rate case: limit_req's 429 is its limited status, and limit_conn's 503 is counted beside it.
  assert.deepEqual([over.limitedStatus, over.alsoStatuses], [429, [503]]);
  assert.deepEqual(Object.keys(over.expected.also), ['503']);
  const own = caseThresholds(over);
  assert.deepEqual(own['http_reqs{case:root-over,status:503}'], [
    `count>=${over.expected.also[503].lo}`,
    `count<=${over.expected.also[503].hi}`,
  ]);
  // The limit_conn case the other way round.
  assert.deepEqual([byId['root-conn-perip'].limitedStatus, byId['root-conn-perip'].alsoStatuses], [503, [429]]);
});

test('a limit_conn keyed alike for every case ($server_name) runs the cases one after another, each after the held answers of the one before', (t) => {
  if (needs(t, missing, './labw setup installs crossplane, nginx and Envoy')) return;
  const dir = mkdtempSync(join(tmpdir(), 'lab-conn-shared-'));
  try {
    const file = join(dir, 'per-server.conf');
    const text = readFileSync(join(root, 'test', 'policies', 'conn-and-req.conf'), 'utf8').replace(
      'limit_conn_zone $binary_remote_addr zone=perip:10m;',
      'limit_conn_zone $server_name zone=perip:10m;',
    );
    writeFileSync(file, text);
    const { experiment, routes } = policyExperiment(readPolicy(file, tools));
    assert.equal(routes[0].pacing.sequential, true);
    assert.match(pacingWords(routes[0].pacing, 5), /limit_conn keyed alike for every case/);
    addExperiment(experiment);
    const plan = makePlan({ experiment: experiment.name, suite: 'spike', factor: 5 });
    const conn = plan.cases.find((c) => c.id === 'root-conn-perip');
    const next = plan.cases[plan.cases.indexOf(conn) + 1];
    // The next case starts once the conn case's last answer, held holdMs, has ended.
    assert.ok(next.startMs >= conn.startMs + conn.durationMs + conn.holdMs, `${next.startMs} vs ${conn.startMs}`);
    // Keyed per client, the same file's cases run together.
    const own = policyExperiment(readPolicy(join(root, 'test', 'policies', 'conn-and-req.conf'), tools));
    assert.equal(own.routes[0].pacing.sequential, false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
