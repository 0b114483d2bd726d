/*
 * The k6 run of a capped plan (cdn): one cap level per k6 run, as the seed ran wrk once per
 * level against containers restarted with new limits. A closed load: `vus` connections, each
 * asking the load balancer for the page again as soon as the answer is in (k6's constant-vus,
 * wrk's model). Each answer is counted by the cache status the edge reports, and the edges' and
 * origins' own counters are read before and after, so the summary holds how the balancer spread
 * the requests and how often the edges refilled.
 *
 * Under the runner, the plan it wrote holds the one level to run, with the model's throughput
 * once the uncapped level has measured the costs. With k6 alone, CASE picks the level (the
 * first, uncapped, by default); the stack must be up with that level's caps.
 */
import http from 'k6/http';
import { fail } from 'k6';
import { Counter } from 'k6/metrics';
import { summaryFiles } from '../summary.js';
import { loadPlan, baseUrls as serviceUrls } from '../plan.js';
import { countOnWire } from '../wire.js';
import { parsePrometheusText } from '../prom-text.js';

const answers = new Counter('lab_cdn_answers');
const originFills = new Counter('lab_origin_fills');
const edgeRequests = new Counter('lab_edge_requests');

export function cappedRun(experiment) {
  const whole = loadPlan(experiment);
  const wanted = __ENV.CASE || whole.phase || whole.cases[0].id;
  const c = whole.cases.find((x) => x.id === wanted);
  if (!c) throw new Error(`CASE=${wanted}: no such case; this plan has ${whole.cases.map((x) => x.id).join(', ')}`);
  const plan = { ...whole, phase: c.id, cases: [c] };
  const baseUrls = serviceUrls();
  const url = `${baseUrls[c.service]}${c.path}`;
  const e = c.expected;
  const thresholds = {
    [`http_req_failed{case:${c.id}}`]: [`rate<${e.errorRate.hi}`],
    // Every connection was answered at least once; under the runner, a capped level's count
    // is the model's throughput (below).
    [`http_reqs{case:${c.id}}`]: [`count>=${c.vus}`],
    [`lab_origin_fills{case:${c.id}}`]: [`count>=${e.originFills.lo}`, `count<=${e.originFills.hi}`],
  };
  // Round robin reaches every edge in use; whether evenly, the lab judges from these counts.
  for (const edge of whole.roles.edge) thresholds[`lab_edge_requests{case:${c.id},edge:${edge}}`] = ['count>=1'];
  // Known once the uncapped level has measured what a request costs (the runner's plan).
  if (e.requests) thresholds[`http_reqs{case:${c.id}}`] = [`count>=${e.requests.lo}`, `count<=${e.requests.hi}`];

  /** The requests each service has answered for this case, from its own counters. */
  const counted = (service) => {
    const u = `${baseUrls[service]}/metrics`;
    const res = http.get(u, { tags: { case: 'accounting' }, responseType: 'text' });
    if (res.status !== 200) fail(`${u} answered ${res.status} ${res.error || ''}`);
    // Any location: an origin serves the page as /index.html (its index module's redirect).
    return parsePrometheusText(res.body)
      .filter((x) => x.name === 'lab_nginx_requests_total' && x.labels.case === c.id)
      .reduce((a, x) => a + x.value, 0);
  };
  const countAll = () => Object.fromEntries([...whole.roles.edge, ...whole.roles.origin].map((sv) => [sv, counted(sv)]));

  return {
    options: {
      scenarios: {
        [c.id]: { executor: 'constant-vus', vus: c.vus, duration: `${Math.round(c.durationMs)}ms`, gracefulStop: '10s', exec: 'page', tags: { case: c.id } },
      },
      thresholds,
      discardResponseBodies: true,
      summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(99)'],
      setupTimeout: '30s',
    },

    setup() {
      const res = http.get(`${baseUrls[c.service]}/healthz`, { tags: { case: 'setup' }, timeout: '3s' });
      if (res.status !== 200) fail(`${c.service} is not up at ${baseUrls[c.service]} (status ${res.status} ${res.error || ''})`);
      return { before: countAll(), t0: Date.now() };
    },

    page() {
      const tags = { case: c.id };
      const res = http.get(url, { headers: { 'x-lab-case': c.id }, timeout: '10s', tags });
      countOnWire(res, tags);
      answers.add(1, { ...tags, status: String(res.status), cache: res.headers['X-Cache-Status'] || 'none' });
    },

    teardown(data) {
      const after = countAll();
      const delta = (sv) => after[sv] - data.before[sv];
      originFills.add(whole.roles.origin.reduce((n, sv) => n + delta(sv), 0), { case: c.id });
      for (const edge of whole.roles.edge) edgeRequests.add(delta(edge), { case: c.id, edge });
    },

    handleSummary: (data) => summaryFiles(data, plan, __ENV.LAB_RESULTS || 'results'),
  };
}
