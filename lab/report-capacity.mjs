/*
 * Judging a capacity plan (json-filter): per ramp the breakpoint (highest sustained step) and
 * its first step; per closed or open run the error share, throughput and relayed latency floor;
 * per experiment, that the backend received exactly the documents that were to reach it.
 */
import { rampSteps, breakpoint } from '../thresholds/capacity.js';

const pct = (x) => `${(x * 100).toFixed(2)} %`;
const mark = (b) => (b ? 'ok' : 'FAIL');

export function capacityOutcomes(plan, summary, accounting) {
  const metrics = summary?.metrics || {};
  const v = (name, stat, dflt = null) => metrics[name]?.values?.[stat] ?? dflt;
  const rows = [];
  const outcomes = plan.cases.map((c) => {
    const e = c.expected;
    const measured = { relayMinMs: v(`http_req_duration{case:${c.id},route:backend}`, 'min') };
    const checks = { relayMin: measured.relayMinMs !== null && measured.relayMinMs >= e.relayMinMs.lo };
    const caseRows = [];
    if (c.kind === 'ramp') {
      measured.steps = rampSteps(c, metrics);
      measured.breakpoint = breakpoint(measured.steps);
      checks.sustained = measured.breakpoint >= e.sustained.lo;
      const first = measured.steps[0];
      const top = measured.steps.find((s) => s.rate === measured.breakpoint);
      caseRows.push([c.name, 'breakpoint', '-', `>= ${e.sustained.lo} r/s`, `${measured.breakpoint} r/s${top ? ` (p99 ${top.p99?.toFixed(0)} ms)` : ''}`, mark(checks.sustained)]);
      caseRows.push(['', `p99 @${first.rate}`, '-', `< ${e.p99Ms.hi} ms`, first.p99 === null ? '-' : `${first.p99.toFixed(1)} ms`, mark(first.p99 !== null && first.p99 < e.p99Ms.hi)]);
    } else {
      measured.requests = v(`http_reqs{case:${c.id}}`, 'count', 0);
      measured.errorRate = v(`http_req_failed{case:${c.id}}`, 'rate');
      measured.rps = Math.round(measured.requests / (c.durationMs / 1000));
      checks.errors = measured.errorRate !== null && measured.errorRate < e.errorRate.hi;
      checks.requests = measured.requests >= e.requests.lo && measured.requests <= (e.requests.hi ?? Infinity);
      caseRows.push([c.name, 'errors', '-', `< ${pct(e.errorRate.hi)}`, measured.errorRate === null ? '-' : pct(measured.errorRate), mark(checks.errors)]);
      if (c.kind === 'closed') {
        const floor = Math.round(e.requests.lo / (c.durationMs / 1000));
        caseRows.push(['', 'throughput', c.seed ? `${c.seed.krps} k r/s (i3)` : '-', `>= ${floor} r/s`, `${measured.rps} r/s`, mark(checks.requests)]);
      } else {
        caseRows.push(['', 'requests', '-', `${e.requests.lo}`, `${measured.requests}`, mark(checks.requests)]);
      }
    }
    caseRows.push(['', 'relayed min', '-', `>= ${e.relayMinMs.lo} ms`, measured.relayMinMs === null ? '-' : `${measured.relayMinMs.toFixed(1)} ms`, mark(checks.relayMin)]);
    rows.push(...caseRows);
    return { suite: plan.suite, case: c.name, params: { kind: c.kind, factor: plan.factor, policy: plan.policy }, seed: c.seed, expected: e, measured, checks, pass: summary != null && Object.values(checks).every(Boolean) };
  });

  // The filter rule decides which documents reach the backend: the backend's count must match.
  const expected = v('backend_expected', 'count', 0);
  const failed = v('http_req_failed', 'passes', 0); // k6 counts failed requests as "passes" of that rate
  const received = accounting ? accounting.after - accounting.before : null;
  const ok = received !== null && Math.abs(received - expected) <= failed;
  rows.push([`${plan.experiment}/backend`, 'received', '-', failed ? `${expected} +- ${failed}` : `${expected}`, received ?? '-', mark(ok)]);
  outcomes.push({ suite: plan.suite, case: `${plan.experiment}/backend`, params: {}, seed: null, expected: { received: expected, slack: failed }, measured: { received }, checks: { accounting: ok }, pass: ok });
  return { outcomes, rows };
}
