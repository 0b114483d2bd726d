/*
 * A rate held for exactly `requests` arrivals, as k6's ramping-arrival-rate stages (startRate =
 * target = rate): constant-arrival-rate without its 1 s minimum and its extra iteration at the
 * end. Then a rate of 0 for CATCH_UP_MS: it adds no arrival, but the executor no longer stops at
 * the schedule's end, where a loop running late (k6 short of CPU beside the stack) abandoned the
 * arrivals it had not started yet, uncounted as dropped (k6 v1.8.1,
 * lib/executor/ramping_arrival_rate.go: b400-fill sent 442 of 480 in two segments on a busy
 * machine). It ends once its last arrival has started. k6-safe.
 */
export const CATCH_UP_MS = 5000;

export const heldRateStages = (rate, requests) => [
  { target: rate, duration: `${Math.round(((requests + 0.5) * 1e6) / rate)}us` },
  { target: 0, duration: '0s' },
  { target: 0, duration: `${CATCH_UP_MS}ms` },
];
