// Every experiment says where its constants come from (thresholds/provenance.js): what the seed
// states, what was fitted to which of its figures, what was measured here, what is assumed.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { list } from '../thresholds/experiments/index.js';
import { GROUPS, provenanceProblems, fittedFigures } from '../thresholds/provenance.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// Experiments known to have no provenance yet, and why they are not given one here.
const GAPS = {};

for (const exp of list) {
  test(`${exp.name}: provenance in four groups, every fitted entry naming the seed figures it was fitted to`, (t) => {
    if (exp.policyFile) {
      t.skip(`a team's policy: every number comes from ${exp.policyFile}, with its file:line`);
      return;
    }
    if (!exp.provenance && GAPS[exp.name]) {
      t.skip(GAPS[exp.name]);
      return;
    }
    assert.deepEqual(provenanceProblems(exp), []);
    for (const [key, e] of Object.entries(exp.provenance.fitted)) {
      t.diagnostic(
        `fitted ${key}=${JSON.stringify(e.value)} to ${e.fittedTo.map((f) => `${f.case} ${f.figure} ${JSON.stringify(f.seed)}`).join('; ')}`,
      );
    }
    // A measured constant's source is a page of this repository.
    for (const [key, e] of Object.entries(exp.provenance.measured))
      assert.ok(existsSync(join(root, e.source.split('#')[0])), `measured.${key}: ${e.source} does not exist`);
  });
}

test('the check catches a missing group, a fitted entry without figures, a figure the seed lacks, a value off its knob default, a knob left out', () => {
  const exp = {
    name: 'x',
    knobs: { rate: { default: 3 }, burst: { default: 5 } },
    seedFigures: { 'a-1': { ok: 10 } },
    provenance: {
      derived: { rate: { value: 4, seed: 'rate=3r/s' } },
      fitted: {
        none: { value: 1, fittedTo: [], how: 'by eye' },
        wrong: {
          value: 2,
          fittedTo: [
            { case: 'a-1', figure: 'ok', seed: 11 },
            { case: 'b-1', figure: 'ok', seed: 1 },
          ],
          how: 'by eye',
        },
      },
      measured: { m: { value: 1 } },
    },
  };
  const problems = provenanceProblems(exp).join('\n');
  for (const m of [
    /groups are derived, fitted, measured; expected/,
    /fitted\.none names no figure/,
    /a-1\.ok is 10 in seedFigures, 11 here/,
    /no figures for case b-1/,
    /derived\.rate is 4, the knob's default 3/,
    /measured\.m has no source/,
    /knob burst: its default's origin is in no group/,
  ]) {
    assert.match(problems, m);
  }
  assert.deepEqual([...fittedFigures(exp)], ['a-1.ok', 'b-1.ok']);
  assert.deepEqual(Object.keys(GROUPS), ['derived', 'fitted', 'measured', 'assumed']);
});
