/*
 * A rate held for exactly `requests` arrivals, as k6's ramping-arrival-rate stages (startRate =
 * target = rate): constant-arrival-rate without its 1 s minimum and its extra iteration at the
 * end. Then a rate of 0 for CATCH_UP_MS (or a kind's own `catchUpMs`): it adds no arrival, but
 * the executor no longer stops at the schedule's end, where a loop running late (k6 short of CPU
 * beside the stack) abandoned the arrivals it had not started yet, uncounted as dropped (k6
 * v1.8.1, lib/executor/ramping_arrival_rate.go: b400-fill sent 442 of 480 in two segments on a
 * busy machine). It ends once its last arrival has started, but k6 keeps the scenario's VUs for
 * the whole of it when it counts the VUs to start (GetExecutionRequirements). k6-safe.
 */
import { durationMs } from './k6-duration.js';

export const CATCH_UP_MS = 5000;

export const heldRateStages = (rate, requests, catchUpMs = CATCH_UP_MS) => [
  { target: rate, duration: `${Math.round(((requests + 0.5) * 1e6) / rate)}us` },
  { target: 0, duration: '0s' },
  { target: 0, duration: `${catchUpMs}ms` },
];

/** How long k6 holds a scenario of heldRateStages before its graceful stop, in ms. */
export const heldRateSpanMs = (rate, requests, catchUpMs = CATCH_UP_MS) =>
  heldRateStages(rate, requests, catchUpMs).reduce((ms, st) => ms + durationMs(st.duration), 0);

const usOf = (d) => Number(/^(\d+)us$/.exec(d)?.[1] ?? NaN);

/**
 * A scenario of heldRateStages as a k6 user would write it: constant-arrival-rate. Its i-th
 * arrival comes i periods after its start (the held ramp's, i + 1), so it starts one period
 * later and lasts half a period less than its count, and fires the same arrivals. It has no
 * catch-up tail: an arrival k6 is late to start when the duration ends is not sent (and not
 * counted as dropped), which the count of requests sent then shows. `{scenario, leadPeriods: 0}`,
 * or `{why}` where k6's constant-arrival-rate cannot say it.
 */
export function asConstantArrivalRate(sc, startMs) {
  const [held, ...rest] = sc.stages || [];
  const heldUs = usOf(held?.duration);
  if (sc.executor !== 'ramping-arrival-rate' || sc.timeUnit !== '1s' || held.target !== sc.startRate || !(heldUs > 0))
    return { why: 'not a held rate' };
  const rate = sc.startRate;
  const requests = Math.round((heldUs * rate) / 1e6 - 0.5);
  const same = heldRateStages(rate, requests, durationMs(rest[1]?.duration));
  if (
    rest.length !== 2 ||
    held.duration !== same[0].duration ||
    rest.some((s, i) => s.target !== same[i + 1].target || s.duration !== same[i + 1].duration)
  )
    return { why: 'not a held rate' };
  const durationUs = Math.round(((requests - 0.5) * 1e6) / rate);
  if (!Number.isInteger(rate) || durationUs < 1e6)
    return {
      why: `${requests} requests at ${rate} r/s last under 1 s, k6's least for constant-arrival-rate: a ramping-arrival-rate held flat instead`,
    };
  const { executor, stages, startRate, timeUnit, startTime, ...others } = sc;
  const seconds = (us) => `${+(us / 1e6).toFixed(6)}s`;
  const scenario = {
    executor: 'constant-arrival-rate',
    rate,
    timeUnit,
    duration: seconds(durationUs),
    startTime: seconds(Math.round((startMs + 1000 / rate) * 1000)),
    ...others,
  };
  return { scenario, leadPeriods: 0, requests };
}
