/*
 * The one k6 run behind every experiment's script: its plan, its kind's scenarios and
 * thresholds, a health check of every service before the load, the kind's executor
 * (k6/lib/kinds/) for the requests, and the summary files. A script is one line of it.
 */
import http from 'k6/http';
import { fail } from 'k6';
import { k6Options, k6Plan } from '../../thresholds/k6-options.js';
import { kindOfPlan } from '../../thresholds/plan.js';
import { executors } from './kinds/index.js';
import { summaryFiles } from './summary.js';
import { loadPlan, baseUrls as serviceUrls } from './plan.js';

export function experimentRun(experiment) {
  const plan = k6Plan(loadPlan(experiment), __ENV);
  const baseUrls = serviceUrls();
  const executor = executors[kindOfPlan(plan).name](plan, baseUrls);
  const services = [...new Set([...plan.cases.map((c) => c.service), ...(plan.accounting ? [plan.accounting.service] : [])])];
  return {
    options: k6Options(plan, baseUrls),

    // Refuses to start against a stack that is not up; every service answers /healthz without
    // spending a limiter's budget. What the executor's setup returns is every VU's `data`.
    setup() {
      for (const s of services) {
        const url = `${baseUrls[s]}/healthz`;
        const res = http.get(url, { timeout: '3s', tags: { case: 'setup' } });
        if (res.status < 200 || res.status >= 300) fail(`${s} is not up at ${url} (status ${res.status} ${res.error || ''})`);
      }
      // The epoch time the scenarios' clock starts at (as setup returns): the results pages and
      // the CPU samples line their time axes up with it.
      const data = executor.setup?.() ?? {};
      return { t0: Date.now(), ...data };
    },

    // Opens a VU's connections before the load it is part of (LAB_WARM_URLS: its scenario's).
    warm() {
      for (const url of __ENV.LAB_WARM_URLS.split(' ')) http.get(url, { timeout: '5s' });
    },

    hit: (data) => executor.hit(data),
    teardown: (data) => executor.teardown?.(data),
    handleSummary: (data) => summaryFiles(data, plan, __ENV.LAB_RESULTS || 'results'),
  };
}
