/*
 * HAProxy's `rate-limit sessions N` on a frontend: how many connections it accepts per second,
 * as HAProxy 2.6 delays the rest (src/listener.c listener_accept, src/proxy.c manage_proxy,
 * include/haproxy/freq_ctr.h). Nothing is refused: a connection over the limit waits in the
 * kernel's accept queue until the listener is resumed. Each comment says a detail the waits hang on.
 */
import { freqCtr } from './freq-ctr.js';

// rate-limit sessions counts over one second (freq_ctr_remain, next_event_delay: MS_TO_TICKS(1000)).
const PERIOD_MS = 1000;
// How long after its last connection the counter reads none: two of its periods (freq_ctr_total
// keeps the previous period's count until the current one ends).
export const FORGET_MS = 2 * PERIOD_MS;

/**
 * The frontend's accept limit at `limit` sessions per second: accept(arrivalMs) gives the tick
 * at which HAProxy accepts a connection that reached the queue at `arrivalMs` (whole ms, in
 * arrival order). The queue is first in, first out: none is accepted before one that came earlier.
 */
export function acceptRate(limit) {
  // fe_sess_per_sec: one event per session, counted as it is accepted (src/session.c
  // conn_complete_session: at once for a plain connection, after its handshake for TLS).
  const sessions = freqCtr(PERIOD_MS);
  // The listener, once limited, sleeps until its proxy's task wakes it (LI_LIMITED).
  let wakeMs = -Infinity;
  let lastMs = -Infinity;
  return {
    accept(arrivalMs) {
      let nowMs = Math.max(arrivalMs, lastMs, wakeMs);
      for (;;) {
        // freq_ctr_remain(): what the sliding second leaves of the limit, in whole sessions.
        const total = sessions.total(nowMs);
        if (Math.floor(total / PERIOD_MS) < limit) break;
        // next_event_delay(): (total - limit x period) / limit ms, at least 1; the proxy's task
        // checks again then, and resumes the listener once the delay reads 0.
        wakeMs = nowMs + Math.max(1, Math.floor((total - limit * PERIOD_MS) / limit));
        nowMs = wakeMs;
      }
      sessions.update(nowMs, 1);
      lastMs = nowMs;
      return nowMs;
    },
  };
}
