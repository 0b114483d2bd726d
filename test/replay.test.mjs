/*
 * The replay of what k6 sent (docs/model.md#the-replay-of-what-k6-sent): on a recorded spike run
 * it gives the counts the proxies gave, one count wide, and a policy the stack did not run
 * fails it; SEEN_LAG_MS is what the recorded runs measured.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readFileSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { loadTopology } from '../lab/stack/topology.mjs';
import { proxyNamed } from '../lab/policy/proxies/index.mjs';
import { readRun } from '../lab/results/runs.mjs';
import { plan as makePlan } from '../thresholds/plan.js';
import { kinds } from '../lab/kinds/index.mjs';
import { measuredFromFolder } from '../lab/results/cases.mjs';
import { recordedLags } from '../lab/cli/seen-lag.mjs';
import { SEEN_LAG_MS, pooledQuantiles } from '../thresholds/models/seen-lag.js';
import { replaySends } from '../thresholds/models/limiter-replay.js';
import { addSeenLags, parseSeenLog } from '../lab/judge/sends.mjs';

const root = join(import.meta.dirname, '..');
const RUN = '20261125-220056-673-12079-spike-quick2';

function judged(experiment, overrides = {}, edit = (sends) => sends) {
  const run = readRun(join(root, 'docs', 'runs'), RUN, { panels: false });
  const exp = run.experiments.find((e) => e.name === experiment);
  const phase = { ...exp.phases[0], plan: makePlan({ experiment, suite: 'spike', factor: 2, overrides }) };
  return kinds.limiter.judge(phase.plan, { ...measuredFromFolder(phase), sends: edit(structuredClone(phase.sends)) })
    .outcomes;
}

test('the replay of a recorded spike run gives every count the proxies gave, one count wide', () => {
  for (const experiment of ['burst', 'envoy-vs-nginx']) {
    for (const o of judged(experiment)) {
      assert.equal(o.judgedOn, 'replay', o.case);
      assert.ok(o.expected.ok.hi - o.expected.ok.lo <= 1, `${o.case}: ${o.expected.ok.lo}..${o.expected.ok.hi}`);
      assert.ok(o.pass, `${o.case}: ${JSON.stringify(o.checks)}`);
    }
  }
});

test('a policy the stack did not run fails the replay of the same schedule', () => {
  const failed = (experiment, knobs) =>
    judged(experiment, knobs)
      .filter((o) => !o.pass)
      .map((o) => o.case);
  assert.ok(failed('burst', { rate: 4 }).includes('burst/b0-3rps'));
  assert.ok(failed('envoy-vs-nginx', { tokens_per_fill: 24 }).includes('envoy-vs-nginx/envoy-2s'));
  assert.ok(failed('envoy-vs-nginx', { nginx_burst: 199 }).includes('envoy-vs-nginx/nginx-1s'));
});

test("a send InfluxDB lost (two stamps in one nanosecond are one point) leaves the proxy's sightings to replay; with neither, the plan judges", () => {
  const lose = (id, alsoSeen) => (sends) => {
    sends.cases[id].afterUs.pop();
    if (alsoSeen) sends.seen[id].afterUs.pop();
    return sends;
  };
  const one = (experiment, id, alsoSeen) =>
    judged(experiment, {}, lose(id, alsoSeen)).find((o) => o.case === `${experiment}/${id}`);
  for (const [experiment, id] of [
    ['envoy-vs-nginx', 'envoy-4s'],
    ['envoy-vs-nginx', 'nginx-2s'],
    ['burst', 'b0-3rps'],
  ]) {
    const o = one(experiment, id, false);
    assert.equal(o.judgedOn, 'replay', o.case);
    assert.ok(o.pass, `${o.case}: ${JSON.stringify(o.checks)}`);
    const neither = one(experiment, id, true);
    assert.equal(neither.judgedOn, 'plan');
    assert.match(
      neither.noReplay,
      /holds \d+ send times of the \d+ requests k6 counted, and the proxy logged \d+ sightings/,
    );
  }
});

test("SEEN_LAG_MS is the recorded runs' lags, pooled", () => {
  const all = {};
  for (const r of recordedLags(root))
    for (const [proxy, parts] of Object.entries(r.byProxy)) (all[proxy] ||= []).push(...parts);
  for (const table of Object.values(SEEN_LAG_MS)) {
    const pooled = pooledQuantiles(
      all[table.proxy],
      table.q.map(([p]) => p),
    );
    table.q.forEach(([p, x], i) =>
      assert.ok(Math.abs(pooled[i][1] - x) <= 0.01, `${table.proxy} p${p}: stated ${x}, recorded ${pooled[i][1]}`),
    );
  }
});

// nginx's limiter clock as a log format names it: the request header lab_clock.lua stamps.
const stampedHeader = readFileSync(join(root, 'stacks/lib/lab_clock.lua'), 'utf8').match(/set_header\("([^"]+)"/)[1];
const NGINX_CLOCK = `$http_${stampedHeader.toLowerCase().replaceAll('-', '_')}`;

// A line as each proxy writes it, from the tokens of the seeds' log formats (an unknown token is
// left in place, and the line then reads as none), and the clock its sightings must be read on:
// nginx's own limiter clock, which makes its replay exact (a wall-clock millisecond leaves each
// request's limiter millisecond to a draw, and a near tie such as burst's b0-3rps to chance).
const SAMPLES = {
  envoy: {
    tokens: { '%REQ(X-LAB-CASE)%': 'c1', '%START_TIME(%s.%6f)%': '1764000000.123456', '%RESPONSE_CODE%': '429' },
    clock: 'wall',
  },
  nginx: {
    tokens: { $http_x_lab_case: 'c1', [NGINX_CLOCK]: '123456', $msec: '1764000000.123', $request_time: '0.001' },
    clock: 'monotonic',
  },
};
const FORMATS = [/inline_string: "(%REQ\(X-LAB-CASE\)%[^"\\]*)/, /log_format lab_seen '([^']*)'/];

test("each seed service's sightings log is written in a format its proxy's module reads", () => {
  const topology = loadTopology(join(root, 'docker-compose.yml'));
  const logging = Object.entries(topology.services).filter(([, s]) => s.sightings);
  assert.ok(logging.length >= 3, `${logging.length} services log sightings`);
  for (const [name, s] of logging) {
    const text = Object.values(s.configs)
      .map((f) => readFileSync(join(root, f), 'utf8'))
      .join('\n');
    const format = FORMATS.map((re) => text.match(re)?.[1]).find(Boolean);
    assert.ok(format, `${name}: no sightings log format in ${Object.values(s.configs)}`);
    let line = format;
    const sample = SAMPLES[s.sightings];
    for (const [token, value] of Object.entries(sample.tokens)) line = line.replaceAll(token, value);
    const read = proxyNamed(s.sightings).seen(line);
    assert.equal(read?.case, 'c1', `${name}: ${s.sightings} reads none of "${line}"`);
    assert.ok(Number.isFinite(read.ms), `${name}: "${line}"`);
    assert.equal(read.clock, sample.clock, `${name}: "${format}" logs no ${sample.clock} clock`);
  }
});

test("a case that follows another on its bucket is replayed after that case's sends, and answers for its own alone", () => {
  const window = { kind: 'stick_table_rate', periodMs: 2000, limit: 20, op: 'gt', expireMs: 6000 };
  // HAProxy's sightings are its rules' own millisecond: one exact trial, each at its send here.
  const seen = (ms) => ({ ms, resolutionMs: 1, clock: 'wall', limiterClock: true });
  const over = Array.from({ length: 48 }, (_, i) => 1_000_000 + Math.round(((i + 1) * 1000) / 30));
  const recover = Array.from({ length: 22 }, (_, i) => 1_001_600 + Math.round(((i + 1) * 1000) / 5));
  const alone = replaySends(window, recover, { sightings: seen(recover) });
  const after = replaySends(window, recover, {
    sightings: seen(recover),
    lead: { times: over, sightings: seen(over) },
  });
  assert.deepEqual(
    [alone.ok, alone.limited],
    [
      { min: 22, max: 22 },
      { min: 0, max: 0 },
    ],
  );
  // The window still counts the overload's 48 (the denied too): some of the slower 22 are refused.
  assert.equal(after.ok.min, after.ok.max);
  assert.equal(after.ok.min + after.limited.min, 22);
  assert.ok(after.ok.min > 0 && after.ok.min < 22, JSON.stringify(after));
});

test("a phase whose proxy logged wall-clock milliseconds instead of its limiter's clock says so, naming the cases", () => {
  const dir = mkdtempSync(join(tmpdir(), 'lab-seen-'));
  try {
    const said = (lines) => {
      writeFileSync(join(dir, 'seen.log'), `${lines.join('\n')}\n`);
      const out = [];
      const record = { cases: { c1: { firstMs: 1764000000120, afterUs: [0] } }, clock: null };
      addSeenLags({ experiment: 'e', suite: 'spike' }, record, [{ dir, sightings: 'nginx' }], {
        run: { dir },
        say: (s) => out.push(s),
      });
      return out;
    };
    // lab_clock.lua's stamp: the limiter's own clock, nothing to say.
    assert.deepEqual(said(['c1 123456 1764000000.123 0.001']), []);
    // No stamp ("-"): the request's start in wall-clock ms stands in, and the run says so.
    const out = said(['c1 - 1764000000.123 0.001']);
    assert.equal(out.length, 1);
    assert.match(out[0], /sightings of c1 are wall-clock milliseconds, not its limiter's clock/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("HAProxy's log gives each request's stream length and answer; the replay holds each for its own, bounded both ways at a millisecond's tie", () => {
  const haproxy = proxyNamed('haproxy');
  const read = parseSeenLog(
    ['c1 1000 429 api app 1000', 'c1 1000 200 api app 1300', 'c2 2000 200 api app', 'c1 999 200 api app 1001'].join(
      '\n',
    ),
    haproxy,
  );
  // In order of the rules' millisecond, those let through first within one (the log is in order of
  // their ends); a case with a line of 5 fields (before it was logged) has none.
  assert.deepEqual(
    [read.c1.ms, read.c1.heldMs, read.c1.passed],
    [
      [999, 1000, 1000],
      [2, 300, 0],
      [1, 1, 0],
    ],
  );
  assert.equal(read.c2.heldMs, undefined);
  const cur = { kind: 'stick_table_rate', periodMs: 10_000, limit: 2, op: 'gt', counter: 'conn_cur', connCur: true };
  const sightings = (ms, heldMs, passed) => ({
    ms,
    resolutionMs: 1,
    clock: 'wall',
    limiterClock: true,
    heldMs,
    passed,
  });
  // Three let through, each held 100 ms; the third's rules ran in the millisecond the first ended.
  const ms = [0, 50, 100];
  const both = replaySends(cur, ms, { sightings: sightings(ms, [100, 100, 100], [1, 1, 1]) });
  assert.deepEqual(both.ok, { min: 2, max: 3 });
  // Held a millisecond less, nothing ties: one count.
  const apart = replaySends(cur, ms, { sightings: sightings(ms, [99, 100, 100], [1, 1, 1]) });
  assert.deepEqual(apart.ok, { min: 3, max: 3 });
});

test("Traefik's access log gives each request's length; the replay gives an inFlightReq's slot back when the logged request ended", () => {
  const traefik = proxyNamed('traefik');
  const line = (start, durationNs, status) =>
    JSON.stringify({
      StartUTC: `2026-11-27T05:56:23.${start}Z`,
      Duration: durationNs,
      DownstreamStatus: status,
      RouterName: 'api@file',
      'request_X-Lab-Case': 'c1',
    });
  const read = parseSeenLog([line('100', 80e6, 200), line('150', 1e5, 429)].join('\n'), traefik);
  assert.deepEqual(
    [read.c1.heldMs, read.c1.passed],
    [
      [80, 0.1],
      [1, 0],
    ],
  );
  const policy = { kind: 'traefik_chain', steps: [{ average: 100, periodS: 1, burst: 10 }, { inFlight: 1 }] };
  const sightings = (ms, heldMs, passed) => ({ ms, resolutionMs: 0.001, clock: 'wall', heldMs, passed });
  // Two requests 60 ms apart with one slot: the first held 80 ms as logged keeps the second out;
  // logged 40 ms, it lets it in. A drawn hold (at most 25 ms of overhead) would let it in too.
  const ms = [0, 60];
  const long = replaySends(policy, ms, { sightings: sightings(ms, [80, 1], [1, 1]), trials: 8 });
  assert.deepEqual(long.ok, { min: 1, max: 1 });
  const short = replaySends(policy, ms, { sightings: sightings(ms, [40, 1], [1, 1]), trials: 8 });
  assert.deepEqual(short.ok, { min: 2, max: 2 });
  const drawn = replaySends(policy, ms, { sightings: { ...sightings(ms), heldMs: null }, trials: 8 });
  assert.deepEqual(drawn.ok, { min: 2, max: 2 });
});

test("nginx's log gives each request's length from its limiter's stamp and its status; the replay holds its limit_conn slot that long, bounded at a millisecond's tie", () => {
  const nginx = proxyNamed('nginx');
  const read = parseSeenLog(
    [
      'c1 5000 1764000000.400 0.300 200',
      'c1 5000 1764000000.100 0.000 503',
      'c2 - 1764000000.100 0.001 200',
      'c3 7 1.0 0.001',
    ].join('\n'),
    nginx,
  );
  // Let through first within the millisecond; a wall-clock start (no stamp) and a seed's 4-field line give no hold.
  assert.deepEqual(
    [read.c1.ms, read.c1.heldMs, read.c1.passed],
    [
      [5000, 5000],
      [300, 0],
      [1, 0],
    ],
  );
  assert.equal(read.c2.heldMs, undefined);
  assert.equal(read.c3.heldMs, undefined);
  const policy = { kind: 'limit_req_chain', limits: [], conns: [{ conn: 1 }] };
  const sightings = (ms, heldMs, passed) => ({
    ms,
    resolutionMs: 1,
    clock: 'monotonic',
    limiterClock: true,
    heldMs,
    passed,
  });
  // One slot; the second request's rules run in the millisecond the first ends: let in or not.
  const ms = [0, 100];
  const tie = replaySends(policy, ms, { sightings: sightings(ms, [100, 5], [1, 1]) });
  assert.deepEqual(tie.ok, { min: 1, max: 2 });
  // Held 150 ms as logged, the second is refused; 50 ms, let in.
  assert.deepEqual(replaySends(policy, ms, { sightings: sightings(ms, [150, 5], [1, 0]) }).ok, { min: 1, max: 1 });
  assert.deepEqual(replaySends(policy, ms, { sightings: sightings(ms, [50, 5], [1, 1]) }).ok, { min: 2, max: 2 });
});

test("a limit_conn's refusals count by its status where it answers with another than limit_req's", () => {
  // limit_req at 1 r/s with no burst, one limit_conn slot; refused by limit_conn 503, by limit_req 429.
  const policy = {
    kind: 'limit_req_chain',
    limits: [{ rateMilli: 1000, burst: 0, delay: 0 }],
    conns: [{ conn: 1 }],
    statuses: { req: 429, conn: 503 },
  };
  const ms = [0, 10, 500, 2000];
  const sightings = {
    ms,
    resolutionMs: 1,
    clock: 'monotonic',
    limiterClock: true,
    // The first holds its slot 100 ms: the second (10 ms) meets limit_req first, which refuses it;
    // the third comes after that slot is back and limit_req refuses it; the fourth is let in.
    heldMs: [100, 1, 1, 1],
    passed: [1, 0, 0, 1],
  };
  const r = replaySends(policy, ms, { sightings });
  assert.deepEqual(
    [r.ok, r.limited, r['refused 429'], r['refused 503']],
    [
      { min: 2, max: 2 },
      { min: 2, max: 2 },
      { min: 2, max: 2 },
      { min: 0, max: 0 },
    ],
  );
  // With a burst of 3, limit_req lets the second on, and limit_conn's one slot refuses it with 503.
  const burst = { ...policy, limits: [{ rateMilli: 1000, burst: 3, delay: 3 }] };
  const b = replaySends(burst, ms, { sightings: { ...sightings, passed: [1, 0, 1, 1] } });
  assert.deepEqual(
    [b.ok, b['refused 429'], b['refused 503']],
    [
      { min: 3, max: 3 },
      { min: 0, max: 0 },
      { min: 1, max: 1 },
    ],
  );
  // Without statuses, one count of refusals, as before.
  assert.equal(replaySends({ ...burst, statuses: undefined }, ms, { sightings })['refused 503'], undefined);
});

test("a case that opens a connection per request on a frontend with rate-limit sessions: its waits replayed from k6's sends, its counts from HAProxy's sightings after them", () => {
  const window = { kind: 'stick_table_rate', periodMs: 2000, limit: 4, op: 'gt', expireMs: 12_000, sessions: 30 };
  // 90 sent at 45 a second; HAProxy saw each when it accepted it (the model's accept times here).
  const sends = Array.from({ length: 90 }, (_, i) => 1_000_000 + Math.round(((i + 1) * 1000) / 45));
  const sightings = { ms: sends.map((t) => t), resolutionMs: 1, clock: 'wall', limiterClock: true };
  const kept = replaySends(window, sends, { sightings });
  const connecting = replaySends({ ...window, connects: true }, sends, { sightings });
  // Kept connections wait for nothing; a connection each waits from the 31st on, the last about a second.
  assert.deepEqual(kept.maxDelayMs, { min: 0, max: 0 });
  assert.equal(connecting.maxDelayMs.min, connecting.maxDelayMs.max);
  assert.ok(connecting.maxDelayMs.max > 900 && connecting.maxDelayMs.max < 1100, JSON.stringify(connecting));
  // The counts follow the sightings, as HAProxy's rules saw them: the wait is not added again.
  assert.deepEqual([connecting.ok, connecting.limited], [kept.ok, kept.limited]);
});
