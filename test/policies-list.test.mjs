/*
 * test/policies/tests.json, the one list `./labw policies` runs: each entry's change is made
 * where it says, in a copy the lab reads as the policy with that one change.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { perturbedCopy } from '../lab/cli/policies.mjs';
import { readPolicy, policyTools } from '../lab/policy/index.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const entries = JSON.parse(readFileSync(join(root, 'test', 'policies', 'tests.json'), 'utf8'));

/** What `f` gives with a scratch folder, the folder removed after. */
function inScratch(f) {
  const dir = mkdtempSync(join(tmpdir(), 'lab-policies-list-'));
  try {
    return f(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test("every entry's change is in its file once, and the copy of one that names other files reads with the change", () => {
  for (const entry of entries) {
    inScratch((dir) => {
      const copy = perturbedCopy(root, entry, dir);
      if (!entry.perturb.in) return;
      // Read from the copy's folder: the files it names are found beside it, the changed one changed.
      const read = readPolicy(copy, policyTools(root));
      assert.equal(dirname(read.file), dir, entry.file);
      assert.ok(readFileSync(join(dir, entry.perturb.in), 'utf8').includes(entry.perturb.to), entry.file);
    });
  }
});

test('a change named outside the policy, or not in its file once, is refused by name', () => {
  const [entry] = entries.filter((e) => e.perturb.in);
  inScratch((dir) => {
    assert.throws(
      () => perturbedCopy(root, { ...entry, perturb: { ...entry.perturb, in: '../../README.md' } }, dir),
      /perturb\.in '\.\.\/\.\.\/README\.md' is not a path beside the policy/,
    );
    assert.throws(
      () => perturbedCopy(root, { ...entry, perturb: { ...entry.perturb, from: 'no such text' } }, dir),
      /'no such text' is not in .* exactly once/,
    );
  });
});
