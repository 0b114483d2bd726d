/*
 * The results pages' side of each plan kind: its key measure (what the history charts across
 * runs, with the expected range), and the charts of one case against the model: limiter, answers
 * so far against the predicted band; closed-loop, answers per second and latency by source;
 * capped, throughput against its range and the bottleneck's CPU against its quota; capacity,
 * delivered against offered per step, and CPU per request against the references.
 */
import { caseCourse, experimentOfPlan } from '../../thresholds/plan.js';
import { kinds as labKinds } from '../kinds/index.mjs';
import { boardPanels, panelSeries } from './boards.mjs';
import { chart, chartId, GREEN, BAND, BAND_LINE, PALETTE } from './chart.mjs';
import { cpuPercent } from './resources.mjs';
import { replayRecord, caseSends } from '../judge/sends.mjs';

const ORANGE = '#FF9830';
const ORANGE_BAND = 'rgba(255, 152, 48, 0.16)';
const ORANGE_LINE = 'rgba(255, 152, 48, 0.5)';
const TAIL_MS = 3000;
// A measured series and its range share a colour: the first green, the second orange.
const COLORS = [
  { line: GREEN, band: BAND, edge: BAND_LINE },
  { line: ORANGE, band: ORANGE_BAND, edge: ORANGE_LINE },
];

/** A case's series on its experiment's board: the first panel whose title starts with `title`. */
function caseSeries(run, exp, title, c, window) {
  const p = boardPanels(run.panels, `lab-${exp.name}`).find((x) => x.panel.startsWith(title));
  return p ? panelSeries(p, { ...window, keep: (l) => l.case === c.id }) : null;
}

/** Two band edges as series, and the band between them. */
const bandEdges = (label, hi, lo, color, line) => [
  { label: `${label} (max)`, points: hi, color: line, band: true, fill: color },
  { label: `${label} (min)`, points: lo, color: line, band: true },
];

/** A constant range drawn over [x0, x1]. */
const flat = (x0, x1, v) => [
  [x0, v],
  [x1, v],
];

/** Running total of a per-second rate (approximate: the stores' rate is a windowed average). */
const integrate = (points) => {
  let sum = 0;
  return points.map(([t, v], i) => {
    const dt = i ? (t - points[i - 1][0]) / 1000 : points[1] ? (points[1][0] - t) / 1000 : 1;
    sum += (v || 0) * dt;
    return [t, sum];
  });
};

/** Per-second rate of a running total, between each two of its points. */
const rate = (points) =>
  points.slice(1).map(([t, v], i) => [t, Math.max(0, v - points[i][1]) / ((t - points[i][0]) / 1000 || 1)]);

/** The model's course of a case, replayed from its plan (thresholds/plan.js caseCourse); null if it cannot be. */
function modelCourse(plan, c) {
  try {
    return plan ? caseCourse(plan, c.id) : null;
  } catch {
    return null; // a plan of an experiment this checkout no longer has
  }
}

/**
 * The replay's course of a case over the sends k6 really made (the run's sends file), from the
 * case's start on the wall clock; null where the run kept none for it.
 */
function replayedCourseOf(phase, c, startMs) {
  if (!phase.sends || !phase.plan) return null;
  const record = replayRecord(phase.sends);
  // As many as InfluxDB holds: the judge's replay asks for k6's count, which a page does not read.
  const of = (id) => (record.cases[id]?.length ? caseSends(record, id, record.cases[id].length) : null);
  const own = of(c.id);
  const lead = c.follows ? of(c.follows) : null;
  if (!own || (c.follows && !lead)) return null;
  try {
    return labKinds.limiter.replayedCourse(experimentOfPlan(phase.plan), phase.plan, c, own.times, startMs, {
      clockOffsetMs: record.offsetMs,
      sightings: own.sightings,
      lead,
    });
  } catch {
    return null; // a plan of an experiment this checkout no longer has
  }
}

/**
 * A limiter case's answers so far, 200 and limited, from its board: the 'Answered so far' panel,
 * or integrated from the per-second panels of a board that has none ({ok, limited, integrated}).
 */
function answeredSoFar(run, exp, c, note) {
  const series = caseSeries(run, exp, 'Answered so far', c, exp.window);
  if (series)
    return {
      ok: series.find((s) => s.labels.status === '200')?.points,
      limited: series.find((s) => s.labels.status === String(c.limitedStatus))?.points,
      integrated: false,
    };
  const ok = caseSeries(run, exp, 'Accepted (200) per second', c, exp.window)?.[0]?.points;
  const limited = caseSeries(run, exp, 'Limited (the policy', c, exp.window)?.[0]?.points;
  note.push("Counts integrated from the per-second rates: this run's board has no 'Answered so far' panel.");
  return { ok: ok && integrate(ok), limited: limited && integrate(limited), integrated: true };
}

