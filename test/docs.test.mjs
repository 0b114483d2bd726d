// The figures in the READMEs are the model's: generated, and checked here against it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { docs, regenerate } from '../lab/cli/docs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

test('every generated table in the READMEs is what the model gives now (run `just docs` after a model change)', async () => {
  assert.deepEqual(await docs(root, { check: true }), []);
});

test('a hand edit inside a generated block is caught, and so is a block nobody generates', () => {
  const text = '<!-- lab:generated t -->\n| 102..120 |\n<!-- lab:end -->\n';
  assert.equal(
    regenerate(text, { t: () => '| 103..120 |' }, 'x.md'),
    '<!-- lab:generated t -->\n| 103..120 |\n<!-- lab:end -->\n',
  );
  assert.throws(() => regenerate(text, {}, 'x.md'), /no generator for block 't'/);
  assert.throws(() => regenerate('no blocks', { t: () => '' }, 'x.md'), /block\(s\) t missing/);
});
