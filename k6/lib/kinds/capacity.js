/*
 * The capacity kind's requests (json-filter): each POSTs a document that asks to be relayed or
 * not, tagged with its case and whether it goes to the backend. Each step of a ramp gets its own
 * metrics, so the summary says where a server stopped keeping up; the backend's own count per
 * case is read before and after, for the lab to compare with what k6 saw relayed.
 */
import http from 'k6/http';
import exec from 'k6/execution';
import { check } from 'k6';
import { accountingGet } from '../accounting.js';
import { Trend, Counter, Rate } from 'k6/metrics';
import { sentByK6 } from '../../../thresholds/generator.js';

// A filtered or relayed document is answered 204 No Content.
const NO_CONTENT = { 'status is 204': (r) => r.status === 204 };

/**
 * A case's own metrics: the relay route's fate request by request, its steady-state count, and per
 * ramp step its times.
 */
function caseMetrics(c) {
  const counter = (k) => new Counter(`${c.metric}_${k}`);
  const stepMetrics = (r) => ({
    ms: new Trend(`${c.metric}_${r}_ms`, true),
    relayMs: new Trend(`${c.metric}_${r}_relay_ms`, true),
    reqs: new Counter(`${c.metric}_${r}_reqs`),
    failed: new Rate(`${c.metric}_${r}_failed`),
  });
  return {
    relaySent: counter('relay_sent'),
    relayAnswered: counter('relay_answered'),
    relayOk: counter('relay_ok'),
    relayGatewayError: counter('relay_gateway_error'),
    backendReceived: counter('backend_received'),
    steady: c.warmS ? counter('steady_reqs') : null,
    steps: c.kind === 'ramp' ? Object.fromEntries(c.steps.map((r) => [r, stepMetrics(r)])) : null,
  };
}

/** The ramp step a request started `elapsedMs` into its case falls in, once the step's ramp is over; else null. */
function heldStep(c, mine, elapsedMs) {
  if (!mine.steps) return null;
  const period = (c.rampS + c.holdS) * 1000;
  const i = Math.floor(elapsedMs / period);
  return i < c.steps.length && elapsedMs - i * period >= c.rampS * 1000 ? mine.steps[c.steps[i]] : null;
}

/** One answer counted where it belongs: the relay route's fate, the steady state, the step's times. */
function countAnswer(c, mine, { res, ok, toBackend, step, startTime }) {
  if (toBackend && res.status !== 0) {
    mine.relayAnswered.add(1);
    if (ok) mine.relayOk.add(1);
    if (res.status === 502 || res.status === 504) mine.relayGatewayError.add(1);
  }
  if (mine.steady) {
    const ended = Date.now() - startTime;
    if (ended >= c.warmS * 1000 && ended <= c.durationMs) mine.steady.add(1);
  }
  if (step) {
    step.reqs.add(1);
    step.ms.add(res.timings.duration);
    if (toBackend) step.relayMs.add(res.timings.duration);
    step.failed.add(!ok);
  }
}

export default function capacity(plan, baseUrls) {
  // The document the plan names, relative to k6/ (an exported script carries it in the plan).
  const sample = plan.sample ?? JSON.parse(open(import.meta.resolve(`../../${plan.sampleBody}`)));
  const bodies = {
    relay: JSON.stringify({ ...sample, relay: true }),
    filtered: JSON.stringify({ ...sample, relay: false }),
  };
  const backendUrl = `${baseUrls[plan.accounting.service]}${plan.accounting.path}`;
  const byId = Object.fromEntries(plan.cases.map((c) => [c.id, c]));
  // The cases wrk sends (lab/run/wrk.mjs) are not k6's.
  const k6Cases = plan.cases.filter(sentByK6);
  const perCase = Object.fromEntries(k6Cases.map((c) => [c.id, caseMetrics(c)]));

  /** Requests the backend has received, by path (its /stats). */
  const backendPaths = () => accountingGet(backendUrl, "the backend's").json().paths;

  return {
    setup: () => ({ before: backendPaths() }),

    hit() {
      // exec.scenario is built afresh on each read: read once per iteration.
      const { name, iterationInTest: n, startTime } = exec.scenario;
      const c = byId[name];
      const mine = perCase[name];
      // Every (100 / relay_percent)-th document asks to be relayed, spread evenly.
      const relay = Math.floor(((n + 1) * plan.relayPercent) / 100) > Math.floor((n * plan.relayPercent) / 100);
      const toBackend = relay || c.relaysAll;
      const step = heldStep(c, mine, Date.now() - startTime);
      if (toBackend) mine.relaySent.add(1);
      const res = http.post(baseUrls[c.service] + c.path, relay ? bodies.relay : bodies.filtered, {
        headers: { 'content-type': 'application/json' },
        tags: { route: toBackend ? 'backend' : 'filter' },
        timeout: '10s',
      });
      const ok = check(res, NO_CONTENT);
      countAnswer(c, mine, { res, ok, toBackend, step, startTime });
    },

    teardown(data) {
      const after = backendPaths();
      for (const c of k6Cases) perCase[c.id].backendReceived.add((after[c.path] || 0) - (data.before[c.path] || 0));
    },
  };
}
