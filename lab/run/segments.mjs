/*
 * One plan run by several k6 processes, as k6-operator splits a test across pods: each process
 * gets an execution segment of the plan, so together they send exactly the schedule one process
 * would, and the lab judges the whole (docs/beyond-one-machine.md).
 */
export const MAX_SEGMENTS = 8;

/**
 * k6's arguments for segment i of n: --execution-segment i/N:(i+1)/N over the sequence
 * 0,1/N,...,1. Every process streams with the same testid and its own `segment` tag.
 */
export function segmentArgs(i, n) {
  const at = (k) => (k === 0 ? '0' : k === n ? '1' : `${k}/${n}`);
  return [
    '--execution-segment',
    `${at(i)}:${at(i + 1)}`,
    '--execution-segment-sequence',
    Array.from({ length: n + 1 }, (_, k) => at(k)).join(','),
    '--tag',
    `segment=${i}`,
  ];
}

const isPercentile = (stat) => stat === 'med' || stat === 'avg' || /^p\(/.test(stat);

/**
 * One summary from the segments' summaries: counts added, maxima and percentile bounds kept.
 * Each process judges its thresholds on its share only, and a count threshold on a share is
 * wrong: the lab ignores their verdicts (k6 exits 99, which the runner accepts) and judges the
 * whole, from these merged summaries locally, or from Prometheus by testid (`just verdict`).
 * Counts add up; a max is the max of the maxima; a percentile is bounded by the largest of the
 * segments' (if no segment has more than 1 % of its requests above x, the whole has not either),
 * which is how `p99 < 1 s` is judged.
 */
export function mergeSummaries(list) {
  const metrics = {};
  for (const s of list) {
    for (const [name, m] of Object.entries(s?.metrics || {})) {
      const into = (metrics[name] ||= { type: m.type, contains: m.contains, values: {} });
      for (const [stat, v] of Object.entries(m.values || {})) {
        const had = into.values[stat];
        if (had === undefined) into.values[stat] = v;
        else if (stat === 'count' || stat === 'passes' || stat === 'fails' || (m.type === 'counter' && stat === 'rate'))
          into.values[stat] = had + v;
        else if (stat === 'min') into.values[stat] = Math.min(had, v);
        else if (stat === 'max' || isPercentile(stat) || stat === 'value') into.values[stat] = Math.max(had, v);
      }
      if (m.type === 'rate') {
        const { passes = 0, fails = 0 } = into.values;
        into.values.rate = passes + fails ? passes / (passes + fails) : 0;
      }
    }
  }
  return {
    metrics,
    setup_data: list.find((s) => s?.setup_data)?.setup_data,
    segments: list.length,
    schedule: scheduleSkew(list),
  };
}

/**
 * When each segment's schedule started, and how far apart: each process records its scenarios'
 * clock origin (k6's exec.scenario.startTime less the scenario's startTime offset, once per VU,
 * as the gauge lab_schedule_origin; k6/lib/run.js), and its summary keeps the least.
 * {originsMs: [epoch ms per segment], skewMs} or null when a summary lacks it.
 */
export function scheduleSkew(parts) {
  const originsMs = parts.map((s) => s?.metrics?.lab_schedule_origin?.values?.min);
  if (!originsMs.length || originsMs.some((v) => typeof v !== 'number')) return null;
  return { originsMs, skewMs: Math.max(...originsMs) - Math.min(...originsMs) };
}
