/*
 * Turns a plan into k6 options: one open-model scenario per case, tagged with the case, and
 * thresholds that are the plan's expected ranges. Imported by the k6 scripts.
 *
 * The executor is ramping-arrival-rate held flat (startRate = target = rate): it is k6's
 * constant arrival rate without constant-arrival-rate's 1 s minimum and its extra iteration at
 * the end, so the requests are exactly those the model replays (see arrivalTimes).
 */
export function k6Options(plan, baseUrls) {
  const scenarios = {};
  const thresholds = {};
  for (const c of plan.cases) {
    const base = baseUrls[c.service];
    if (!base) throw new Error(`no address for service ${c.service}`);
    scenarios[c.id] = {
      executor: 'ramping-arrival-rate',
      startRate: c.rate,
      timeUnit: '1s',
      stages: [{ target: c.rate, duration: `${Math.round(((c.requests + 0.5) * 1e6) / c.rate)}us` }],
      startTime: `${Math.round(c.startMs)}ms`,
      preAllocatedVUs: c.vus,
      maxVUs: c.vus,
      gracefulStop: `${Math.round(c.graceS * 1000)}ms`,
      exec: 'hit',
      tags: { case: c.id },
      env: { LAB_URL: base + c.path, LAB_CASE: c.id, LAB_TIMEOUT: `${c.timeoutS}s`, LAB_LIMITED: String(c.limitedStatus) },
    };
    Object.assign(thresholds, caseThresholds(c));
  }
  // Every VU makes one request to each proxy's unlimited /healthz before the first case, so no
  // case meets a VU that still has to compile its code and open its connection: cold VUs at a
  // 2000 r/s start were slow enough for k6 to drop or abandon iterations.
  const services = [...new Set(plan.cases.map((c) => c.service))];
  scenarios.warmup = {
    executor: 'per-vu-iterations',
    vus: Math.max(...plan.cases.map((c) => c.vus)),
    iterations: 1,
    maxDuration: `${Math.max(500, plan.leadInMs - 500)}ms`,
    gracefulStop: '0s',
    exec: 'warm',
    tags: { case: 'warmup' },
    env: { LAB_WARM_URLS: services.map((s) => `${baseUrls[s]}/healthz`).join(' ') },
  };
  return {
    scenarios,
    thresholds,
    discardResponseBodies: true,
    summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)'],
    setupTimeout: '30s',
  };
}

/** The thresholds of one case, keyed by sub-metric; the summary reports them under these names. */
export function caseThresholds(c) {
  const e = c.expected;
  const range = (r) => [`count>=${r.lo}`, `count<=${r.hi}`];
  const t = {
    [okMetric(c)]: range(e.ok),
    [limitedMetric(c)]: range(e.limited),
    // k6 itself must send the schedule (within TOLERANCE.sentRel: see there why not exactly).
    [sentMetric(c)]: [`count>=${e.sent.lo}`, `count<=${e.sent.hi}`],
    [`unexpected_status{case:${c.id}}`]: ['count<1'],
    [`dropped_iterations{scenario:${c.id}}`]: ['count<1'],
  };
  t[latencyMetric(c)] = e.maxMs ? [`max>=${e.maxMs.lo}`, `max<=${e.maxMs.hi}`] : [`p(99)<${e.p99Ms.hi}`];
  return t;
}

export const sentMetric = (c) => `http_reqs{case:${c.id}}`;
export const okMetric = (c) => `http_reqs{case:${c.id},status:200}`;
export const limitedMetric = (c) => `http_reqs{case:${c.id},status:${c.limitedStatus}}`;
export const latencyMetric = (c) => `http_req_duration{case:${c.id}}`;

/** A closed-loop case's thresholds (caching): counts of answers, the run's length, latencies. */
export function closedThresholds(c) {
  const e = c.expected;
  const range = (stat, r) => [`${stat}>=${r.lo}`, `${stat}<=${r.hi}`];
  return {
    [`lab_responses{case:${c.id}}`]: range('count', e.responses),
    [`lab_responses{case:${c.id},status:200}`]: range('count', e.ok),
    [`lab_responses{case:${c.id},status:${c.limitedStatus}}`]: range('count', e.limited),
    [`lab_response_time{case:${c.id}}`]: [...range('avg', e.meanMs), ...range('max', e.maxMs)],
    [`lab_case_end{case:${c.id}}`]: range('max', e.spanMs),
    [`lab_app_served{case:${c.id}}`]: range('count', e.appServed),
    // The requests themselves, as the proxy counts them too.
    [okMetric(c)]: range('count', e.sentOk),
    [limitedMetric(c)]: range('count', e.sentLimited),
    [sentMetric(c)]: range('count', e.sent),
    [`unexpected_status{case:${c.id}}`]: ['count<1'],
  };
}
