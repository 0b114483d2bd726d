/*
 * A Traefik router's rateLimit and inFlightReq, in its middleware chain's order, for one source
 * (pkg/middlewares/ratelimiter, pkg/middlewares/inflightreq on vulcand/oxy connlimit). Each
 * comment says a detail the counts hang on.
 */
import { rateReservation } from './rate-reservation.js';
import { inFlightSlots, heldUntil } from './in-flight.js';

/**
 * `steps`: [{average, periodS, burst} (a rateLimit) | {inFlight: N} (an inFlightReq)], in the
 * chain's order. A request goes down the steps: a rateLimit refuses it or holds it its
 * reservation's delay; an inFlightReq refuses it where N of the source's requests are in
 * progress, else holds a slot until the request's answer has gone back through it. A slot
 * taken before a later refusal is given back then (the refusal returns through it at once).
 */
export function traefikChain({ steps, epochPhaseMs = 0 }) {
  const stages = steps.map((s) =>
    'inFlight' in s ? { slots: inFlightSlots([s.inFlight]) } : { bucket: rateReservation({ ...s, epochPhaseMs }) },
  );
  return {
    /**
     * Offers one request at `nowMs`; `holdMs`: how long its answer takes once let on (from
     * `nowMs`, any delay in it, where `sinceSeen`: a logged length). Returns {ok, delayMs}.
     */
    offer(nowMs, _keys, hold = {}) {
      let at = nowMs;
      // Slots taken so far, each given back when the answer (or a refusal) passes it again.
      const taken = [];
      for (const s of stages) {
        if (s.bucket) {
          const r = s.bucket.offer(at);
          if (!r.ok) return refused(taken, nowMs, at);
          at += r.delayMs;
        } else {
          if (s.slots.take(at, Infinity) >= 0) return refused(taken, nowMs, at);
          taken.push(s.slots);
        }
      }
      for (const slots of taken) slots.giveBack(heldUntil(nowMs, at, hold));
      return { ok: true, delayMs: at - nowMs };
    },
  };
}

/** A refusal at `atMs`: the slots taken before it given back then. */
function refused(taken, nowMs, atMs) {
  for (const slots of taken) slots.giveBack(atMs);
  return { ok: false, delayMs: atMs - nowMs };
}

/** The numbers of a Traefik chain, per step (the replay's sensitivity moves them). */
traefikChain.numbers = { steps: { average: 'whole', periodS: 'real', burst: 'whole', inFlight: 'whole' } };
