// The runner: argument checks, the topology file, template rendering, ports, and judging results.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, readFileSync, existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TOOLS } from '../lab/bench/index.mjs';
import { parseRunArgs } from '../lab/cli/args.mjs';
import { plansFor } from '../lab/run/open.mjs';
import { k8sFlags } from '../lab/cli/render.mjs';
import { loadTopology, stackServices, portsByService } from '../lab/stack/topology.mjs';
import { serviceView, renderConfigs } from '../lab/stack/render.mjs';
import { assertPortsFree } from '../lab/stack/procs.mjs';
import { judge as judgeLimiter } from '../lab/kinds/limiter.mjs';
import { plan, experiments, stackTargets } from '../thresholds/plan.js';
import { k6Options } from '../thresholds/k6-options.js';
import { labEnv } from '../lab/run/suite.mjs';
import { k6Priority, atPriority, K6_NICE, withCollectorRoom } from '../lab/run/k6.mjs';
import { needs, notRun } from './lib/needs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const topology = loadTopology(join(root, 'docker-compose.yml'));

test('bad input is refused before anything starts, naming the valid choices', () => {
  assert.throws(() => parseRunArgs(['spikey']), /unknown suite 'spikey'; valid: smoke, spike, soak/);
  assert.throws(
    () => parseRunArgs(['soak/envoy-vs-nginx']),
    /suite 'soak' has no experiment 'envoy-vs-nginx'; it has: burst/,
  );
  assert.deepEqual(parseRunArgs(['spike/burst']).experiments, ['burst']);
  assert.throws(
    () => parseRunArgs(['spike', 'burst.rat=5']),
    /unknown knob 'rat' for burst; valid: rate, bursts, status/,
  );
  assert.throws(() => parseRunArgs(['spike', 'nope=1']), /unknown knob 'nope'; valid: burst.rate/);
  assert.throws(() => parseRunArgs(['spike', 'rate=-3']), /burst.rate: '-3' is not a whole number > 0/);
  assert.throws(() => parseRunArgs(['spike', 'rate=0']), /not a whole number > 0/);
  assert.throws(() => parseRunArgs(['spike', 'bursts=10,2.5']), /'2.5' is not a whole number >= 0/);
  assert.throws(() => parseRunArgs(['spike', '--quick=0']), /--quick takes a whole factor >= 1/);
  assert.throws(() => parseRunArgs(['soak', 'envoy-vs-nginx.status=429']), /not part of soak/);
  assert.throws(
    () => parseRunArgs(['cdnx'], { target: 'experiment' }),
    /unknown experiment 'cdnx'; valid: burst, envoy-vs-nginx/,
  );
  assert.throws(
    () => parseRunArgs(['spike', '--quick', 'fill_interval=0.08']),
    /fill_interval becomes 40 ms with --quick=2; Envoy's minimum is 50 ms/,
  );
  // Only plain decimal numbers, each option and knob once, no stray path segment.
  assert.throws(() => parseRunArgs(['spike/burst/x']), /name a suite, or suite\/experiment/);
  assert.throws(() => parseRunArgs(['spike', 'rate=1e1']), /'1e1' is not a whole number > 0 \(decimal digits\)/);
  assert.throws(() => parseRunArgs(['spike', 'rate=0x5']), /'0x5' is not a whole number/);
  assert.throws(() => parseRunArgs(['spike', 'fill_interval=1e-1']), /'1e-1' is not a number > 0 \(decimal/);
  assert.throws(
    () => parseRunArgs(['spike', '--quick=0x10']),
    /--quick takes a whole factor >= 1 \(decimal digits\), got '0x10'/,
  );
  assert.throws(() => parseRunArgs(['spike', 'rate=5', 'rate=6']), /'rate=6': burst.rate is given twice/);
  assert.throws(() => parseRunArgs(['spike', '--quick', '--quick=2']), /--quick is given twice/);
  assert.throws(() => parseRunArgs([]), /name a suite first \(smoke, spike, soak, stress, load, breakpoint\)/);
  // What this kind of machine can serve, and why.
  assert.throws(() => parseRunArgs(['spike', '--quick=1000000']), /whole factor 1..100/);
  assert.throws(() => parseRunArgs(['breakpoint', 'connections=1e9']), /not a whole number/);
  assert.throws(() => parseRunArgs(['breakpoint', 'connections=10000']), /over 5000: the open-files limit/);
});

test('k6 runs ahead of the stack when the runner is root, at its own priority otherwise', () => {
  assert.equal(k6Priority(0), K6_NICE);
  assert.ok(K6_NICE < 0);
  assert.equal(k6Priority(1000), null);
  assert.deepEqual(atPriority(null, ['k6', 'run']), ['k6', 'run']);
  // The command as spawned: the process it execs has the niceness (field 19 of /proc/<pid>/stat),
  // and every thread k6 starts later inherits it.
  const nice = k6Priority();
  const [cmd, ...argv] = atPriority(nice, ['sh', '-c', 'cut -d" " -f19 /proc/$$/stat']);
  const out = spawnSync(cmd, argv, { encoding: 'utf8' });
  assert.equal(out.status, 0, out.stderr);
  assert.equal(Number(out.stdout.trim()), nice ?? Number(readFileSync('/proc/self/stat', 'utf8').split(' ')[18]));
});

test("k6's collector is given room (GOGC 400, a quarter of memory at most); the environment's own settings win", () => {
  const room = withCollectorRoom({ PATH: '/bin' });
  assert.equal(room.GOGC, '400');
  assert.match(room.GOMEMLIMIT, /^[1-9]\d*MiB$/);
  assert.equal(room.PATH, '/bin');
  assert.deepEqual(
    [withCollectorRoom({ GOGC: '100' }).GOGC, withCollectorRoom({ GOMEMLIMIT: '1GiB' }).GOMEMLIMIT],
    ['100', '1GiB'],
  );
});

test('knobs: bare names reach every experiment that has them, qualified ones only theirs', () => {
  const r = parseRunArgs(['spike', '--quick', 'status=418', 'burst.rate=5']);
  assert.equal(r.factor, 5);
  // Every experiment of the suite with a `status` knob gets the bare one; only burst the qualified rate.
  const spike = Object.values(experiments).filter((e) => e.suites.spike);
  const expected = Object.fromEntries(spike.map((e) => [e.name, e.knobs.status ? { status: '418' } : {}]));
  expected.burst.rate = '5';
  assert.deepEqual(r.overrides, expected);
  assert.deepEqual(r.overrides.burst, { status: '418', rate: '5' });
  assert.deepEqual(r.overrides['envoy-vs-nginx'], { status: '418' });
});

test('a flag that needs a value takes it after = or a space, as k6 does; left without one it is named', () => {
  assert.deepEqual(parseRunArgs(['spike', '--segments', '2']), parseRunArgs(['spike', '--segments=2']));
  assert.equal(parseRunArgs(['spike', '--segments', '2', '--quick']).segments, 2);
  assert.throws(
    () => parseRunArgs(['spike', '--segments']),
    /^Error: --segments is missing its value: --segments=N or --segments N$/,
  );
  assert.throws(
    () => parseRunArgs(['spike', '--segments', '0']),
    /--segments takes a whole number of k6 processes 1..8, got '0'/,
  );
  assert.throws(
    () => parseRunArgs(['spike', '--segments', '2', '--segments=3']),
    /'--segments=3': --segments is given twice/,
  );
  // render --k8s's own flags, the same way.
  assert.deepEqual(k8sFlags(['spike/burst', '--parallelism', '2', '--prometheus', 'http://p:9090', '--quick']), {
    parallelism: 2,
    prometheus: 'http://p:9090',
    rest: ['spike/burst', '--quick'],
  });
  assert.deepEqual(
    k8sFlags(['--parallelism=3', '--prometheus=http://q:9090', 'spike/burst']),
    k8sFlags(['--parallelism', '3', '--prometheus', 'http://q:9090', 'spike/burst']),
  );
  assert.throws(
    () => k8sFlags(['spike/burst', '--parallelism']),
    /--parallelism is missing its value: --parallelism=N or --parallelism N/,
  );
  assert.throws(
    () => k8sFlags(['spike/burst', '--prometheus']),
    /--prometheus is missing its value: --prometheus=URL or --prometheus URL/,
  );
  assert.throws(
    () => k8sFlags(['--parallelism', '0']),
    /--parallelism takes a whole number of runner pods 1..999, got '0'/,
  );
});

test('a word parseRunArgs cannot read is refused with every form it accepts', () => {
  for (const w of ['--bogus', '2', 'Rate=3']) {
    assert.throws(
      () => parseRunArgs(['spike', w]),
      (e) => {
        assert.equal(
          e.message,
          `cannot read '${w}': expected --quick[=N], --segments=N, --no-metrics, --stack-knob knob=value, --stack-cpu service=N, knob=value or experiment.knob=value`,
        );
        return true;
      },
    );
  }
});

test('a perturbed stack: --stack-knob goes to the stack alone, --stack-cpu names a service and a share of a core', () => {
  const r = parseRunArgs(['spike/burst', '--quick', '--stack-knob', 'rate=4', 'bursts=0,50']);
  assert.deepEqual(r.untold, { burst: { rate: '4' } });
  assert.deepEqual(r.overrides, { burst: { bursts: '0,50' } });
  const p = plansFor(r)[0];
  assert.equal(p.policy.rate, 15); // the model's 3 r/s, x5
  assert.equal(p.stackPolicy.rate, 20);
  assert.deepEqual(p.stackPolicy.bursts, p.policy.bursts);
  assert.equal(parseRunArgs(['spike/burst']).untold, undefined);
  assert.deepEqual(parseRunArgs(['breakpoint', '--stack-cpu=json-filter-node=25']).slowed, { 'json-filter-node': 25 });
  for (const [words, msg] of [
    [['spike/burst', '--stack-knob', 'nosuch=1'], /unknown knob 'nosuch'/],
    [['spike/burst', '--stack-knob', 'rate=-1'], /knob burst.rate/],
    [['spike/burst', '--stack-knob', 'rate=4', '--stack-knob', 'rate=5'], /given twice/],
    [['spike/burst', '--stack-cpu', 'json-filter-node=0'], /--stack-cpu takes service=N/],
    [['spike/burst', '--stack-cpu', '../x=5'], /--stack-cpu takes service=N/],
    [['spike/burst', '--stack-cpu'], /--stack-cpu is missing its value/],
  ])
    assert.throws(() => parseRunArgs(words), msg);
  assert.throws(
    () => parseRunArgs(['burst', '--stack-knob', 'rate=4'], { target: 'experiment' }),
    /perturb a test run/,
  );
});

const lab = (...words) =>
  spawnSync(process.execPath, [join(root, 'lab', 'cli', 'index.mjs'), ...words], { cwd: root, encoding: 'utf8' });

test('the command line: the entry point picks the command; errors print as error: <message>, exit 2', () => {
  for (const r of [lab(), lab('nosuch')]) {
    assert.equal(r.status, 2);
    assert.match(
      r.stderr,
      /^usage: lab <test\|bench\|expect\|docs\|up\|metrics\|panels\|verdict\|clean\|keep\|down\|render\|knobs\|results\|policies\|compare-proxies\|new\|export\|lint> \.\.\.; unknown command '(nosuch)?'\n$/,
    );
  }
  const bad = lab('expect', 'spike', '--segments');
  assert.equal(bad.status, 2);
  assert.equal(bad.stderr, 'error: --segments is missing its value: --segments=N or --segments N\n');
  const knobs = lab('knobs', 'burst');
  assert.equal(knobs.status, 0, knobs.stderr);
  assert.match(knobs.stdout, /^burst \(seed /);
  // A bench is lab/bench/<experiment>.mjs, or k6's own: any other name is told which there are.
  const bench = lab('bench', 'caching');
  assert.equal(bench.status, 2);
  assert.equal(
    bench.stderr,
    `error: no benchmark for 'caching'; there are: ${[...Object.keys(experiments).filter((e) => existsSync(join(root, 'lab', 'bench', `${e}.mjs`))), ...Object.keys(TOOLS)].join(', ')}\n`,
  );
  assert.match(bench.stderr, /there are: .*json-filter.*, k6/);
});

test('docker-compose.yml: one profile per experiment, every service has its native twin, ports unique', () => {
  // A team's policy (`./labw new`) brings its stack from its file, natively (lab/policy/stack.mjs).
  for (const name of Object.keys(experiments).filter((n) => !experiments[n].policyFile))
    assert.ok(stackServices(topology, name).length >= 2, name);
  const ports = Object.values(portsByService(topology)).flatMap((p) => Object.values(p));
  assert.equal(new Set(ports).size, ports.length, 'no two services share a port');
  const order = stackServices(topology, 'envoy-vs-nginx').map((s) => s.name);
  assert.ok(order.indexOf('envoy-vs-nginx-web') < order.indexOf('envoy-vs-nginx-envoy'), 'depends_on order');
});

test('docker-compose.yml is valid under the compose spec', (t) => {
  const r = spawnSync('docker-compose', ['-f', join(root, 'docker-compose.yml'), 'config', '-q'], { encoding: 'utf8' });
  if (needs(t, notRun('docker-compose', r), 'the Debian package: run just setup')) return;
  assert.equal(r.status, 0, r.stderr);
});

function rendered(experiment, overrides, service) {
  const p = plan({ experiment, suite: Object.keys(experiments[experiment].suites)[1], overrides });
  const s = topology.services[service];
  const dir = mkdtempSync(join(tmpdir(), 'lab-render-'));
  const view = serviceView({
    policy: p.policy,
    targets: stackTargets(experiment, p.knobs, p.policy),
    ports: portsByService(topology),
    service: s,
    prefix: dir,
    root,
    native: true,
  });
  const files = renderConfigs(root, s, view, dir);
  return { dir, file: files.conf, text: readFileSync(files.conf, 'utf8') };
}

test('templates follow the knobs: nginx burst locations', (t) => {
  const { dir, file, text } = rendered('burst', { rate: 7, bursts: '0,37' }, 'burst-nginx');
  try {
    assert.match(text, /zone=b0:1m rate=7r\/s;/);
    assert.match(text, /limit_req zone=b0;/, 'burst=0 is not valid nginx syntax: omitted');
    assert.match(text, /limit_req zone=b37 burst=37;/);
    assert.match(text, /listen 127\.0\.0\.1:18080;/);
    assert.match(text, /server 127\.0\.0\.1:18081;/);
    const env = labEnv(root);
    // nginx itself must accept the rendered config: without nginx that is not checked, and says so.
    const nginx = spawnSync('nginx', ['-t', '-q', '-p', `${dir}/`, '-c', file, '-e', 'stderr'], {
      encoding: 'utf8',
      env,
    });
    if (needs(t, notRun('nginx', nginx), 'nginx -t checks the rendered config: run ./labw setup')) return;
    assert.equal(nginx.status, 0, nginx.stderr);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('templates follow the knobs: Envoy token bucket and nginx delay', () => {
  const e = rendered('envoy-vs-nginx', { max_tokens: 50, fill_interval: 0.5, status: 503 }, 'envoy-vs-nginx-envoy');
  const n = rendered('envoy-vs-nginx', { nginx_delay: 0 }, 'envoy-vs-nginx-nginx');
  try {
    assert.match(e.text, /max_tokens: 50\n\s+tokens_per_fill: 20\n\s+fill_interval: 0.5s/);
    assert.match(e.text, /status: \{ code: 503 \}/);
    assert.match(n.text, /limit_req zone=global burst=200;/, 'delay=0 omitted (nginx refuses delay=0)');
  } finally {
    rmSync(e.dir, { recursive: true, force: true });
    rmSync(n.dir, { recursive: true, force: true });
  }
});

test('a port in use is an error that names the port and its holder', async () => {
  const srv = createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  try {
    await assert.rejects(
      assertPortsFree([{ port, service: 'demo' }]),
      new RegExp(`port ${port} \\(demo\\) is in use by pid ${process.pid}`),
    );
  } finally {
    srv.close();
  }
});

test('k6 options: one scenario per case with exactly the planned request count, thresholds from the plan', () => {
  const p = plan({ experiment: 'envoy-vs-nginx', suite: 'spike', factor: 5 });
  const o = k6Options(p, {
    'envoy-vs-nginx-envoy': 'http://127.0.0.1:18000',
    'envoy-vs-nginx-nginx': 'http://127.0.0.1:19000',
  });
  const s = o.scenarios['envoy-1s'];
  assert.equal(s.executor, 'ramping-arrival-rate');
  assert.equal(s.startRate, 800, 'x5 asked, x2 applied');
  assert.equal(s.stages[0].duration, '500625us', '(400 + 1/2) / 800 r/s');
  const c = p.cases.find((x) => x.id === 'envoy-1s');
  assert.deepEqual(o.thresholds['http_reqs{case:envoy-1s,status:200}'], [
    `count>=${c.expected.ok.lo}`,
    `count<=${c.expected.ok.hi}`,
  ]);
  assert.deepEqual(
    o.thresholds['http_req_duration{case:nginx-1s}'].length,
    2,
    'nginx queues: max latency bounded on both sides',
  );
  assert.throws(() => k6Options(p, {}), /no address for service/);
});

test('judging: in range passes, out of range or a missing summary fails', () => {
  const p = plan({ experiment: 'burst', suite: 'soak', factor: 5 });
  const c = p.cases[0];
  const summary = (ok, limited, max) => ({
    metrics: {
      [`http_reqs{case:${c.id},status:200}`]: { values: { count: ok } },
      [`http_reqs{case:${c.id},status:503}`]: { values: { count: limited } },
      [`http_reqs{case:${c.id}}`]: { values: { count: ok + limited } },
      [`http_req_duration{case:${c.id}}`]: { values: { max, 'p(99)': max } },
    },
  });
  assert.equal(judgeLimiter(p, { summary: summary(760, 320, 26_700) }).outcomes[0].pass, true);
  assert.equal(judgeLimiter(p, { summary: summary(700, 380, 26_700) }).outcomes[0].pass, false);
  assert.equal(
    judgeLimiter(p, { summary: summary(760, 320, 10_000) }).outcomes[0].pass,
    false,
    'wait far below the model',
  );
  assert.equal(judgeLimiter(p, { summary: null }).outcomes[0].pass, false);
});

test('the toolchain installer is idempotent in shape: pinned versions, skips what is present', () => {
  const sh = readFileSync(join(root, 'lab', 'install.sh'), 'utf8');
  assert.match(sh, /K6_VERSION=v1\.8\.1/);
  assert.match(sh, /ENVOY_VERSION=1\.40\.0/);
  assert.ok(existsSync(join(root, 'package-lock.json')), 'npm packages come from a lockfile');
});

test('a testid is checked where it enters: a path in it is refused before any folder is made or removed', () => {
  const victim = mkdtempSync(join(tmpdir(), 'victim-lab-'));
  writeFileSync(join(victim, 'keep'), 'x');
  try {
    const rel = relative(join(root, 'results'), victim);
    for (const r of [
      lab('verdict', `x/${rel}`, 'spike/burst', '--quick'),
      lab('verdict', rel),
      lab('panels', rel),
      lab('panels', '..'),
    ]) {
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, /^error: not a testid: /);
    }
    assert.ok(existsSync(join(victim, 'keep')), 'nothing removed');
  } finally {
    rmSync(victim, { recursive: true, force: true });
  }
});