/** The 200 and limited bands of a course ({tMs, ok: {min, max}, limited: {min, max}}), named `what`. */
function courseBands(what, course, c) {
  const xs = course.tMs.map((t) => t / 1000);
  const pts = (arr) => xs.map((x, i) => [x, arr[i]]);
  return [
    ...bandEdges(`${what} 200`, pts(course.ok.max), pts(course.ok.min), BAND, BAND_LINE),
    ...bandEdges(
      `${what} ${c.limitedStatus}`,
      pts(course.limited.max),
      pts(course.limited.min),
      ORANGE_BAND,
      ORANGE_LINE,
    ),
  ];
}

/**
 * What the answers are drawn against: the model replayed over what k6 sent, else the plan's
 * course over time, else the expected range flat from the case's end (`end`..`last`, in s).
 */
function modelBands(phase, c, { start, end, last }, note) {
  const replayed = replayedCourseOf(phase, c, start);
  if (replayed) {
    note.push(
      'The lines: the model replayed over the requests k6 really sent, when the proxy saw each (the range the case is judged on; one line where the replay leaves nothing to chance).',
    );
    return courseBands('replay', replayed, c);
  }
  const course = c.course ?? modelCourse(phase.plan, c);
  if (course) {
    note.push(
      "The bands: the model's range over time, from the same trials as the plan's ranges (before the tolerance).",
    );
    return courseBands('model', course, c);
  }
  note.push('The band: the expected range at the end of the case (the plan has no course over time).');
  const e = c.expected;
  return [
    ...bandEdges('expected 200', flat(end, last, e.ok.hi), flat(end, last, e.ok.lo), BAND, BAND_LINE),
    ...bandEdges(
      `expected ${c.limitedStatus}`,
      flat(end, last, e.limited.hi),
      flat(end, last, e.limited.lo),
      ORANGE_BAND,
      ORANGE_LINE,
    ),
  ];
}

/**
 * A limiter case: 200s and limited answers so far, in seconds from the case's start, against
 * the model: its band over time where the plan has one (case.course), else the final expected
 * range from the case's end on.
 */
function limiterChart(run, exp, phase, c) {
  const t0 = phase.summary?.setup_data?.t0;
  const note = [];
  const { ok, limited, integrated } = answeredSoFar(run, exp, c, note);
  if (!ok && !limited) return null;
  // The case's start: the scenarios' clock (k6's setup) plus its offset; else the first answer.
  const first = [...(ok || []), ...(limited || [])].filter(([, v]) => v > 0).map(([t]) => t);
  const start = t0 !== undefined ? t0 + c.startMs : Math.min(...first);
  if (!Number.isFinite(start)) return null;
  if (t0 === undefined) note.push("The x axis starts at the case's first answer (the summary has no scenario start).");
  // Until a few seconds after the last answer (queued answers come after the arrivals end).
  const changed = [ok, limited].flatMap((pts) =>
    (pts || []).filter(([, v], i) => i && v !== pts[i - 1][1]).map(([t]) => t),
  );
  const until = Math.max(start + c.durationMs, ...changed) + TAIL_MS;
  const rel = (pts) =>
    (pts || []).filter(([t]) => t >= start - 2000 && t <= until).map(([t, v]) => [Math.round(t - start) / 1000, v]);
  const okPts = rel(ok);
  const limPts = rel(limited);
  // The case ends when its last arrival has had its longest expected wait.
  const end = (c.durationMs + (c.expected.maxMs?.hi ?? 0)) / 1000;
  const last = Math.max(end + 2, ...okPts.map(([x]) => x), ...limPts.map(([x]) => x));
  // What k6 answered so far must end at the run's counts (the chart truth check reads the last point).
  const soFar = (status) =>
    integrated ? {} : { truth: { figure: 'requests', read: 'last' }, labels: { case: c.id, status: String(status) } };
  const out = [
    { label: '200 so far', points: okPts, color: GREEN, area: false, ...soFar(200) },
    { label: `${c.limitedStatus} so far`, points: limPts, color: ORANGE, area: false, ...soFar(c.limitedStatus) },
    ...modelBands(phase, c, { start, end, last }, note),
  ];
  return chart({
    id: chartId('case', c.id),
    title: `${c.name}: answers so far against the model`,
    unit: 'none',
    x: 'rel',
    xLabel: "s from the case's start",
    series: out,
    bands: [
      [2, 3],
      [4, 5],
    ],
    note: note.join(' '),
    ...(integrated ? { noTruth: 'integrated from per-second rates, which the stores average: no count to equal' } : {}),
  });
}

/**
 * A case's series from its board (in the order of `ranges`), each with its constant expected range
 * over the span of the data.
 */
