import assert from 'node:assert/strict';
import test from 'node:test';
import { highestJudgedExactly } from '../lab/bench/judged-rate.mjs';

const row = (proxy, rate, exact) => ({ proxy, rate, exact });

test('the judged rate is the highest exact rate below the lowest missed one, over every run', () => {
  const rows = [
    row('haproxy', 800, true),
    row('haproxy', 1200, false),
    row('haproxy', 1600, true),
    row('nginx', 1600, true),
  ];
  assert.equal(highestJudgedExactly(rows, 'haproxy'), 800);
  assert.equal(highestJudgedExactly(rows, 'nginx'), 1600);
  // A rate missed in a second run counts against the first run's exact one.
  assert.equal(highestJudgedExactly([...rows, row('nginx', 1600, false), row('nginx', 400, true)], 'nginx'), 400);
  assert.equal(highestJudgedExactly([row('traefik', 200, false)], 'traefik'), 0);
  assert.equal(highestJudgedExactly(rows, 'envoy'), 0);
});
