/*
 * What every VU of a plan does, whoever starts k6 (the lab's runner, k6 alone, an exported
 * script): a health check of every service before the load, connections opened before it, the
 * kind's executor for the requests, and what it reads after. k6-safe; no options, no summary.
 */
import http from 'k6/http';
import exec from 'k6/execution';
import { fail } from 'k6';
import { Gauge } from 'k6/metrics';
import { durationMs } from '../../thresholds/k6-duration.js';

// Once per VU (each VU has its own copy of this module): when its scenario's clock started, less
// the scenario's offset, so that the least over the VUs is when this process's schedule began.
// The runner compares it across execution segments (lab/run/segments.mjs scheduleSkew).
let originNoted = false;

/**
 * `plan`: the plan k6 runs; `baseUrls`: per service; `executor`: its kind's
 * (k6/lib/kinds/index.js); `scenarios`: the options' scenarios (their start times).
 */
export function planRun(plan, baseUrls, executor, scenarios) {
  const run = executor(plan, baseUrls);
  const origin = new Gauge('lab_schedule_origin');
  const offsets = Object.fromEntries(
    Object.entries(scenarios || {}).map(([name, sc]) => [name, durationMs(sc.startTime)]),
  );
  const byId = Object.fromEntries(plan.cases.map((c) => [c.id, c]));
  const services = [
    ...new Set([...plan.cases.map((c) => c.service), ...(plan.accounting ? [plan.accounting.service] : [])]),
  ];
  return {
    // Refuses to start against a stack that is not up; every service answers /healthz without
    // spending a limiter's budget. What the executor's setup returns is every VU's `data`.
    setup() {
      const began = Date.now();
      for (const s of services) {
        const url = `${baseUrls[s]}/healthz`;
        const res = http.get(url, { timeout: '3s', tags: { case: 'setup' } });
        // Up is answering: a team's server may answer its /healthz with a redirect first (an `if`
        // on X-Forwarded-Proto in front of every location), which says as much.
        if (res.status < 200 || res.status >= 400)
          fail(`${s} is not up at ${url} (status ${res.status} ${res.error || ''})`);
      }
      const data = run.setup?.() ?? {};
      // The epoch time the scenarios' clock starts at (as setup returns): the results pages and
      // the CPU samples line their time axes up with it. setupMs: what setup() cost this process
      // (with segments each runs its own, after the resume: part of the skew between them).
      const t0 = Date.now();
      return { t0, setupMs: t0 - began, ...data };
    },

    // Opens a VU's connections before the load it is part of: a case's '<case>-connect'
    // scenario opens its service's, the 'warmup' scenario every service's.
    warm() {
      const c = byId[exec.scenario.name.replace(/-connect$/, '')];
      const mine = c ? [c] : plan.cases;
      // Each origin a case sends to (a team's TLS or HTTP/2 listener opens its kind of connection),
      // but a sessions case's, whose requests each open their own. A frontend that accepts few
      // connections a second takes the warm-up's in turn, within the lead-in its plan gives them.
      const origins = new Set(mine.filter((x) => !x.connects).map((x) => x.origin ?? baseUrls[x.service]));
      const timeout = `${Math.max(5, Math.ceil((plan.leadInMs ?? 0) / 1000))}s`;
      for (const o of origins) http.get(`${o}/healthz`, { timeout });
    },

    hit: (data) => {
      if (!originNoted) {
        originNoted = true;
        origin.add(exec.scenario.startTime - offsets[exec.scenario.name]);
      }
      return run.hit(data);
    },
    teardown: (data) => run.teardown?.(data),
  };
}
