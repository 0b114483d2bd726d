// Arrows point one way (docs/layout.md): stacks/ holds configs and READMEs, servers/ the servers,
// and neither imports the lab; the command line (lab/cli/) imports the lab's rooms, never the
// other way round.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { figureComments } from './lib/comments.mjs';
import { join, dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

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

test('the scanner sees the imports it must: static and dynamic, from any depth', () => {
  // lab/cli/ imports the lab's rooms (allowed): the same scan over it finds them, so an empty
  // list above is the rule kept, not a scanner that finds nothing.
  assert.ok(offending(['lab/cli'], 'lab/run/').length > 0);
  assert.ok(importsOf('lab/docs/burst.mjs').includes('lab/lib.mjs'));
  assert.ok(importsOf('lab/cli/index.mjs').includes('lab/cli/context.mjs'));
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
