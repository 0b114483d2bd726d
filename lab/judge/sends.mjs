/*
 * The schedule k6 really sent, for a kind judged by replaying it (kind.replaysSends): when k6
 * started each request of each case, read back from InfluxDB after the load, and how this
 * machine's monotonic clock (nginx's limiter clock) stood against its wall clock (k6's sample
 * times). Saved beside the summary as <suite>.<experiment>.sends.json.
 *
 * The carrier is the per-request sample k6 already streams: lab_arrival_late_ms, added just
 * before each request (k6/lib/kinds/limiter.js), whose InfluxDB point has k6's own timestamp.
 * Reading it back costs k6 nothing beyond the output it already runs (a csv or json output
 * would write every metric of every request a second time).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runName } from '../lib/run-names.mjs';
import { proxyNamed } from '../policy/proxies/index.mjs';

/**
 * CLOCK_MONOTONIC - CLOCK_REALTIME in ms, read back to back (the closest of a few reads), or
 * null when it cannot be read. nginx's limit_req clock is floor(CLOCK_MONOTONIC in ms), k6 stamps
 * in wall-clock time: the offset puts one on the other.
 */
export function clockOffsetMs() {
  const py =
    'import time\nbest=None\nfor _ in range(20):\n  a=time.clock_gettime_ns(time.CLOCK_REALTIME); m=time.clock_gettime_ns(time.CLOCK_MONOTONIC); b=time.clock_gettime_ns(time.CLOCK_REALTIME)\n  if best is None or b-a<best[0]: best=(b-a, m-(a+b)//2)\nprint(best[1], best[0])';
  const r = spawnSync('python3', ['-c', py], { encoding: 'utf8', timeout: 5000 });
  const [offsetNs, gapNs] = (r.stdout || '').trim().split(' ').map(BigInt);
  if (r.status !== 0 || offsetNs === undefined) return null;
  // In ms as a double: about 0.25 µs of precision at today's magnitudes.
  return { ms: Number(offsetNs / 1000n) / 1000, readGapUs: Number(gapNs) / 1000 };
}

/** The sends per case from InfluxDB: {case: [wall-clock ms, ...]} sorted, µs precision. */
export async function storedSends(urls, testid, experiment) {
  const q = `SELECT "value" FROM "lab_arrival_late_ms" WHERE "testid"='${testid}' AND "experiment"='${experiment}' GROUP BY "case"`;
  const res = await fetch(`${urls.influx}/query?db=${urls.database}&epoch=u&q=${encodeURIComponent(q)}`, {
    signal: AbortSignal.timeout(30_000),
  });
  if (!res.ok) throw new Error(`InfluxDB: ${res.status} ${await res.text()}`);
  const body = await res.json();
  const err = body.results?.[0]?.error;
  if (err) throw new Error(`InfluxDB: ${err}`);
  const out = {};
  for (const s of body.results?.[0]?.series || [])
    out[s.tags.case] = s.values.map(([us]) => us / 1000).sort((a, b) => a - b);
  return out;
}

/**
 * The file's content, compact: per case its first send (ms) and each send after it in µs; the
 * clock offset read before and after the load.
 */
export function sendsRecord(sends, clock) {
  const cases = Object.fromEntries(
    Object.entries(sends).map(([id, ts]) => [
      id,
      { firstMs: ts[0], afterUs: ts.map((t) => Math.round((t - ts[0]) * 1000)) },
    ]),
  );
  return { source: 'InfluxDB lab_arrival_late_ms (k6 sample times)', clock, cases };
}

const timesOf = (c) => c.afterUs.map((us) => c.firstMs + us / 1000);

/** The sends of a record, per case, as wall-clock ms. */
export const sendsOf = (record) =>
  Object.fromEntries(Object.entries(record?.cases || {}).map(([id, c]) => [id, timesOf(c)]));

/**
 * The proxies' sightings of a record, per case: {ms sorted, resolutionMs, clock, limiterClock,
 * heldMs (how long each held its limiter's entries, in the same order; null where not logged),
 * passed (1 where it was let through)}
 * (records made before limiterClock was kept: nginx's monotonic readings were its limiter's).
 */
