/*
 * One plan run by several k6 processes, as k6-operator splits a test across pods: each process
 * gets an execution segment of the plan (--execution-segment i/N:(i+1)/N over the sequence
 * 0,1/N,...,1), so together they send exactly the schedule one process would. Every process
 * streams with the same testid and its own `segment` tag.
 *
 * Each process judges its thresholds on its share only, and a count threshold on a share is
 * wrong: the lab ignores their verdicts (k6 exits 99, which the runner accepts) and judges the
 * whole, from the merged summaries locally, or from Prometheus by testid (`just verdict`). Counts
 * add up; a max is the max of the maxima; a percentile is bounded by the largest of the
 * segments' (if no segment has more than 1 % of its requests above x, the whole has not either),
 * which is how `p99 < 1 s` is judged.
 */
import { limiterOutcomes } from '../kinds/limiter.mjs';
import { sentMetric, okMetric, limitedMetric, latencyMetric } from '../../thresholds/kinds/limiter.js';
import { storeCounts, RUN_LOOKBACK } from '../judge/nothing-lost.mjs';

export const MAX_SEGMENTS = 8;

/** k6's arguments for segment i of n. */
export function segmentArgs(i, n) {
  const at = (k) => (k === 0 ? '0' : k === n ? '1' : `${k}/${n}`);
  return ['--execution-segment', `${at(i)}:${at(i + 1)}`, '--execution-segment-sequence', Array.from({ length: n + 1 }, (_, k) => at(k)).join(','), '--tag', `segment=${i}`];
}

const isPercentile = (stat) => stat === 'med' || stat === 'avg' || /^p\(/.test(stat);

/** One summary from the segments' summaries: counts added, maxima and percentile bounds kept. */
export function mergeSummaries(list) {
  const metrics = {};
  for (const s of list) {
    for (const [name, m] of Object.entries(s?.metrics || {})) {
      const into = metrics[name] ||= { type: m.type, contains: m.contains, values: {} };
      for (const [stat, v] of Object.entries(m.values || {})) {
        const had = into.values[stat];
        if (had === undefined) into.values[stat] = v;
        else if (stat === 'count' || stat === 'passes' || stat === 'fails' || (m.type === 'counter' && stat === 'rate')) into.values[stat] = had + v;
        else if (stat === 'min') into.values[stat] = Math.min(had, v);
        else if (stat === 'max' || isPercentile(stat) || stat === 'value') into.values[stat] = Math.max(had, v);
      }
      if (m.type === 'rate') {
        const { passes = 0, fails = 0 } = into.values;
        into.values.rate = passes + fails ? passes / (passes + fails) : 0;
      }
    }
  }
  return { metrics, setup_data: list.find((s) => s?.setup_data)?.setup_data, segments: list.length };
}

async function query(url, q) {
  const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(q)}`, { signal: AbortSignal.timeout(15_000) });
  const body = await res.json();
  if (body.status !== 'success') throw new Error(`Prometheus: ${body.error || res.status}`);
  return body.data.result.map((r) => ({ labels: r.metric, value: Number(r.value[1]) }));
}

/**
 * What Prometheus holds for one experiment of a run, as a k6 summary of the metrics the
 * limiter plans are judged on: per case and status the requests, the longest latency, the
 * largest p99, unexpected statuses and dropped iterations, over every segment.
 */
export async function summaryFromPrometheus(url, testid, plan) {
  const sel = `testid="${testid}", experiment="${plan.experiment}"`;
  const last = (metric, by) => `${by.startsWith('max') ? 'max' : 'sum'} by (${by.replace(/^max:/, '')}) (last_over_time(${metric}{${sel}}[${RUN_LOOKBACK}]))`;
  // The requests per case and status: the same query as the nothing-lost table's.
  const [{ prometheus: reqs }, max, p99, unexpected, dropped] = await Promise.all([
    storeCounts({ prometheus: url }, testid, plan.experiment, ['prometheus']),
    query(url, last('k6_http_req_duration_max', 'max:case')),
    query(url, last('k6_http_req_duration_p99', 'max:case')),
    query(url, last('k6_unexpected_status_total', 'case')),
    query(url, last('k6_dropped_iterations_total', 'scenario')),
  ]);
  if (!Object.keys(reqs).length) throw new Error(`Prometheus has no k6_http_reqs_total for testid ${testid}, experiment ${plan.experiment}`);
  const metrics = {};
  const put = (name, values) => { metrics[name] = { values: { ...metrics[name]?.values, ...values } }; };
  for (const c of plan.cases) {
    const mine = reqs[c.id] || {};
    put(sentMetric(c), { count: Object.values(mine).reduce((a, n) => a + n, 0) });
    put(okMetric(c), { count: mine['200'] ?? 0 });
    put(limitedMetric(c), { count: mine[String(c.limitedStatus)] ?? 0 });
    // k6 exports trends in seconds.
    const ms = (rows) => {
      const v = rows.find((r) => r.labels.case === c.id)?.value;
      return v === undefined ? null : v * 1000;
    };
    put(latencyMetric(c), { max: ms(max), 'p(99)': ms(p99) });
    put(`unexpected_status{case:${c.id}}`, { count: unexpected.find((r) => r.labels.case === c.id)?.value ?? 0 });
    put(`dropped_iterations{scenario:${c.id}}`, { count: dropped.find((r) => r.labels.scenario === c.id)?.value ?? 0 });
  }
  return { metrics };
}

/** `just verdict`: the limiter plans of a run judged from Prometheus alone. */
export async function verdict(url, testid, plans) {
  const judged = [];
  for (const plan of plans) {
    if (plan.kind) throw new Error(`verdict judges the limiter experiments (burst, envoy-vs-nginx); ${plan.experiment} is a ${plan.kind} plan`);
    judged.push(limiterOutcomes(plan, await summaryFromPrometheus(url, testid, plan)));
  }
  return { outcomes: judged.flatMap((j) => j.outcomes), rows: judged.flatMap((j) => j.rows) };
}
