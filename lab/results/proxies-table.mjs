/*
 * The table of a compare-proxies run (lab/cli/compare-proxies.mjs): per load step and proxy,
 * what the proxy let through and refused, what its model predicted over the sends k6 made (the
 * replay, which judges the case), its longest answer, and what the limit as stated would have let
 * through over the same sends (shown, not judged: a token bucket of B, refilled at R, full at
 * the step's start).
 */
import { sendsOf } from '../judge/sends.mjs';

export const COMPARE_HEAD = [
  'step',
  'proxy',
  '200 measured',
  '200 model',
  'limited measured',
  'limited model',
  'longest ms',
  'as stated (shown)',
  'pass',
];

/** What a token bucket of `atOnce`, refilled at `rate` r/s and full at the start, lets through of `times` (ms). */
export function statedOk(times, { rate, atOnce }) {
  let tokens = atOnce;
  let last = times[0] ?? 0;
  let ok = 0;
  for (const t of times) {
    tokens = Math.min(atOnce, tokens + ((t - last) * rate) / 1000);
    last = t;
    if (tokens >= 1) {
      tokens -= 1;
      ok += 1;
    }
  }
  return ok;
}

const span = (r) => (r ? (r.lo === r.hi ? String(r.lo) : `${r.lo}..${r.hi}`) : '-');

/** One row: a step of one proxy's run. */
function rowOf(result, run, rate) {
  const o = run.outcomes.find((x) => x.case.endsWith(`-${rate}rps`));
  if (!o)
    return {
      step: rate,
      proxy: run.proxy,
      pass: false,
      cells: [`${rate} r/s`, run.title, 'no case', '', '', '', '', '', 'FAIL'],
    };
  const id = o.case.split('/').pop();
  const factor = o.params.factor ?? 1;
  const times = sendsOf(run.sends)[id] ?? [];
  const stated = statedOk(times, { rate: result.limit.rate * factor, atOnce: result.limit.atOnce });
  const m = o.measured;
  return {
    step: rate,
    proxy: run.proxy,
    runId: run.runId,
    case: o.case,
    sent: m.sent,
    ok: m.ok,
    limited: m.limited,
    stated,
    pass: o.pass,
    cells: [
      `${o.params.rate} r/s x ${o.params.seconds} s (${m.sent} sent)`,
      run.title,
      String(m.ok),
      span(o.expected.ok),
      String(m.limited),
      span(o.expected.limited),
      String(Math.round(m.maxMs ?? 0)),
      String(stated),
      o.pass ? 'ok' : 'FAIL',
    ],
  };
}

/** Every row of a compare result, step by step, the proxies in the lab's order within each. */
export const compareRows = (result) =>
  result.rates.flatMap((rate) => result.runs.map((run) => rowOf(result, run, rate)));
