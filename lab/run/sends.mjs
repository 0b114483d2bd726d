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
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runName } from './k6.mjs';

/**
 * CLOCK_MONOTONIC - CLOCK_REALTIME in ms, read back to back (the closest of a few reads), or
 * null when it cannot be read. nginx's limit_req clock is floor(CLOCK_MONOTONIC in ms), k6 stamps
 * in wall-clock time: only this offset's fraction of a ms matters to the replay.
 */
export function clockOffsetMs() {
  const py = 'import time\nbest=None\nfor _ in range(20):\n  a=time.clock_gettime_ns(time.CLOCK_REALTIME); m=time.clock_gettime_ns(time.CLOCK_MONOTONIC); b=time.clock_gettime_ns(time.CLOCK_REALTIME)\n  if best is None or b-a<best[0]: best=(b-a, m-(a+b)//2)\nprint(best[1], best[0])';
  const r = spawnSync('python3', ['-c', py], { encoding: 'utf8', timeout: 5000 });
  const [offsetNs, gapNs] = (r.stdout || '').trim().split(' ').map(BigInt);
  if (r.status !== 0 || offsetNs === undefined) return null;
  // Whole seconds apart are of no use and overflow a double's µs: keep the offset mod 1 s.
  const ns = ((offsetNs % 1_000_000_000n) + 1_000_000_000n) % 1_000_000_000n;
  return { ms: Number(ns) / 1e6, readGapUs: Number(gapNs) / 1000 };
}

/** The sends per case from InfluxDB: {case: [wall-clock ms, ...]} sorted, µs precision. */
export async function storedSends(urls, testid, experiment) {
  const q = `SELECT "value" FROM "lab_arrival_late_ms" WHERE "testid"='${testid}' AND "experiment"='${experiment}' GROUP BY "case"`;
  const res = await fetch(`${urls.influx}/query?db=${urls.database}&epoch=u&q=${encodeURIComponent(q)}`, { signal: AbortSignal.timeout(30_000) });
  if (!res.ok) throw new Error(`InfluxDB: ${res.status} ${await res.text()}`);
  const body = await res.json();
  const err = body.results?.[0]?.error;
  if (err) throw new Error(`InfluxDB: ${err}`);
  const out = {};
  for (const s of body.results?.[0]?.series || []) out[s.tags.case] = s.values.map(([us]) => us / 1000).sort((a, b) => a - b);
  return out;
}

/**
 * The file's content, compact: per case its first send (ms) and each send after it in µs; the
 * clock offset read before and after the load.
 */
export function sendsRecord(sends, clock) {
  const cases = Object.fromEntries(Object.entries(sends).map(([id, ts]) => [id, { firstMs: ts[0], afterUs: ts.map((t) => Math.round((t - ts[0]) * 1000)) }]));
  return { source: 'InfluxDB lab_arrival_late_ms (k6 sample times)', clock, cases };
}

/** The sends of a record, per case, as wall-clock ms. */
export function sendsOf(record) {
  return Object.fromEntries(Object.entries(record?.cases || {}).map(([id, c]) => [id, c.afterUs.map((us) => c.firstMs + us / 1000)]));
}

/**
 * The clock offset the replay may use: the reads before and after the load, when they agree to
 * within a tenth of a ms (a clock slewed by NTP meanwhile does not); null otherwise.
 */
export function usableOffset(clock) {
  const [a, b] = [clock?.before?.ms, clock?.after?.ms];
  if (a == null || b == null) return null;
  const d = Math.abs(a - b);
  return Math.min(d, 1000 - d) <= 0.1 ? a : null;
}

/** Reads the phase's sends and saves them; returns the record, or a problem saying why none. */
export async function saveSends(plan, clockBefore, { run, stores }) {
  try {
    const record = sendsRecord(await storedSends(stores.urls, run.id, plan.experiment), { before: clockBefore, after: clockOffsetMs() });
    writeFileSync(join(run.dir, `${runName(plan)}.sends.json`), JSON.stringify(record));
    return { record };
  } catch (e) {
    return { problem: `${plan.experiment}: reading k6's send times from InfluxDB: ${e.message} (its cases are judged on the plan's ranges)` };
  }
}
