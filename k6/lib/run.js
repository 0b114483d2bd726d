/*
 * The one k6 run behind every experiment's script: its plan, its kind's scenarios and
 * thresholds, a health check of every service before the load, the kind's executor
 * (k6/lib/kinds/) for the requests, and the summary files. A script is one line of it.
 */
import http from 'k6/http';
import exec from 'k6/execution';
import { fail } from 'k6';
import { Gauge } from 'k6/metrics';
import { k6Options, k6Plan } from '../../thresholds/k6-options.js';
import { kindOfPlan } from '../../thresholds/plan.js';
import { executors } from './kinds/index.js';
import { summaryFiles } from './summary.js';
import { loadPlan, baseUrls as serviceUrls } from './plan.js';

/** A k6 duration ('1500ms', '2s', '1m30s', '250us') in ms. */
const durationMs = (d) => [...String(d || '0s').matchAll(/([0-9.]+)(us|µs|ms|s|m|h)/g)].reduce((ms, [, n, u]) => ms + Number(n) * { us: 1e-3, µs: 1e-3, ms: 1, s: 1e3, m: 6e4, h: 3.6e6 }[u], 0);

// Once per VU (each VU has its own copy of this module): when its scenario's clock started, less
// the scenario's offset, so that the least over the VUs is when this process's schedule began.
// The runner compares it across execution segments (lab/run/segments.mjs scheduleSkew).
let originNoted = false;

export function experimentRun(experiment) {
  const plan = k6Plan(loadPlan(experiment), __ENV);
  const baseUrls = serviceUrls();
  const executor = executors[kindOfPlan(plan).name](plan, baseUrls);
  const options = k6Options(plan, baseUrls);
  const origin = new Gauge('lab_schedule_origin');
  const offsets = Object.fromEntries(Object.entries(options.scenarios || {}).map(([name, sc]) => [name, durationMs(sc.startTime)]));
  const byId = Object.fromEntries(plan.cases.map((c) => [c.id, c]));
  const services = [...new Set([...plan.cases.map((c) => c.service), ...(plan.accounting ? [plan.accounting.service] : [])])];
  return {
    options,

    // Refuses to start against a stack that is not up; every service answers /healthz without
    // spending a limiter's budget. What the executor's setup returns is every VU's `data`.
    setup() {
      const began = Date.now();
      for (const s of services) {
        const url = `${baseUrls[s]}/healthz`;
        const res = http.get(url, { timeout: '3s', tags: { case: 'setup' } });
        if (res.status < 200 || res.status >= 300) fail(`${s} is not up at ${url} (status ${res.status} ${res.error || ''})`);
      }
      // The epoch time the scenarios' clock starts at (as setup returns): the results pages and
      // the CPU samples line their time axes up with it.
      const data = executor.setup?.() ?? {};
      // setupMs: what setup() cost this process (with segments each runs its own, after the
      // resume: part of the skew between them).
      const t0 = Date.now();
      return { t0, setupMs: t0 - began, ...data };
    },

    // Opens a VU's connections before the load it is part of: a case's '<case>-connect'
    // scenario opens its service's, the 'warmup' scenario every service's.
    warm() {
      const c = byId[exec.scenario.name.replace(/-connect$/, '')];
      for (const s of c ? [c.service] : services) http.get(`${baseUrls[s]}/healthz`, { timeout: '5s' });
    },

    hit: (data) => {
      if (!originNoted) {
        originNoted = true;
        origin.add(exec.scenario.startTime - offsets[exec.scenario.name]);
      }
      return executor.hit(data);
    },
    teardown: (data) => executor.teardown?.(data),
    handleSummary: (data) => summaryFiles(data, plan, __ENV.LAB_RESULTS || 'results'),
  };
}
