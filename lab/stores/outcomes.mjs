/*
 * Each case's judged figures, written to both stores at the end of a run, so that teams in
 * Grafana see what the lab judged beside what k6 measured: Prometheus by remote write, InfluxDB
 * by line protocol, each point tagged testid, suite, experiment, case and measure.
 */
import { pushTimeseries } from 'prometheus-remote-write';
import { promQuery } from './prom-query.mjs';

/** One series per figure and field: pass (1 or 0), measured, expected low and high (where set). */
export function outcomeSeries(testid, outcomes, atMs) {
  const out = [];
  for (const o of outcomes) {
    const [experiment, kase] = o.case.split('/');
    for (const f of o.figures || []) {
      const labels = { testid, suite: o.suite, experiment, case: kase, measure: f.measure };
      const fields = { pass: f.pass ? 1 : 0, measured: f.measured, expected_low: f.lo, expected_high: f.hi };
      for (const [field, value] of Object.entries(fields)) {
        // Remote write wants label names in order.
        const sorted = Object.fromEntries(
          Object.entries({ __name__: `lab_outcome_${field}`, ...labels }).sort(([a], [b]) => (a < b ? -1 : 1)),
        );
        if (value !== null && value !== undefined) out.push({ labels: sorted, value, atMs });
      }
    }
  }
  return out;
}

// Line protocol escapes: tag keys and values (commas, spaces, equals), measurement names.
const tag = (s) => String(s).replace(/[,= \\]/g, (c) => `\\${c}`);

/** The same figures as InfluxDB line protocol: measurement lab_outcome, one line per figure. */
export function outcomeLines(testid, outcomes, atMs) {
  const lines = [];
  for (const o of outcomes) {
    const [experiment, kase] = o.case.split('/');
    for (const f of o.figures || []) {
      const tags = { testid, suite: o.suite, experiment, case: kase, measure: f.measure };
      const fields = [`pass=${f.pass ? 1 : 0}i`];
      for (const [k, v] of [
        ['measured', f.measured],
        ['expected_low', f.lo],
        ['expected_high', f.hi],
      ])
        if (Number.isFinite(v)) fields.push(`${k}=${v}`);
      lines.push(
        `lab_outcome,${Object.entries(tags)
          .map(([k, v]) => `${k}=${tag(v)}`)
          .join(',')} ${fields.join(',')} ${Math.round(atMs)}`,
      );
    }
  }
  return lines;
}

/**
 * Prometheus remote write of `series` ([{labels (with __name__), samples: [{value, timestamp}]}]),
 * in batches of at most `batch` series; throws with Prometheus's answer when it refuses. The
 * outcomes' writer, and the stores bench's (lab/bench/stores.mjs).
 */
export async function remoteWrite(prometheusUrl, series, { batch = 5000, timeoutMs = 10_000 } = {}) {
  for (let i = 0; i < series.length; i += batch) {
    const r = await pushTimeseries(series.slice(i, i + batch), {
      url: `${prometheusUrl}/api/v1/write`,
      fetch: (url, o) => fetch(url, { ...o, signal: AbortSignal.timeout(timeoutMs) }),
    });
    if (r.status < 200 || r.status >= 300)
      throw new Error(`Prometheus refused the write: ${r.status} ${r.statusText || ''} ${r.errorMessage || ''}`);
  }
}

/** Writes the outcomes to both stores; throws naming the store that refused them. */
export async function writeOutcomes(urls, testid, outcomes, atMs = Date.now()) {
  const lines = outcomeLines(testid, outcomes, atMs);
  if (!lines.length) return { points: 0 };
  const res = await fetch(`${urls.influx}/write?db=${urls.database}&precision=ms`, {
    method: 'POST',
    body: lines.join('\n'),
    signal: AbortSignal.timeout(10_000),
  });
  if (res.status !== 204) throw new Error(`InfluxDB refused the outcomes: ${res.status} ${await res.text()}`);
  const series = outcomeSeries(testid, outcomes, atMs).map((s) => ({
    labels: s.labels,
    samples: [{ value: s.value, timestamp: Math.round(s.atMs) }],
  }));
  try {
    await remoteWrite(urls.prometheus, series);
  } catch (e) {
    throw new Error(e.message.replace('the write', 'the outcomes'), { cause: e });
  }
  return { points: lines.length, series: series.length };
}

/**
 * How many judged figures each store holds for a run: Prometheus's lab_outcome_pass series and
 * InfluxDB's lab_outcome points, for the nothing-lost table (they must equal outcomes.json's).
 */
export async function outcomeCounts(urls, testid) {
  const p = await promQuery(urls.prometheus, `count(last_over_time(lab_outcome_pass{testid="${testid}"}[1h]))`);
  const i = await (
    await fetch(
      `${urls.influx}/query?db=${urls.database}&q=${encodeURIComponent(`SELECT count("pass") FROM "lab_outcome" WHERE "testid"='${testid}'`)}`,
      { signal: AbortSignal.timeout(10_000) },
    )
  ).json();
  return { prometheus: p[0]?.value ?? 0, influx: i.results?.[0]?.series?.[0]?.values?.[0]?.[1] ?? 0 };
}
