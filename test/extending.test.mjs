/*
 * The lab grows by experiments and by plan kinds: these tests hold the tree to that. A new
 * experiment of an existing kind is its own files and one line in the list; the k6 side stays
 * k6-safe; and only the kinds' registries branch on a plan's kind.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { needs } from './lib/needs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const FIXTURE = join(root, 'test', 'fixtures', 'new-experiment');
const KIND_NAMES = ['limiter', 'closed-loop', 'capped', 'capacity'];
// The registries: the one place per side of the k6/Node boundary that may tell kinds apart.
const REGISTRIES = ['thresholds/kinds/', 'k6/lib/kinds/', 'lab/kinds/'];

/** The project's own source files (tracked or new, not ignored), as paths from `dir`. */
function sources(dir = root) {
  const r = spawnSync('git', ['ls-files', '-co', '--exclude-standard'], { cwd: dir, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split('\n').filter((f) => f && existsSync(join(dir, f)));
}
// The lab's own machinery: what every experiment shares (servers/ are an experiment's parts).
const code = (files) => files.filter((f) => /\.(m?js)$/.test(f) && /^(lab|thresholds|k6|dashboards)\//.test(f));

/** Lines that branch on a plan's kind: compare it with a kind's name, test it for truth, or index a literal by it. */
export function kindBranches(text) {
  const names = KIND_NAMES.map((k) => k.replace('-', '\\-')).join('|');
  const patterns = [
    new RegExp(`\\.kind\\s*[!=]==?\\s*['"](${names})['"]`),
    new RegExp(`['"](${names})['"]\\s*[!=]==?\\s*[\\w.]+\\.kind\\b`),
    new RegExp(`case\\s+['"](${names})['"]\\s*:`),
    /\bif\s*\(\s*!?\s*\w+\.kind\s*\)/,
    /\b(?:plan|p|exp|base|e)\.kind\s*(?:\?(?!\.)|\?\?|&&|\|\|)/,
    /&&\s*!?\s*(?:plan|p|exp|base|e)\.kind\s*[)\s;,]/,
    /\}\s*\[\s*\w+\.kind\s*\]/,
  ];
  return text
    .split('\n')
    .map((line, i) => ({ line: i + 1, text: line.trim() }))
    .filter(({ text: t }) => !/^(\/\/|\*|\/\*)/.test(t) && patterns.some((p) => p.test(t)));
}

test("no module outside the kinds' registries branches on a plan's kind", () => {
  const found = [];
  for (const f of code(sources())) {
    if (REGISTRIES.some((r) => f.startsWith(r))) continue;
    for (const b of kindBranches(readFileSync(join(root, f), 'utf8'))) found.push(`${f}:${b.line}: ${b.text}`);
  }
  assert.deepEqual(
    found,
    [],
    `branch on a plan's kind outside ${REGISTRIES.join(', ')}: give the kind a property instead`,
  );
});

test('the kind-branch check sees each way of branching', () => {
  for (const line of [
    "if (plan.kind === 'capacity') return null;",
    "const x = 'capped' === exp.kind;",
    'if (p.kind) throw new Error();',
    "const streams = plan.kind === 'capacity' || plan.kind === 'capped' ? ['prometheus'] : [];",
    'const judge = { capacity: a, capped: b }[plan.kind];',
    "  case 'closed-loop':",
    'const app = base.kind && { service };',
  ])
    assert.equal(kindBranches(line).length, 1, line);
  // A case's own kind (open, closed, ramp) and a lookup through the registry are not branches.
  for (const line of [
    "if (c.kind === 'ramp') {",
    'const k = kinds[e.kind];',
    "kind: 'limiter',",
    "// plan.kind === 'capped' was here",
  ]) {
    assert.equal(kindBranches(line).length, 0, line);
  }
});

// The one place that may tell proxies apart: their modules, listed in lab/policy/proxies/index.mjs.
const PROXY_MODULES = 'lab/policy/proxies/';

/** Lines that branch on a proxy's name: compare a value with it, or pick by it from a literal. */
export function proxyBranches(text, names) {
  const alt = names.join('|');
  const patterns = [
    new RegExp(`[!=]==?\\s*['"](${alt})['"]`),
    new RegExp(`['"](${alt})['"]\\s*[!=]==?`),
    new RegExp(`case\\s+['"](${alt})['"]\\s*:`),
    new RegExp(`\\{\\s*(${alt})\\s*:[^}]*\\}\\s*\\[`),
  ];
  return text
    .split('\n')
    .map((line, i) => ({ line: i + 1, text: line.trim() }))
    .filter(({ text: t }) => !/^(\/\/|\*|\/\*)/.test(t) && patterns.some((p) => p.test(t)));
}

const proxyNames = () =>
  JSON.parse(
    spawnSync(
      process.execPath,
      [
        '-e',
        "import('./lab/policy/proxies/index.mjs').then((m) => console.log(JSON.stringify(m.proxies.map((p) => p.name))))",
      ],
      { cwd: root, encoding: 'utf8' },
    ).stdout,
  );

test("no module outside the proxies' folder branches on a proxy's name", () => {
  const names = proxyNames();
  assert.ok(names.length >= 2, JSON.stringify(names));
  const found = [];
  for (const f of code(sources()).filter((x) => !x.startsWith(PROXY_MODULES)))
    for (const b of proxyBranches(readFileSync(join(root, f), 'utf8'), names)) found.push(`${f}:${b.line}: ${b.text}`);
  assert.deepEqual(
    found,
    [],
    `branch on a proxy's name outside ${PROXY_MODULES}: give the proxy's module a field instead`,
  );
});

test('the proxy-branch check sees each way of branching', () => {
  const names = ['nginx', 'envoy'];
  for (const line of [
    "policy.proxy === 'nginx' ? a : b",
    "if ('envoy' !== proxy) return;",
    "  case 'nginx':",
    'const needs = { nginx: tools.crossplane, envoy: tools.envoy }[reader.proxy];',
  ])
    assert.equal(proxyBranches(line, names).length, 1, line);
  for (const line of ["proxy: 'nginx',", "const p = proxyNamed('envoy');", "// policy.proxy === 'nginx' was here"])
    assert.equal(proxyBranches(line, names).length, 0, line);
});

test("no module outside an experiment's own files names an experiment", () => {
  const { list } = JSON.parse(
    spawnSync(
      process.execPath,
      [
        '-e',
        "import('./thresholds/experiments/index.js').then((m) => console.log(JSON.stringify({ list: m.list.map((e) => e.name) })))",
      ],
      { cwd: root, encoding: 'utf8' },
    ).stdout,
  );
  const own = (f) =>
    list.some(
      (n) =>
        f === `thresholds/experiments/${n}.js` ||
        f === `k6/${n}.js` ||
        f === `dashboards/src/${n}.mjs` ||
        f === `lab/bench/${n}.mjs` ||
        f === `lab/docs/${n}.mjs` ||
        f.startsWith(`stacks/${n}/`),
    );
  // k6's own cost is measured against an nginx that answers at once: cdn's balancer. A team's
  // policy reader names nginx's limit_req burst= parameter, which the burst experiment is named after,
  // and Traefik's rateLimit has a burst field of the same name.
  const ALLOWED = {
    'lab/bench/k6.mjs': ['cdn'],
    'lab/policy/nginx/read.mjs': ['burst'],
    'lab/policy/nginx/targets.mjs': ['burst'],
    'lab/policy/nginx/table.mjs': ['burst'],
    'lab/policy/experiment.mjs': ['burst'],
    'lab/policy/proxies/traefik.mjs': ['burst'],
    'lab/policy/traefik/read.mjs': ['burst'],
    'lab/policy/traefik/targets.mjs': ['burst'],
  };
  const re = new RegExp(`['"\`](${list.join('|')})['"\`]`, 'g');
  const found = [];
  for (const f of code(sources())) {
    if (own(f) || f === 'thresholds/experiments/index.js') continue;
    readFileSync(join(root, f), 'utf8')
      .split('\n')
      .forEach((line, i) => {
        for (const m of line.matchAll(re))
          if (!ALLOWED[f]?.includes(m[1]) && !/^\s*(\/\/|\*)/.test(line)) found.push(`${f}:${i + 1}: ${line.trim()}`);
      });
  }
  assert.deepEqual(found, []);
});

test('the k6 side (thresholds/, k6/) imports no node: module and no Node-only package', () => {
  const bad = [];
  const k6Side = sources().filter((f) => /^(thresholds|k6)\/.*\.js$/.test(f) && !f.startsWith('k6/lib/vendor/'));
  assert.ok(k6Side.length > 20, 'found the k6-side modules');
  for (const f of k6Side) {
    const text = readFileSync(join(root, f), 'utf8');
    for (const m of text.matchAll(/(?:\bfrom\s+|\bimport\s*\(?\s*|\brequire\s*\(\s*)['"]([^'"]+)['"]/g)) {
      const spec = m[1];
      if (spec === 'k6' || spec.startsWith('k6/')) continue; // k6's own modules
      if (spec.startsWith('.')) {
        const target = relative(root, join(dirname(join(root, f)), spec));
        if (!/^(thresholds|k6)\//.test(target)) bad.push(`${f}: '${spec}' leaves the k6 side (${target})`);
        continue;
      }
      bad.push(`${f}: '${spec}' is ${spec.startsWith('node:') ? 'a Node built-in' : 'a package k6 cannot load'}`);
    }
    if (/\bprocess\.(env|argv|exit)\b/.test(text)) bad.push(`${f}: uses process`);
  }
  assert.deepEqual(bad, []);
});

/**
 * A copy of the tree: the project's files, node_modules (and the lab's Python, with crossplane)
 * linked, k6's bundled vendor copied.
 */
function treeCopy() {
  const dir = mkdtempSync(join(tmpdir(), 'lab-extend-'));
  for (const f of sources()) {
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    cpSync(join(root, f), join(dir, f));
  }
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  if (existsSync(join(root, '.lab/venv'))) {
    mkdirSync(join(dir, '.lab'));
    symlinkSync(join(root, '.lab/venv'), join(dir, '.lab/venv'));
  }
  if (existsSync(join(root, 'k6/lib/vendor')))
    cpSync(join(root, 'k6/lib/vendor'), join(dir, 'k6/lib/vendor'), { recursive: true });
  return dir;
}

/** A copy of the tree with the fixture's files added and one entry in the list of experiments. */
function treeWithFixture() {
  const dir = treeCopy();
  const added = [];
  const walk = (d) =>
    readdirSync(d, { withFileTypes: true }).forEach((e) =>
      e.isDirectory() ? walk(join(d, e.name)) : added.push(relative(FIXTURE, join(d, e.name))),
    );
  walk(FIXTURE);
  for (const f of added) {
    assert.ok(!existsSync(join(dir, f)), `the fixture's ${f} is its own`);
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    cpSync(join(FIXTURE, f), join(dir, f));
  }
  // The one line: its import and its entry, at the end of the list.
  const index = join(dir, 'thresholds/experiments/index.js');
  const before = readFileSync(index, 'utf8');
  const after = before
    .replace(/(import jsonFilter from '\.\/json-filter\.js';\n)/, "$1import steadyLimit from './steady-limit.js';\n")
    .replace(/(export const list = \[[^\]]*)\];/, '$1, steadyLimit];');
  assert.notEqual(after, before);
  writeFileSync(index, after);
  return { dir, added };
}

test(
  'a new experiment of an existing kind is its own files and one list entry: expect, knobs, render, docs, boards and k6 pick it up',
  { timeout: 120_000 },
  (t) => {
    const { dir, added } = treeWithFixture();
    try {
      const lab = (...args) =>
        spawnSync(process.execPath, ['lab/cli/index.mjs', ...args], { cwd: dir, encoding: 'utf8' });
      const ok = (r) => {
        assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
        return r.stdout;
      };
      assert.deepEqual(added.sort(), [
        'dashboards/src/steady-limit.mjs',
        'k6/steady-limit.js',
        'lab/docs/steady-limit.mjs',
        'stacks/steady-limit/README.md',
        'thresholds/experiments/steady-limit.js',
      ]);

      // expect: its plans, on its own and as part of the suites its file declares.
      const [spike] = JSON.parse(ok(lab('expect', 'spike/steady-limit')));
      assert.deepEqual(
        spike.cases.map((c) => c.id),
        ['b0-10rps', 'b20-10rps'],
      );
      // 60 requests at 10 r/s: a zone of 5 r/s with no queue passes 23..30 (nginx's ms clock and
      // how late k6 sends, JITTER_MS),
      // with a queue of 20 it passes 1 + 20 + 5 r/s x 5.8 s and the last waits 4 s.
      assert.deepEqual(
        spike.cases.map((c) => [c.expected.ok.min, c.expected.ok.max, c.expected.limited.max]),
        [
          [23, 30, 37],
          [50, 50, 10],
        ],
      );
      assert.equal(spike.cases[1].model.maxDelayMs.max, 4000);
      assert.ok(JSON.parse(ok(lab('expect', 'smoke'))).some((p) => p.experiment === 'steady-limit'));
      assert.match(ok(lab('expect', 'spike', '--sensitivity')), /spike \/ steady-limit/);

      // knobs, and a what-if through them.
      assert.match(ok(lab('knobs', 'steady-limit')), /steady-limit\.rate=5/);
      const whatIf = JSON.parse(ok(lab('expect', 'spike/steady-limit', 'rate=10')))[0].cases[1].expected;
      assert.deepEqual([whatIf.ok.min, whatIf.limited.max], [60, 0], 'at 10 r/s the queue of 20 passes all 60');

      // render: burst's stack, with this experiment's zones and locations.
      ok(lab('render', 'steady-limit'));
      const conf = readFileSync(join(dir, '.lab/rendered/burst-nginx/nginx.conf'), 'utf8');
      assert.match(conf, /location = \/b20 \{\s*limit_req zone=b20 burst=20;/);
      assert.doesNotMatch(conf, /\/b400/);

      // docs: its README's generated table.
      assert.match(ok(lab('docs')), /stacks\/steady-limit\/README\.md/);
      assert.match(
        readFileSync(join(dir, 'stacks/steady-limit/README.md'), 'utf8'),
        /\| b20-10rps \| 50 \/ 10, wait 4\.00 s \|/,
      );
      assert.match(ok(lab('docs', '--check')), /up to date/);

      // The boards: its own, built with the others.
      ok(spawnSync(process.execPath, ['dashboards/build.mjs'], { cwd: dir, encoding: 'utf8' }));
      const board = JSON.parse(readFileSync(join(dir, 'dashboards/steady-limit.json'), 'utf8'));
      assert.equal(board.uid, 'lab-steady-limit');

      // k6: its own script, which runs its plan with k6 alone (the runner runs k6/lib/prepared.js).
      assert.ok(existsSync(join(dir, 'k6/steady-limit.js')), 'k6/steady-limit.js written');
      // And k6 itself reads its options: without the pinned k6 that is not checked, and says so.
      const k6 = join(root, '.lab/bin/k6');
      if (!needs(t, existsSync(k6) ? null : `k6 is not installed (no ${k6})`)) {
        const inspect = spawnSync(k6, ['inspect', '-e', 'SUITE=spike', 'k6/steady-limit.js'], {
          cwd: dir,
          encoding: 'utf8',
          env: { ...process.env, K6_NO_USAGE_REPORT: 'true' },
        });
        const options = JSON.parse(ok(inspect));
        assert.deepEqual(Object.keys(options.scenarios).sort(), ['b0-10rps', 'b20-10rps', 'warmup']);
        assert.deepEqual(options.thresholds['http_reqs{case:b20-10rps,status:200}'], ['count>=48', 'count<=52']);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

test(
  "`./labw new <name> --policy=FILE`: a team's policy made an experiment, read from stacks/<name>/ whenever the lab plans; the tree's own tests still pass",
  { timeout: 180_000 },
  (t) => {
    if (
      needs(
        t,
        existsSync(join(root, '.lab/venv/bin/crossplane')) ? null : 'crossplane is not installed',
        './labw setup installs it',
      )
    )
      return;
    const dir = treeCopy();
    try {
      const lab = (...args) =>
        spawnSync(process.execPath, ['lab/cli/index.mjs', ...args], { cwd: dir, encoding: 'utf8' });
      const ok = (r) => {
        assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
        return r.stdout;
      };
      assert.match(
        lab('new', 'Bad_Name', '--policy=test/policies/header-key.conf').stderr,
        /is not a name the lab takes/,
      );
      assert.match(
        lab('new', 'burst', '--policy=test/policies/header-key.conf').stderr,
        /already in thresholds\/experiments\/index\.js/,
      );
      assert.match(
        lab('new', 'api-keys', '--policy=test/fixtures/policies/refused-lua.conf').stderr,
        /access_by_lua_block/,
      );
      ok(lab('new', 'api-keys', '--policy=test/policies/header-key.conf'));
      assert.match(
        readFileSync(join(dir, 'thresholds/experiments/index.js'), 'utf8'),
        /export const list = \[[^\]]*, apiKeys\];/,
      );
      assert.equal(
        readFileSync(join(dir, 'stacks/api-keys/header-key.conf'), 'utf8'),
        readFileSync(join(root, 'test/policies/header-key.conf'), 'utf8'),
      );
      // The cases come from the file, in the suites it joins, and an edit to the file moves them.
      const [spike] = JSON.parse(ok(lab('expect', 'spike/api-keys')));
      assert.deepEqual(
        spike.cases.map((c) => c.id),
        // The clients with no x-api-key are not limited (an empty key): their own case shows it.
        ['v1-under', 'v1-fill', 'v1-over', 'v1-ordinary-fill'],
      );
      assert.ok(JSON.parse(ok(lab('expect', 'smoke'))).some((p) => p.experiment === 'api-keys'));
      const file = join(dir, 'stacks/api-keys/header-key.conf');
      writeFileSync(file, readFileSync(file, 'utf8').replace('rate=10r/s', 'rate=20r/s'));
      const [faster] = JSON.parse(ok(lab('expect', 'spike/api-keys')));
      assert.equal(faster.knobs.per_key_rate, 20);
      assert.ok(
        faster.cases[2].expected.ok.lo > spike.cases[2].expected.ok.hi,
        'twice the rate passes more of the overload',
      );
      assert.match(ok(lab('knobs', 'api-keys')), /api-keys\.per_key_burst=5/);
      assert.equal(JSON.parse(readFileSync(join(dir, 'dashboards/api-keys.json'), 'utf8')).uid, 'lab-api-keys');
      // What it wrote is formatted and linted as the tree is.
      ok(lab('lint'));
      // The tree's own checks of every experiment hold with it in the list.
      const tests = spawnSync(
        process.execPath,
        [
          '--test',
          'test/provenance.test.mjs',
          'test/runner.test.mjs',
          'test/metrics.test.mjs',
          'test/chart-truth.test.mjs',
        ],
        { cwd: dir, encoding: 'utf8' },
      );
      assert.equal(
        tests.status,
        0,
        tests.stdout
          .split('\n')
          .filter((l) => /^not ok|error/.test(l))
          .join('\n'),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
