// Arrows point one way (docs/layout.md): stacks/ holds configs and READMEs, servers/ the servers,
// and neither imports the lab; lab/'s rooms stand in floors, and a module imports only from the
// floors below its own; importing a module of lab/ reads no file.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { figureComments } from './lib/comments.mjs';
import { join, dirname, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const SKIP = new Set(['node_modules', 'vendor', '.lab', 'results']);

/** Every JavaScript module under `dir`, relative to the repository. */
function modules(dir) {
  return readdirSync(join(root, dir)).flatMap((name) => {
    if (SKIP.has(name)) return [];
    const rel = join(dir, name);
    if (statSync(join(root, rel)).isDirectory()) return modules(rel);
    return /\.(m?js)$/.test(name) ? [rel] : [];
  });
}

/** What a module imports (static and dynamic), as paths relative to the repository. */
function importsOf(file) {
  const text = readFileSync(join(root, file), 'utf8');
  return [...text.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) =>
    relative(root, resolve(root, dirname(file), m[1])),
  );
}

const offending = (dirs, into, except = () => false) =>
  dirs
    .flatMap(modules)
    .filter((f) => !except(f))
    .flatMap((f) =>
      importsOf(f)
        .filter((t) => t.startsWith(into))
        .map((t) => `${f} imports ${t}`),
    );

test('nothing under stacks/ or servers/ imports from lab/', () => {
  assert.deepEqual(offending(['stacks', 'servers'], 'lab/'), []);
});

test('nothing outside lab/cli/ imports from lab/cli/', () => {
  assert.deepEqual(
    offending(['lab', 'stacks', 'servers', 'thresholds', 'k6', 'dashboards'], 'lab/cli/', (f) =>
      f.startsWith('lab/cli/'),
    ),
    [],
  );
});

// k6 evaluates every module a script imports in every VU: the runner's entry reads the options
// the runner computed, and a VU of it must not evaluate the model (docs/journal/json-filter.md).
test("the runner's k6 entry (k6/lib/prepared.js) reaches no module of the model", () => {
  const reached = new Set();
  const walk = (f) => {
    if (reached.has(f)) return;
    reached.add(f);
    importsOf(f).forEach(walk);
  };
  walk('k6/lib/prepared.js');
  const model = ['thresholds/plan.js', 'thresholds/k6-options.js', 'thresholds/experiments/', 'thresholds/models/'];
  assert.deepEqual(
    [...reached].filter((f) => model.some((m) => f.startsWith(m))),
    [],
  );
  // The same walk from the experiments' script does reach it: the check can see an import.
  walk('k6/lib/run.js');
  assert.ok(reached.has('thresholds/plan.js'));
});

test('the scanner sees the imports it must: static and dynamic, from any depth', () => {
  // lab/cli/ imports the lab's rooms (allowed): the same scan over it finds them, so an empty
  // list above is the rule kept, not a scanner that finds nothing.
  assert.ok(offending(['lab/cli'], 'lab/run/').length > 0);
  assert.ok(importsOf('lab/docs/burst.mjs').includes('lab/lib.mjs'));
  assert.ok(importsOf('lab/cli/index.mjs').includes('lab/cli/context.mjs'));
});

// lab/'s rooms from the top floor down: a room imports rooms on lower floors only, never one on
// its own floor or above. A new room takes a floor here (docs/layout.md says what each holds).
const FLOORS = [
  ['lab/cli'],
  ['lab/docs', 'lab/profiles', 'lab/k8s'],
  ['lab/bench'],
  ['lab/run'],
  ['lab/results'],
  ['lab/kinds'],
  ['lab/judge'],
  ['lab/export', 'lab/policy'],
  ['lab/stores'],
  ['lab/stack'],
  ['lab/lib'],
];

/** A module's room: its folder under lab/ (lab/lib.mjs is lab/lib's). */
const roomOf = (file) => {
  const parts = file.split('/');
  return parts.length > 2 ? `lab/${parts[1]}` : `lab/${parts[1].replace(/\.m?js$/, '')}`;
};
const floorOf = (room) => FLOORS.findIndex((f) => f.includes(room));