function rangeChart(run, exp, c, { title, label, unit, ranges = [], id = 'case', note, perSecond = false }) {
  const counts = caseSeries(run, exp, title, c, exp.window);
  // A count so far drawn as its rate: answers per second, per step of the store.
  const series = perSecond ? counts?.map((s) => ({ ...s, points: rate(s.points) })) : counts;
  if (!series?.length) return null;
  const xs = series.flatMap((s) => s.points.map(([t]) => t));
  const [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  const out = series.map((s, i) => ({
    label: s.label.replace(c.id, '').trim() || label,
    points: s.points,
    color: COLORS[i % COLORS.length].line,
    area: false,
  }));
  const bands = [];
  ranges.forEach((r, i) => {
    if (r.lo == null || r.hi == null) return;
    bands.push([out.length, out.length + 1]);
    out.push(
      ...bandEdges(
        r.label,
        flat(x0, x1, r.hi),
        flat(x0, x1, r.lo),
        COLORS[i % COLORS.length].band,
        COLORS[i % COLORS.length].edge,
      ),
    );
  });
  const shown = perSecond ? title.replace(/ so far/, ' per second') : title;
  return chart({
    id: chartId(id, c.id),
    title: `${c.name}: ${shown.toLowerCase()}`,
    unit: perSecond ? 'reqps' : unit,
    series: out,
    bands,
    ...(note ? { note } : {}),
  });
}

/** The outcome of a case, by its name. */
const outcomeOf = (exp, c) => exp.outcomes.find((x) => x.case === c.name);

/**
 * A capped case's bottleneck: its CPU (% of a core, from the runner's sampler) against its quota,
 * with the band the lab judges (busyLo..busyHi of the quota).
 */
function bottleneckChart(run, exp, phase, c) {
  const o = outcomeOf(exp, c);
  const b = o?.expected?.bottleneck;
  const quota = o?.measured?.resources?.find((r) => r.service === b?.service)?.capPct;
  const cpu = b && cpuPercent(phase.cpu?.[b.service]);
  if (!cpu?.length || !quota) return null;
  // The constant lines at every sample's time: a time chart does not join over missing points.
  const at = (v) => cpu.map(([t]) => [t, v]);
  return chart({
    id: chartId('bottleneck', c.id),
    title: `${c.name}: ${b.service} (the bottleneck), CPU against its quota`,
    unit: 'percent',
    series: [
      { label: `${b.service} CPU % of a core`, points: cpu, color: GREEN, area: false },
      { label: 'quota', points: at(quota), color: '#F2495C', dash: true, area: false },
      ...bandEdges('judged busy', at(quota * b.busyHi), at(quota * b.busyLo), BAND, BAND_LINE),
    ],
    bands: [[2, 3]],
    note: `The band: ${b.busyLo * 100}-${b.busyHi * 100} % of the quota (${quota} % of a core), judged on the mean over the level; the line: the runner's sampler.`,
  });
}

/**
 * A capacity case compared by CPU per request (at the fixed cost rate, or under wrk's closed
 * load): its own against its references', and the most it may use by each reference's floor.
 * A reference's cost is derived from this case's own outcome (its efficiency against it is
 * theirs over its own).
 */
function costChart(run, exp, phase, c) {
  const o = outcomeOf(exp, c);
  const mine = o?.measured?.costUs;
  const eff = o?.expected?.efficiency;
  if (mine === undefined || !eff) return null;
  const refs = Object.entries(eff)
    .filter(([key]) => typeof o.measured.efficiency?.[key] === 'number')
    .map(([key, e]) => ({ ...e, costUs: o.measured.efficiency[key] * mine }));
  return chart({
    id: chartId('cost', c.id),
    title: `${c.name}: CPU per request against the references`,
    unit: 'µs',
    x: 'runs',
    xLabels: [c.id, ...refs.map((e) => e.case)],
    xLabel: 'case',
    series: [
      {
        label: 'CPU per request (µs)',
        points: [mine, ...refs.map((e) => e.costUs)].map((v, i) => [i, v]),
        color: GREEN,
        line: false,
        dots: true,
        size: 9,
      },
      // A reference only shown beside it (no floor) sets no most.
      ...refs.flatMap((e, i) =>
        e.lo == null
          ? []
          : [
              {
                label: `most ${c.id} may use by ${e.case}'s floor (x${e.lo})`,
                points: [[0, e.costUs / e.lo]],
                color: PALETTE[(i + 1) % PALETTE.length],
                line: false,
                dots: true,
                size: 7,
              },
            ],
      ),
    ],
    note: "CPU seconds of each server's processes over its window, per request answered. A reference's floor is the least efficiency (its CPU per request over this one's) the lab accepts.",
  });
}

const rangeOf = (r, f = (v) => v) =>
  r && r.lo != null ? { lo: f(r.lo), hi: r.hi == null ? null : f(r.hi) } : { lo: null, hi: null };

/**
 * Each kind: keyMeasure(outcome, case) -> {measure, unit, value, lo, hi}; caseCharts(run, exp, phase,
 * case) -> [chart | null].
 */
export const resultKinds = {
  limiter: {
    keyMeasure: (o) => ({ measure: '200 count', unit: 'none', value: o.measured.ok, ...rangeOf(o.expected.ok) }),
    caseCharts: (...a) => [limiterChart(...a)],
  },
  'closed-loop': {
    keyMeasure: (o, c) => {
      const n = o.params?.requests ?? c?.responses;
      const span = o.expected.spanMs;
      return {
        measure: 'responses/s',
        unit: 'reqps',
        value: o.measured.throughput,
        lo: span ? (n * 1000) / span.hi : null,
        hi: span ? (n * 1000) / span.lo : null,
      };
    },
    caseCharts: (run, exp, phase, c) => [
      rangeChart(run, exp, c, {
        id: 'answers',
        title: 'Answers so far, by case and source',
        label: 'answers',
        unit: 'none',
        perSecond: true,
      }),
      rangeChart(run, exp, c, {
        id: 'latency-source',
        title: 'Mean latency (since the case started), by case and source',
        label: 'mean',
        unit: 's',
      }),
      rangeChart(run, exp, c, {
        title: 'Mean and max latency',
        label: 'latency',
        unit: 's',
        ranges: [
          { label: 'expected mean', ...rangeOf(c.expected.meanMs, (v) => v / 1000) },
          { label: 'expected max', ...rangeOf(c.expected.maxMs, (v) => v / 1000) },
        ],
      }),
    ],
  },
  capped: {
    keyMeasure: (o) => ({ measure: 'throughput', unit: 'reqps', value: o.measured.rps, ...rangeOf(o.expected.rps) }),
    caseCharts: (run, exp, phase, c) => [
      rangeChart(run, exp, c, {
        title: 'Throughput per second',
        label: 'throughput',
        unit: 'reqps',
        ranges: [{ label: 'expected throughput', ...rangeOf(c.expected.rps) }],
      }),
      bottleneckChart(run, exp, phase, c),
    ],
  },
  capacity: {
    keyMeasure: (o, c) => {
      const m = o.measured;
      if (m.breakpoint !== undefined)
        return { measure: 'breakpoint', unit: 'reqps', value: m.breakpoint, lo: null, hi: null };
      // A closed run wrk sent: its rate over a reference's beside it, against the floor; a
      // reference's own (judged against nothing) or k6's closed run: its rate, shown.
      const [ref, bound] = Object.entries(o.expected.throughput || {})[0] || [];
      if (ref)
        return {
          measure: `r/s / ${ref}'s`,
          unit: 'none',
          value: m.throughputRatio?.[ref] ?? null,
          lo: bound.lo,
          hi: null,
        };
      if (m.rps !== undefined)
        return {
          measure: 'throughput',
          unit: 'reqps',
          value: m.rps,
          lo: o.expected.requests && c?.durationMs ? o.expected.requests.lo / (c.durationMs / 1000) : null,
          hi: null,
        };
      return { measure: 'requests', unit: 'none', value: m.requests, ...rangeOf(o.expected.requests) };
    },
    caseCharts: (run, exp, phase, c) => [rampChart(exp, c), costChart(run, exp, phase, c)],
  },
};

/** A ramp: what each held step delivered against what it offered, the breakpoint marked. */
function rampChart(exp, c) {
  const o = outcomeOf(exp, c);
  const steps = o?.measured?.steps;
  if (!steps?.length) return null;
  return chart({
    id: chartId('case', c.id),
    title: `${c.name}: delivered against offered, per step`,
    unit: 'reqps',
    x: 'rel',
    xLabel: 'offered (r/s)',
    series: [
      { label: 'offered', points: steps.map((s) => [s.rate, s.rate]), color: BAND_LINE, dash: true, area: false },
      { label: 'delivered', points: steps.map((s) => [s.rate, s.achieved]), color: GREEN, dots: true },
    ],
    note: `Breakpoint: ${o.measured.breakpoint} r/s (the highest step held with every step below it held).`,
  });
}

for (const name of Object.keys(labKinds))
  if (!resultKinds[name]) throw new Error(`lab/results/kinds.mjs: no results side for the kind ${name}`);

/** A kind's results side, or one that charts nothing (an experiment the model no longer has). */
export const resultKind = (name) => resultKinds[name] || { keyMeasure: () => null, caseCharts: () => [] };
