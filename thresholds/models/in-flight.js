/*
 * Requests in progress per key, at most N each: what nginx's limit_conn counts
 * (ngx_http_limit_conn_module.c: a slot taken when the request passes, given back when it is
 * finalized) and Traefik's inFlightReq (vulcand/oxy connlimit: acquire before the next handler,
 * release when it returns; a source at its amount is answered 429). One key: the case's. HAProxy's
 * conn_cur counts its entry's streams in progress the same way (stick-table-rate.js).
 */

/**
 * The requests in progress on one key: when each ends (Infinity: not known yet), and when the
 * last that did ended. `tiesHeld`: a request ending in the millisecond another arrives still
 * counts for it (else it is let go first).
 */
export function inProgress(tiesHeld = false) {
  let ends = [];
  let endedMs = -Infinity;
  const gone = tiesHeld ? (end, nowMs) => end < nowMs : (end, nowMs) => end <= nowMs;
  return {
    /** How many are in progress at `nowMs`, the ended ones let go. */
    count(nowMs) {
      for (const end of ends) if (gone(end, nowMs)) endedMs = Math.max(endedMs, end);
      ends = ends.filter((end) => !gone(end, nowMs));
      return ends.length;
    },
    /** One more, ending at `untilMs` (Infinity: set later by end). */
    start: (untilMs = Infinity) => ends.push(untilMs),
    /** The last one started with no end yet ends at `untilMs`. */
    end(untilMs) {
      const i = ends.lastIndexOf(Infinity);
      if (i >= 0) ends[i] = untilMs;
    },
    lastEndedMs: () => endedMs,
  };
}

/**
 * Slots for limits of `amounts` requests each (`tiesHeld`: as inProgress's). take(atMs, untilMs,
 * always) takes one slot of every limit, given back at `untilMs`, unless one is full at `atMs` (or
 * taken all the same, `always`: a dry run counts what it would reject): returns the index of the
 * first full limit, or -1.
 */
export function inFlightSlots(amounts, tiesHeld = false) {
  const limits = amounts.map(() => inProgress(tiesHeld));
  return {
    take(atMs, untilMs, always = false) {
      const counts = limits.map((l) => l.count(atMs));
      const full = amounts.findIndex((n, i) => counts[i] >= n);
      if (full < 0 || always) for (const l of limits) l.start(untilMs);
      return full;
    },
    /** Sets when the slots last taken with no end yet (`untilMs` Infinity) are given back. */
    giveBack(untilMs) {
      for (const l of limits) l.end(untilMs);
    },
  };
}

/**
 * When a request let on at `atMs` (after any wait since it was seen at `nowMs`) gives its slot
 * back: `holdMs` after `atMs`, or after `nowMs` where `sinceSeen` (a logged length, the wait in it).
 */
export const heldUntil = (nowMs, atMs, { holdMs = 0, sinceSeen = false } = {}) =>
  sinceSeen ? Math.max(atMs, nowMs + holdMs) : atMs + holdMs;
