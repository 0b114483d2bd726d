/*
 * json-filter benchmark, k6's side: the same closed load as wrk's (a fixed number of
 * connections posting the sample document, every one relayed), so the two clients' figures for
 * one server stand side by side. Started by `just bench json-filter`, one server at a time.
 */
import http from 'k6/http';

const body = JSON.stringify({ ...JSON.parse(open('./json-filter-sample.json')), relay: true });

export const options = {
  scenarios: {
    closed: { executor: 'constant-vus', vus: Number(__ENV.VUS), duration: __ENV.DURATION, gracefulStop: '5s' },
  },
  discardResponseBodies: true,
  summaryTrendStats: ['avg', 'med', 'p(99)', 'max'],
};

export default function () {
  http.post(__ENV.URL, body, { headers: { 'content-type': 'application/json' }, timeout: '10s' });
}

export function handleSummary(data) {
  return { [__ENV.OUT]: JSON.stringify(data) };
}
