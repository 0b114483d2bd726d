// The GitHub workflow (.github/workflows/) passes actionlint, the pinned one `just setup`
// builds; and actionlint is no rubber stamp: a workflow with a broken field fails it.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const actionlint = join(root, '.lab', 'bin', 'actionlint');
const workflows = join(root, '.github', 'workflows');
const lint = (files) => spawnSync(actionlint, ['-no-color', ...files], { encoding: 'utf8', cwd: root });

test('actionlint is installed by just setup', () => {
  assert.ok(existsSync(actionlint), `no ${actionlint}: run ./labw setup`);
});

test('the workflows pass actionlint', () => {
  const files = readdirSync(workflows).filter((f) => /\.ya?ml$/.test(f)).map((f) => join(workflows, f));
  assert.ok(files.length > 0);
  const r = lint(files);
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

test('a broken workflow fails actionlint: a job without runs-on, an unknown context', () => {
  const dir = mkdtempSync(join(tmpdir(), 'lab-wf-'));
  try {
    const text = readFileSync(join(workflows, 'lab.yml'), 'utf8')
      .replace('    runs-on: ubuntu-24.04\n', '')
      .replace('${{ github.run_id }}-${{ github.run_attempt }}', '${{ github.no_such_field }}');
    const file = join(dir, 'broken.yml');
    writeFileSync(file, text);
    const r = lint([file]);
    assert.notEqual(r.status, 0);
    assert.match(r.stdout, /runs-on/);
    assert.match(r.stdout, /no_such_field/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