export const sightingsOf = (record) =>
  Object.fromEntries(
    Object.entries(record?.seen || {}).map(([id, c]) => [
      id,
      {
        ms: timesOf(c),
        resolutionMs: c.resolutionMs,
        clock: c.clock ?? 'wall',
        limiterClock: c.limiterClock ?? c.clock === 'monotonic',
        heldMs: c.heldMs ?? null,
        passed: c.passed ?? null,
      },
    ]),
  );

/** A proxy's sightings on the wall clock, as k6 stamps: nginx's monotonic readings less the run's offset. */
const onWall = (seen, offsetMs) =>
  seen.clock !== 'monotonic' ? seen.ms : offsetMs === null ? null : seen.ms.map((t) => t - offsetMs);

/** A sends file as the replay reads it: {cases: sendsOf, seen: sightingsOf, offsetMs: usableOffset}. */
export const replayRecord = (sends) => ({
  cases: sendsOf(sends),
  seen: sightingsOf(sends),
  offsetMs: usableOffset(sends.clock),
});

/**
 * What the replay reads of one case from a run's record (replayRecord), given the `sent`
 * requests k6 counted: {times, sightings}, the times InfluxDB's where it holds them all, else the
 * proxy's exact sightings on the wall clock; {why} where neither. (InfluxDB keeps one point per
 * series and nanosecond: two stamps that fall together are one point. The proxy's own clock
 * readings are all the replay needs of a request; the sends only pair with them.)
 */
export function caseSends(record, id, sent) {
  const mine = record.cases[id] || [];
  const logged = record.seen[id];
  const sightings = logged?.ms.length === sent ? logged : null;
  const exact =
    sightings && (sightings.limiterClock || sightings.resolutionMs < 1) ? onWall(sightings, record.offsetMs) : null;
  const times = mine.length === sent ? mine : exact;
  if (!times)
    return {
      why: `InfluxDB holds ${mine.length} send times of the ${sent} requests k6 counted, and the proxy logged ${logged?.ms.length ?? 'no'} sightings`,
    };
  return { times, sightings };
}

/**
 * The clock offset the replay may use: the reads before and after the load, when they agree to
 * within a tenth of a ms (a clock slewed by NTP meanwhile does not); null otherwise.
 */
export function usableOffset(clock) {
  const [a, b] = [clock?.before?.ms, clock?.after?.ms];
  if (a == null || b == null) return null;
  return Math.abs(a - b) <= 0.1 ? a : null;
}

/** Reads the phase's sends and saves them; returns the record, or a problem saying why none. */
export async function saveSends(plan, clockBefore, { run, stores }) {
  try {
    const record = sendsRecord(await storedSends(stores.urls, run.id, plan.experiment), {
      before: clockBefore,
      after: clockOffsetMs(),
    });
    writeFileSync(join(run.dir, `${runName(plan)}.sends.json`), JSON.stringify(record));
    return { record };
  } catch (e) {
    return {
      problem: `${plan.experiment}: reading k6's send times from InfluxDB: ${e.message} (its cases are judged on the plan's ranges)`,
    };
  }
}

/**
 * When a proxy saw each case's requests, from the `seen.log` its config writes in its folder, each
 * line read by that proxy's module (`proxy.seen`: lab/policy/proxies/): {case: {ms: [...]
 * sorted, resolutionMs, clock: 'monotonic' | 'wall', limiterClock: whether every reading is the
 * limiter's own time, heldMs: how long each held the limiter's entries, and passed (1 where let
 * through: its status 200), where every line says}};
 * a line of no case (warm-up) is skipped.
 */
export function parseSeenLog(text, proxy) {
  const out = {};
  for (const line of text.split('\n')) {
    const s = proxy.seen(line);
    if (!s?.case || !Number.isFinite(s.ms)) continue;
    const c = (out[s.case] ||= { seen: [], resolutionMs: proxy.resolutionMs, clock: s.clock, proxy: proxy.name });
    // Let through is answered 200: the lab's backend answers nothing else.
    c.seen.push([s.ms, s.heldMs, String(s.status) === '200']);
    c.limiterClock = (c.limiterClock ?? true) && Boolean(s.limiterClock);
  }
  for (const [id, { seen, ...c }] of Object.entries(out)) {
    // Within one millisecond, those let through first: the order its rules met them in (once a
    // limit refuses in a millisecond, it refuses the rest of that millisecond's too).
    seen.sort((a, b) => a[0] - b[0] || Number(Boolean(b[2])) - Number(Boolean(a[2])));
    // How long each request held its limiter's entries, and whether it was let through, where the
    // proxy logs it for every one.
    const held = seen.every(([, h]) => Number.isFinite(h))
      ? { heldMs: seen.map(([, h]) => h), passed: seen.map(([, , p]) => (p ? 1 : 0)) }
      : {};
    out[id] = { ...c, ms: seen.map(([ms]) => ms), ...held };
  }
  return out;
}

