/*
 * Requests in progress per key, at most N each: what nginx's limit_conn counts
 * (ngx_http_limit_conn_module.c: a slot taken when the request passes, given back when it is
 * finalized) and Traefik's inFlightReq (vulcand/oxy connlimit: acquire before the next handler,
 * release when it returns; a source at its amount is answered 429). One key: the case's.
 */

/**
 * Slots for limits of `amounts` requests each. take(atMs, untilMs, always) takes one slot of every
 * limit, given back at `untilMs`, unless one is full at `atMs` (or taken all the same, `always`:
 * a dry run counts what it would reject): returns the index of the first full limit, or -1.
 */
export function inFlightSlots(amounts) {
  let ends = amounts.map(() => []);
  return {
    take(atMs, untilMs, always = false) {
      ends = ends.map((e) => e.filter((end) => end > atMs));
      const full = amounts.findIndex((n, i) => ends[i].length >= n);
      if (full < 0 || always) for (const e of ends) e.push(untilMs);
      return full;
    },
    /** Sets when the slots last taken with no end yet (`untilMs` Infinity) are given back. */
    giveBack(untilMs) {
      for (const e of ends) {
        const i = e.lastIndexOf(Infinity);
        if (i >= 0) e[i] = untilMs;
      }
    },
  };
}
