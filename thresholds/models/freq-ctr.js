/*
 * HAProxy's period frequency counter (struct freq_ctr: curr_tick, curr_ctr, prev_ctr), as
 * include/haproxy/freq_ctr.h and src/freq_ctr.c compute it (HAProxy 2.6): what a stick table's
 * http_req_rate(P), conn_rate(P) and gpc_rate(P) hold, and what sc_*_rate() reads. Each comment
 * says a detail the counts hang on. Time is HAProxy's millisecond tick (global_now_ms, whole ms).
 */

/** A tick with its lowest bit cleared: bit 0 of curr_tick is the rotation lock, stored cleared. */
const even = (ms) => ms - (((ms % 2) + 2) % 2);

/**
 * freq_ctr_total() over a counter's state ({fresh, tick, curr, prev}) at `nowMs`: the events of
 * the current and the previous period, the previous one's weighted by the ms of it still inside
 * a sliding window (events x ms), with `pend` events pending; `pend` < 0 asks for the flapping
 * correction at very low rates.
 */
function totalOf({ fresh, tick, curr, prev }, periodMs, nowMs, pend) {
  if (fresh) return pend > 0 ? pend * periodMs : 0;
  let remain = tick + periodMs - nowMs;
  let past = prev;
  let now = curr;
  if (remain < 0) {
    // The current period is over: it is the previous one now, or gone if two have passed.
    remain += periodMs;
    past = remain >= 0 ? now : 0;
    now = 0;
  }
  // Flapping correction at very low rates: one event in the last period reads as 1 whole.
  if (pend < 0 && !now && past <= 1) return past * periodMs;
  return past * remain + (now + Math.max(0, pend)) * periodMs;
}

export function freqCtr(periodMs) {
  // A new stick-table entry is zeroed: curr_tick 0, so its first update is "two periods late".
  let fresh = true;
  let tick = 0;
  let curr = 0;
  let prev = 0;
  return {
    /** update_freq_ctr_period(): counts `inc` events at tick `nowMs`; returns the current period's count. */
    update(nowMs, inc = 1) {
      // Within the current period: only the current counter grows.
      if (!fresh && nowMs - tick < periodMs) {
        curr += inc;
        return curr;
      }
      // Rotation: the period just ended becomes the previous one, and the period's start moves
      // by exactly one period, so periods stay on the grid of the first event's tick...
      prev = curr;
      curr = inc;
      tick += periodMs;
      // ...unless two periods or more have passed: the previous count is dropped and the grid
      // starts again at this event (as for a new entry).
      if (fresh || nowMs - tick >= periodMs) {
        prev = 0;
        tick = nowMs;
      }
      tick = even(tick);
      fresh = false;
      return inc;
    },
    /** freq_ctr_total() at `nowMs` with `pend` events pending (totalOf). */
    total: (nowMs, pend = 0) => totalOf({ fresh, tick, curr, prev }, periodMs, nowMs, pend),
    /**
     * read_freq_ctr_period(): the events of the last period as a sliding window, the previous
     * period's count weighted by the share of it still inside the window, in whole events.
     */
    read(nowMs) {
      return Math.floor(totalOf({ fresh, tick, curr, prev }, periodMs, nowMs, -1) / periodMs);
    },
    /** The counter's state, for a test or a trace. */
    state: () => ({ tick, curr, prev }),
  };
}