/** The quantiles a run records of each case's lag (and the model states: SEEN_LAG_MS). */
export const LAG_QUANTILES = [0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1];
const quantile = (xs, q) => xs[Math.min(xs.length - 1, Math.floor(q * xs.length))];

/**
 * How long after k6 stamped each request its proxy saw it, per case: the i-th send against the
 * i-th sighting (loopback keeps a case's requests in order within the lag), as {n, q: [[p, ms],
 * ...] at LAG_QUANTILES, resolutionMs}: nginx's ms floor makes each of its lags read up to 1 ms
 * short. Cases whose counts differ are left out.
 */
export function seenLags(sends, seen, offsetMs = null) {
  const out = {};
  for (const [id, ts] of Object.entries(sends)) {
    const s = seen[id];
    if (!s || s.ms.length !== ts.length || !ts.length || (s.clock === 'monotonic' && offsetMs === null)) continue;
    // A monotonic reading on the wall clock: less the offset between the two.
    const wall = s.clock === 'monotonic' ? (x) => x - offsetMs : (x) => x;
    const lags = ts.map((t, i) => wall(s.ms[i]) - t).sort((a, b) => a - b);
    out[id] = {
      n: lags.length,
      q: LAG_QUANTILES.map((p) => [p, Math.round(quantile(lags, p) * 1000) / 1000]),
      resolutionMs: s.resolutionMs,
      proxy: s.proxy,
    };
  }
  return out;
}

/**
 * The seen lags of a phase, from its services' folders: [{dir, sightings}], `sightings` the name
 * of the proxy whose seen.log the service writes (its topology's), or null.
 */
export function addSeenLags(plan, record, folders, { run, say }) {
  const seen = {};
  for (const { dir, sightings } of folders.filter((f) => f.sightings)) {
    const file = join(dir, 'seen.log');
    if (!existsSync(file)) continue;
    const text = readFileSync(file, 'utf8');
    const read = parseSeenLog(text, proxyNamed(sightings));
    // A format its proxy's module does not read would leave the replay on recorded lags, unsaid.
    if (!Object.keys(read).length && text.trim())
      say(`${plan.experiment}: ${file}: no line read as ${sightings}'s sightings; its cases replayed without them`);
    // A whole millisecond that is not the limiter's own leaves each request's to a draw: the
    // replay's range is then a sample of its trials, which a near tie can miss (nginx's lines
    // whose clock lab_clock.lua did not stamp).
    const drawn = Object.keys(read).filter((id) => read[id].resolutionMs >= 1 && !read[id].limiterClock);
    if (drawn.length)
      say(
        `${plan.experiment}: ${file}: ${sightings}'s sightings of ${drawn.join(', ')} are wall-clock milliseconds, not its limiter's clock: their replay draws each request's millisecond, a sample of its trials`,
      );
    Object.assign(seen, read);
  }
  record.seenLagMs = seenLags(sendsOf(record), seen, usableOffset(record.clock));
  // The sightings themselves, as the sends are kept: the replay reads them.
  record.seen = Object.fromEntries(
    Object.entries(seen).map(([id, s]) => [
      id,
      {
        resolutionMs: s.resolutionMs,
        clock: s.clock,
        limiterClock: s.limiterClock,
        firstMs: s.ms[0],
        afterUs: s.ms.map((t) => Math.round((t - s.ms[0]) * 1000)),
        ...(s.heldMs ? { heldMs: s.heldMs, passed: s.passed } : {}),
      },
    ]),
  );
  writeFileSync(join(run.dir, `${runName(plan)}.sends.json`), JSON.stringify(record));
  return record;
}
