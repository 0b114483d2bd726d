/*
 * The capped kind's load (cdn): each connection asks the load balancer for the page again as
 * soon as the answer is in, counted by the cache status the edge reports. The edges' and
 * origins' own counters, read before and after, give how the balancer spread the requests and
 * how often the edges refilled.
 */
import http from 'k6/http';
import { check } from 'k6';
import { accountingGet } from '../accounting.js';
import { Counter } from 'k6/metrics';
import { parsePrometheusText } from '../prom-text.js';

// Every answer of the page is a 200, from an edge's cache or its origin.
const OK = { 'status is 200': (r) => r.status === 200 };

export default function capped(plan, baseUrls) {
  const answers = new Counter('lab_cdn_answers');
  const originFills = new Counter('lab_origin_fills');
  const edgeRequests = new Counter('lab_edge_requests');
  // One cap level per k6 run: the plan holds the one case.
  const c = plan.cases[0];
  const url = `${baseUrls[c.service]}${c.path}`;
  /** The requests each service has answered for this case, from its own counters. */
  const counted = (service) => {
    // Any location: an origin serves the page as /index.html (its index module's redirect).
    return parsePrometheusText(accountingGet(`${baseUrls[service]}/metrics`, service).body)
      .filter((x) => x.name === 'lab_nginx_requests_total' && x.labels.case === c.id)
      .reduce((a, x) => a + x.value, 0);
  };
  const countAll = () => Object.fromEntries([...plan.roles.edge, ...plan.roles.origin].map((sv) => [sv, counted(sv)]));

  return {
    // The counters before the load.
    setup: () => ({ before: countAll() }),

    hit() {
      const tags = { case: c.id };
      const res = http.get(url, { headers: { 'x-lab-case': c.id }, timeout: '10s', tags });
      answers.add(1, { ...tags, status: String(res.status), cache: res.headers['X-Cache-Status'] || 'none' });
      check(res, OK, tags);
    },

    teardown(data) {
      const after = countAll();
      const delta = (sv) => after[sv] - data.before[sv];
      originFills.add(
        plan.roles.origin.reduce((n, sv) => n + delta(sv), 0),
        { case: c.id },
      );
      for (const edge of plan.roles.edge) edgeRequests.add(delta(edge), { case: c.id, edge });
    },
  };
}