/** The imports [from, to] between rooms of lab/ that do not go down a floor, in words. */
function climbs(imports) {
  return imports
    .filter(([from, to]) => to.startsWith('lab/') && roomOf(from) !== roomOf(to))
    .filter(([from, to]) => floorOf(roomOf(to)) <= floorOf(roomOf(from)))
    .map(
      ([from, to]) =>
        `${from} imports ${to}: ${roomOf(to)} is on ${floorOf(roomOf(to)) === floorOf(roomOf(from)) ? 'the same floor as' : 'a floor above'} ${roomOf(from)}`,
    );
}

const labImports = () => modules('lab').flatMap((f) => importsOf(f).map((t) => [f, t]));

test('every room of lab/ stands on a floor, and no import climbs or goes sideways', () => {
  const rooms = [...new Set(modules('lab').map(roomOf))];
  assert.deepEqual(
    rooms.filter((r) => floorOf(r) < 0),
    [],
    'rooms on no floor: give each one in FLOORS',
  );
  assert.deepEqual(climbs(labImports()), []);
});

test('the floors check finds a climb and a sideways import where there is one', () => {
  assert.deepEqual(climbs([['lab/lib/wrk.mjs', 'lab/run/k6.mjs']]), [
    'lab/lib/wrk.mjs imports lab/run/k6.mjs: lab/run is on a floor above lab/lib',
  ]);
  assert.equal(climbs([['lab/docs/burst.mjs', 'lab/k8s/manifests.mjs']]).length, 1);
  assert.deepEqual(climbs([['lab/run/suite.mjs', 'lab/judge/table.mjs']]), []);
  // The tree's own imports include downward ones between rooms: an empty list is the rule kept.
  assert.ok(labImports().filter(([f, t]) => t.startsWith('lab/') && roomOf(f) !== roomOf(t)).length > 100);
});

/** What importing each of `files` touched on disk (test/lib/import-reads.mjs). */
const readsOnImport = (files) =>
  JSON.parse(
    execFileSync(process.execPath, [join(root, 'test', 'lib', 'import-reads.mjs'), ...files], {
      cwd: root,
      encoding: 'utf8',
      maxBuffer: 1 << 24,
    }),
  );

test('importing a module of lab/ reads no file (entry points, #!, are run, not imported)', () => {
  const imported = modules('lab').filter((f) => !readFileSync(join(root, f), 'utf8').startsWith('#!'));
  assert.ok(imported.length > 100);
  assert.deepEqual(
    readsOnImport(imported.map((f) => join(root, f))).map(
      (r) => `${relative(root, r.module)}: ${r.call} ${r.path} ${r.at}`,
    ),
    [],
  );
});

test('the import check sees a module that reads a file when imported', () => {
  const dir = mkdtempSync(join(tmpdir(), 'lab-import-reads-'));
  try {
    const file = join(dir, 'reads.mjs');
    writeFileSync(
      file,
      `import { readFileSync } from 'node:fs';\nexport const text = readFileSync(${JSON.stringify(file)}, 'utf8');\n`,
    );
    assert.deepEqual(readsOnImport([file])[0], {
      module: file,
      call: 'readFileSync',
      path: file,
      at: `at ${pathToFileURL(file).href}:2:21`,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('no comment outside the tests carries a date, a run id or a commit: measurements live in recorded runs', () => {
  const dated = figureComments(root).filter((f) => f.kind !== 'measured');
  assert.deepEqual(
    dated.map((f) => `${f.file}:${f.line}: [${f.kind}] ${f.text}`),
    [],
    'node test/lib/comments.mjs lists them',
  );
});

test('the comment scanner finds a date, a run id, a commit and a measured figure where they are', () => {
  const dir = mkdtempSync(join(tmpdir(), 'lab-comments-'));
  try {
    execFileSync('git', ['init', '-q'], { cwd: dir });
    writeFileSync(
      join(dir, 'a.mjs'),
      [
        '// measured on 24 November: slower',
        '/*',
        ' * as run 20261126-094237 showed',
        ' */',
        'const x = 1; // at 0123abc, the fix',
        '// one run took 760 ms',
        '// nothing here: a design rule of 60 s',
        '',
      ].join('\n'),
    );
    execFileSync('git', ['add', 'a.mjs'], { cwd: dir });
    assert.deepEqual(
      figureComments(dir).map((f) => [f.line, f.kind]),
      [
        [1, 'date'],
        [3, 'run id'],
        [5, 'commit'],
        [6, 'measured'],
      ],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
