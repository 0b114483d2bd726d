/*
 * nginx limit_req with several limits on one location (nginx 1.22, ngx_http_limit_req_module.c
 * ngx_http_limit_req_handler, _lookup and _account): every limit is looked up in its order; all
 * but the last only look (their node is held, not charged), the last is charged as it is looked
 * up; the first limit whose bucket is over its burst rejects the request, and then no limit is
 * charged at all; when none rejects, every limit looked at is charged, and the request waits the
 * longest of the delays they give. A limit whose key is empty for the request is skipped.
 *
 * limit_conn beside it (ngx_http_limit_conn_module.c, run after limit_req in the preaccess phase):
 * a request limit_req passes reaches it when its delay is over (it holds no slot while it waits);
 * it is rejected if a limit already counts `conn` requests in progress for its key, else it takes
 * a slot in every limit until its answer is done (the pool's cleanup, after the log). A request
 * limit_req rejects never meets it. It counts requests in progress, so an idle keep-alive
 * connection holds nothing, and each HTTP/2 stream is one.
 */
import { inFlightSlots, heldUntil } from './in-flight.js';

/** What the bucket of `node` holds at `nowMs` if this request were added: nginx's excess, and the ms since its last. */
function drained(z, node, nowMs) {
  // A node only looked at while new has nginx's last = 0, ages ago on its epoch clock: empty.
  if (node.last === null) return { excess: 0, ms: 1 };
  let ms = nowMs - node.last;
  if (ms < -60000) ms = 1;
  else if (ms < 0) ms = 0;
  return { excess: Math.max(0, node.excess - Math.floor((z.rateMilli * ms) / 1000) + 1000), ms };
}

/** The ms a request waits at an excess over the limit's delay. */
const wait = (z, excess) => (excess <= z.delayMilli ? 0 : Math.floor(((excess - z.delayMilli) * 1000) / z.rateMilli));

/**
 * Every live limit looked up in order: {by} of the first whose bucket is over its burst, else
 * {held}: each limit looked at, the last already charged (its excess), the others only held.
 */
function lookUp(live, nowMs) {
  const held = [];
  for (const [n, { z, i, key }] of live.entries()) {
    const last = n === live.length - 1;
    const node = z.nodes.get(key);
    if (!node) {
      // A new key: its node starts empty; only the last limit's starts its clock now, the
      // others' at nginx's 0 (null here), so that charging them later drains them to 0.
      z.nodes.set(key, { excess: 0, last: last ? nowMs : null });
      if (!last) held.push({ z, key, i });
      continue;
    }
    const { excess, ms } = drained(z, node, nowMs);
    if (excess > z.burstMilli) return { by: i };
    if (last) {
      node.excess = excess;
      if (ms) node.last = nowMs;
      held.push({ z, key, charged: excess, i });
    } else {
      held.push({ z, key, i });
    }
  }
  return { held };
}

/**
 * The held limits charged (the ones only looked at, now); the request waits the longest of their
 * delays: {delayMs, by}.
 */
function charge(held, nowMs) {
  let delayMs = 0;
  let by = null;
  for (const h of held) {
    let excess = h.charged;
    if (excess === undefined) {
      const node = h.z.nodes.get(h.key);
      const d = drained(h.z, node, nowMs);
      excess = d.excess;
      if (d.ms) node.last = nowMs;
      node.excess = excess;
    }
    const w = wait(h.z, excess);
    if (w > delayMs) {
      delayMs = w;
      by = h.i ?? null;
    }
  }
  return { delayMs, by };
}

/**
 * `limits`: [{rateMilli (nginx's ctx->rate: r/s * 1000, or r/m * 1000 / 60 by integer division),
 * burst (requests), delay (requests; the burst or more for nodelay)}], in the location's order. With
 * `dryRun` (limit_req_dry_run on) a request the limits reject passes, charged to none, and none
 * waits. `conns`: [{conn}], the limit_conn a request passed meets (one key: the case's), and
 * `connDryRun` (limit_conn_dry_run on: nothing rejected).
 */
export function limitReqChain(limits, { dryRun = false, conns = [], connDryRun = false, tiesHeld = false } = {}) {
  const zones = limits.map((l) => ({ ...l, burstMilli: l.burst * 1000, delayMilli: l.delay * 1000, nodes: new Map() }));
  // Per limit_conn, the requests in progress it counts (`tiesHeld`: one that ends in the
  // millisecond another is judged still counts for it).
  const slots = inFlightSlots(
    conns.map((c) => c.conn),
    tiesHeld,
  );
  return {
    /**
     * Offers one request at nginx's clock `nowMs` with its key per limit (`keys[i]`, '' where the
     * request's key is empty; one key for all when a string); `holdMs`: how long its answer takes
     * once limit_req lets it on (limit_conn's slot), or from `nowMs` where `sinceSeen` (a logged
     * length, any delay in it). Returns {ok, delayMs, by} where `by` is the index of the limit
     * that rejected or delayed it most, or 'conn' for a limit_conn.
     */
    offer(nowMs, keys = 'one key', hold = {}) {
      const r = this.judge(nowMs, keys);
      const req = dryRun ? { ...r, ok: true, delayMs: 0, dry: !r.ok ? 'rejected' : r.delayMs ? 'delayed' : null } : r;
      if (!req.ok || !conns.length) return req;
      const at = nowMs + req.delayMs;
      if (slots.take(at, heldUntil(nowMs, at, hold), connDryRun) >= 0 && !connDryRun)
        return { ok: false, delayMs: req.delayMs, by: 'conn' };
      return req;
    },

    /** What the limits do with one request, dry run or not. */
    judge(nowMs, keys) {
      const keyOf = (i) => (typeof keys === 'string' ? keys : keys[i]);
      const live = zones.map((z, i) => ({ z, i, key: keyOf(i) })).filter((x) => x.key !== '');
      if (!live.length) return { ok: true, delayMs: 0, by: null };
      const looked = lookUp(live, nowMs);
      if (looked.by !== undefined) return { ok: false, delayMs: 0, by: looked.by };
      return { ok: true, ...charge(looked.held, nowMs) };
    },
  };
}

/** A chain's numbers, per limit_req and per limit_conn (the replay's sensitivity moves them). */
limitReqChain.numbers = { limits: { rateMilli: 'whole', burst: 'whole', delay: 'whole' }, conns: { conn: 'whole' } };
