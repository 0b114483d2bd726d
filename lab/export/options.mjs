/*
 * A plan's k6 options as a k6 user would write them, with why each stands: scenarios with the
 * executor k6 users pick for the shape (a held flat rate as constant-arrival-rate where k6
 * allows it), and per threshold the model figure and the tolerance it came from (each kind's
 * `notes`). The lab's runs keep theirs as run (options.json); `./labw export` writes these.
 */
import { k6Options } from '../../thresholds/k6-options.js';
import { kindOfPlan } from '../../thresholds/plan.js';
import { asConstantArrivalRate } from '../../thresholds/held-rate.js';
import { durationMs } from '../../thresholds/k6-duration.js';

/** Why a scenario k6 runs as it is has its executor: by executor, from the scenario. */
function asWritten(sc) {
  if (sc.exec === 'warm') return "opens every VU's connection (GET /healthz) before the load it is part of";
  if (sc.executor === 'per-vu-iterations')
    return `a closed loop: one VU per user, each through its own list of requests once, as fast as answers come`;
  if (sc.executor === 'constant-vus')
    return `a closed load: ${sc.vus} connections, each asking again as soon as its answer is in`;
  if (sc.executor === 'ramping-arrival-rate') return `a ramp: each stage moves to its arrival rate, then holds it`;
  return `k6's ${sc.executor}`;
}

/**
 * `{scenarios, thresholds, scenarioNotes, thresholdNotes, leadPeriods}` of a plan (a k6
 * process's part of it). `constant`: write held flat rates as constant-arrival-rate (an
 * export), or keep them as the lab runs them (held ramping-arrival-rate with its catch-up tail).
 */
export function exportOptions(plan, baseUrls, { constant = true } = {}) {
  const options = k6Options(plan, baseUrls);
  const kind = kindOfPlan(plan);
  const scenarios = {};
  const scenarioNotes = {};
  const leadPeriods = {};
  for (const [name, sc] of Object.entries(options.scenarios)) {
    const flat = sc.executor === 'ramping-arrival-rate' ? asConstantArrivalRate(sc, durationMs(sc.startTime)) : null;
    if (flat?.scenario && constant) {
      scenarios[name] = flat.scenario;
      leadPeriods[name] = flat.leadPeriods;
      scenarioNotes[name] =
        `${flat.requests} arrivals at ${sc.startRate} r/s, the i-th at startTime + i/${sc.startRate} s: the model's schedule`;
    } else {
      scenarios[name] = sc;
      scenarioNotes[name] = flat?.scenario
        ? `${flat.requests} arrivals at ${sc.startRate} r/s held flat, then 0 r/s for a catch-up: k6 ends a constant-arrival-rate at its duration, so an arrival it is late to start is lost uncounted on a busy machine`
        : flat && flat.why !== 'not a held rate'
          ? flat.why
          : asWritten(sc);
    }
  }
  const thresholdNotes = {};
  for (const c of plan.cases) Object.assign(thresholdNotes, kind.notes?.(c, plan) ?? {});
  const thresholds = { ...options.thresholds };
  for (const id of Object.keys(leadPeriods)) oneArrivalMore(thresholds, thresholdNotes, id);
  return { ...options, scenarios, thresholds, scenarioNotes, thresholdNotes, leadPeriods };
}

/**
 * A constant-arrival-rate may start one arrival past its duration: when k6 runs late at the end,
 * the timer of the next arrival and the end of the duration are ready together, and Go's select
 * picks either (lib/executor/constant_arrival_rate.go). One request more moves any count of the
 * case by at most one, so each count's top gets one more, and its note says why.
 */
function oneArrivalMore(thresholds, notes, id) {
  for (const [metric, exprs] of Object.entries(thresholds)) {
    if (!metric.startsWith(`http_reqs{case:${id}`) || !/[,}]/.test(metric.charAt(`http_reqs{case:${id}`.length)))
      continue;
    const widened = exprs.map((e) => e.replace(/^count<=(\d+)$/, (_, n) => `count<=${Number(n) + 1}`));
    if (widened.every((e, i) => e === exprs[i])) continue;
    thresholds[metric] = widened;
    notes[metric] =
      `${notes[metric] ?? metric}; top +1: constant-arrival-rate may start one arrival past its duration when k6 is late at its end`;
  }
}
