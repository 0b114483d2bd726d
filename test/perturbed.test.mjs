/*
 * Real perturbed runs (test/fixtures/perturbed/index.mjs) judged with today's model: each must
 * fail on the judged figures meant to catch its perturbation, and its control (the same suite on
 * the stack as the model has it) must pass every case. A band widened, or a model changed, until
 * a perturbed run passes fails here; how each was made is checked against its run.json.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readRun, readJson } from '../lab/results/runs.mjs';
import { rejudge } from '../lab/results/rejudge.mjs';
import { parseRunArgs } from '../lab/cli/args.mjs';
import { kindOfPlan } from '../thresholds/plan.js';
import perturbed from './fixtures/perturbed/index.mjs';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), 'fixtures');
const judgedAgain = async (path) => {
  const [dir, testid] = path.split('/');
  const run = readRun(join(FIXTURES, dir), testid, { panels: false });
  return { run, raw: readJson(join(run.dir, 'run.json')), outcomes: await rejudge(run) };
};
const figureOf = (outcomes, caseName, measure) =>
  outcomes.find((o) => o.case === caseName)?.figures.find((f) => f.measure === measure);

for (const p of perturbed) {
  test(`${p.kind}: ${p.why} fails ${p.fails.map(([c, m]) => `${c} ${m}`).join(', ')}`, async () => {
    const { run, raw, outcomes } = await judgedAgain(`perturbed/${p.run}`);
    // Made as the list says: the same suite, factor and perturbation.
    const asked = parseRunArgs(p.made);
    assert.equal(raw.suite, asked.name);
    assert.deepEqual(raw.experiments, asked.experiments);
    assert.equal(raw.factor, asked.factor);
    assert.deepEqual(raw.perturbed, {
      knobs: asked.untold,
      cpu: asked.slowed,
      ...(asked.k6Cpu ? { k6Cpu: asked.k6Cpu } : {}),
    });
    for (const o of outcomes)
      assert.equal(kindOfPlan({ experiment: o.case.split('/')[0] }).name, p.kind, `${o.case} is not a ${p.kind} case`);
    for (const [c, m] of p.fails) {
      const f = figureOf(outcomes, c, m);
      assert.ok(
        f,
        `${p.run}: no judged figure '${m}' for ${c} (figures: ${outcomes
          .find((o) => o.case === c)
          ?.figures.map((x) => x.measure)
          .join(', ')})`,
      );
      assert.equal(
        f.pass,
        false,
        `${p.run}: ${c} ${m} passed today (${f.measured} in ${f.lo ?? ''}..${f.hi ?? ''}): the band no longer catches ${p.why}`,
      );
    }
    // A failure points at what was perturbed: every other case passes.
    if (p.passes)
      for (const o of outcomes.filter((x) => p.passes(x.case)))
        assert.equal(
          o.pass,
          true,
          `${o.case} failed beside a perturbation of another server: ${o.figures
            .filter((f) => f.pass === false)
            .map((f) => f.measure)
            .join(', ')}`,
        );
    assert.ok(run.experiments.length > 0);
  });
}

for (const control of [...new Set(perturbed.map((p) => p.control).filter(Boolean))]) {
  test(`control ${control}: the unperturbed run passes every case with today's model`, async () => {
    const { raw, outcomes } = await judgedAgain(control);
    assert.equal(raw.perturbed, undefined);
    assert.ok(outcomes.length > 0);
    for (const o of outcomes)
      assert.equal(
        o.pass,
        true,
        `${o.case}: ${o.figures
          .filter((f) => f.pass === false)
          .map((f) => `${f.measure} ${f.measured} not in ${f.lo ?? ''}..${f.hi ?? ''}`)
          .join(', ')}`,
      );
  });
}

test('every plan kind has a perturbed run with a control', async () => {
  const { kinds } = await import('../thresholds/kinds/index.js');
  for (const k of Object.keys(kinds)) {
    assert.ok(
      perturbed.some((p) => p.kind === k),
      `no perturbed run of a ${k} plan in test/fixtures/perturbed/index.mjs`,
    );
    assert.ok(
      perturbed.some((p) => p.kind === k && p.control),
      `no control run of a ${k} plan`,
    );
  }
});

// A judged figure named per instance (edge 1 share, edge 2 share) is one measure.
const measureOf = (m) => m.replace(/\b\d+\b/g, 'N');

// Judged measures no real perturbation here can fail, each with why; the judge's unit tests cover them.
const NO_FIXTURE = {
  'capped: error rate':
    "cdn's balancer retries another edge when one dies (proxy_next_upstream), the edges and origins are redundant, and k6 waits 60 s for an answer: no cap, knob or death the lab can make turns a level's answers into errors; a memory cap that kills the edges stops the level before k6 runs (the 4 MiB fixture)",
};

test('every judged measure of each plan kind, as its control runs judge it, fails in some perturbed run', async () => {
  const missing = [];
  for (const kind of [...new Set(perturbed.map((p) => p.kind))]) {
    const judged = new Set();
    for (const control of new Set(perturbed.filter((p) => p.kind === kind && p.control).map((p) => p.control))) {
      for (const o of (await judgedAgain(control)).outcomes)
        for (const f of o.figures) judged.add(measureOf(f.measure));
    }
    const caught = new Set(
      perturbed.filter((p) => p.kind === kind).flatMap((p) => p.fails.map(([, m]) => measureOf(m))),
    );
    for (const m of judged) if (!caught.has(m) && !NO_FIXTURE[`${kind}: ${m}`]) missing.push(`${kind}: ${m}`);
  }
  assert.deepEqual(missing, [], 'judged measures no perturbed run fails (add one: test/fixtures/perturbed/README.md)');
});
