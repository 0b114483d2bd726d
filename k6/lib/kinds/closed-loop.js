/*
 * The closed-loop kind's users (caching): per case one VU per user, started one by one over the
 * ramp-up as JMeter starts its threads, each going through its own list of requests as fast as
 * the answers come back (the list is the plan's: the model simulated that order).
 */
import http from 'k6/http';
import exec from 'k6/execution';
import { check, sleep } from 'k6';
import { accountingGet } from '../accounting.js';
import { statusChecks } from '../checks.js';
import { Counter, Trend } from 'k6/metrics';
import CachePolicy from '../vendor/http-cache-semantics.js';

const lowerCased = (headers) => Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));

/**
 * One request of a user, through its client cache: {status, source}. The cache is a private
 * RFC 9111 cache, built on http-cache-semantics (its freshness rules, not ours); a response it
 * serves sends no request but counts as a response. A retrying client tries again on a 503
 * after a growing backoff.
 */
function fetchThroughCache(c, name, { cache, base, tags, allowed, checks }) {
  const request = { url: `/${name}`, method: 'GET', headers: {} };
  const stored = c.clientCache && cache.get(name);
  if (stored && stored.satisfiesWithoutRevalidation(request)) return { status: 200, source: 'client-cache' };
  let res;
  for (let attempt = 0; ; attempt += 1) {
    res = http.get(base + name, {
      headers: { 'x-lab-case': c.id },
      timeout: `${c.timeoutS}s`,
      tags,
      responseCallback: allowed,
    });
    if (res.status !== 503 || !c.retry || attempt >= c.retry.attempts) break;
    sleep((c.retry.backoffMs * 2 ** attempt) / 1000);
  }
  check(res, checks, tags);
  const source = res.headers['X-Lab-Cache'] === 'HIT' ? 'server-cache' : c.target === 'app' ? 'app' : 'upstream';
  if (c.clientCache && res.status === 200) {
    const policy = new CachePolicy(
      request,
      { status: res.status, headers: lowerCased(res.headers) },
      { shared: false },
    );
    if (policy.storable()) cache.set(name, policy);
  }
  return { status: res.status, source };
}

export default function closedLoop(plan, baseUrls) {
  // Answers as JMeter counted them, one per request a user made, whoever answered it:
  // `lab_responses` counts answers by case, status and source (client-cache, server-cache,
  // upstream, app), `lab_response_time` their latency (and `lab_response_time_by_source` the
  // same, tagged with the source, for the charts), and `lab_case_end` when each came, from
  // the case's start (its maximum is the run's length, so responses/s). A retrying client counts
  // one response per request, after its last attempt; k6's http_reqs counts every attempt, as
  // the proxy does.
  const responses = new Counter('lab_responses');
  const responseTime = new Trend('lab_response_time', true);
  const bySource = new Trend('lab_response_time_by_source', true);
  const caseEnd = new Trend('lab_case_end', true);
  const appServed = new Counter('lab_app_served');
  const unexpected = new Counter('unexpected_status');
  const byId = Object.fromEntries(plan.cases.map((c) => [c.id, c]));
  // The limited status is what the policy asks for: expected, so http_req_failed is what it does not allow.
  const allowed = Object.fromEntries(plan.cases.map((c) => [c.id, http.expectedStatuses(200, c.limitedStatus)]));
  const checks = Object.fromEntries(plan.cases.map((c) => [c.id, statusChecks(c.limitedStatus)]));
  const countsUrl = `${baseUrls[plan.accounting.service]}${plan.accounting.path}`;
  const appCounts = () => accountingGet(countsUrl, "the application's").json();
  const servedFor = (counts, id) => Object.values(counts[id] || {}).reduce((a, b) => a + b, 0);

  return {
    // What the application has served per case before the run.
    setup: () => ({ before: appCounts() }),

    hit() {
      const c = byId[exec.scenario.name];
      // Each VU runs one iteration, so this numbers the users 0..n-1.
      const u = exec.scenario.iterationInTest;
      sleep((u * c.rampMs) / c.users.length / 1000);
      const tags = { case: c.id };
      const user = {
        cache: new Map(),
        base: `${baseUrls[c.service]}${c.path}/`,
        tags,
        allowed: allowed[c.id],
        checks: checks[c.id],
      };
      for (const name of c.users[u]) {
        const started = Date.now();
        const { status, source } = fetchThroughCache(c, name, user);
        const ended = Date.now();
        if (status !== 200 && status !== c.limitedStatus) unexpected.add(1, { ...tags, status: String(status) });
        responses.add(1, { ...tags, status: String(status), source });
        responseTime.add(ended - started, tags);
        bySource.add(ended - started, { ...tags, source });
        caseEnd.add(ended - exec.scenario.startTime, tags);
      }
    },

    teardown(data) {
      const after = appCounts();
      for (const c of plan.cases) appServed.add(servedFor(after, c.id) - servedFor(data.before, c.id), { case: c.id });
    },
  };
}
