/*
 * A discrete-event simulation of a closed loop through two nginx limiters, a server cache and an
 * application server with a fixed number of workers (seed 000's chain): user (client cache) ->
 * front nginx (limit_req, then proxy_cache) -> back nginx (limit_req) -> application (W workers,
 * a FIFO queue, a think time per resource). Why a simulation: docs/model.md.
 */
import { limitReq } from './limit-req.js';
import { seededRandom, RANGE_TRIALS } from './random.js';

/** A binary heap of events by time, first in first out among equal times. */
function eventQueue() {
  const heap = [];
  let seq = 0;
  const less = (a, b) => a.t < b.t || (a.t === b.t && a.seq < b.seq);
  return {
    get size() {
      return heap.length;
    },
    push(t, fn) {
      heap.push({ t, seq: seq++, fn });
      for (let i = heap.length - 1; i > 0;) {
        const p = (i - 1) >> 1;
        if (!less(heap[i], heap[p])) break;
        [heap[i], heap[p]] = [heap[p], heap[i]];
        i = p;
      }
    },
    pop() {
      const top = heap[0];
      const last = heap.pop();
      if (heap.length) {
        heap[0] = last;
        for (let i = 0; ;) {
          const l = 2 * i + 1;
          const r = l + 1;
          let m = i;
          if (l < heap.length && less(heap[l], heap[m])) m = l;
          if (r < heap.length && less(heap[r], heap[m])) m = r;
          if (m === i) break;
          [heap[i], heap[m]] = [heap[m], heap[i]];
          i = m;
        }
      }
      return top;
    },
  };
}

/**
 * How long a stored response stays fresh, per cache implementation: each cache keeps the clock
 * of its implementation. Neither server cache adds an Age header, so a client keeps what it got
 * from a server cache for a full max-age after it received it.
 */
// The lua cache (lua_shared_dict with an expiry of max-age) and the client cache
// (http-cache-semantics: stale once the resident time reaches max-age) count milliseconds.
const msClock = (storedMs, maxAgeS) => (nowMs) => nowMs - storedMs < maxAgeS * 1000;
const freshness = {
  // nginx proxy_cache stores `valid_sec = ngx_time() + max-age` in whole seconds and serves the
  // entry while `valid_sec >= ngx_time()`: a 3 s lifetime lasts 3 to 4 s.
  proxy_cache: (storedMs, maxAgeS) => (nowMs) => Math.floor(nowMs / 1000) <= Math.floor(storedMs / 1000) + maxAgeS,
  lua: msClock,
  client: msClock,
};

// Time per loopback hop, and the most jitter added to it over the trials: assumed, not measured
// (the kind's provenance says why).
export const HOP_MS = 0.2;
export const LOOP_JITTER_MS = 1;

/**
 * One run of the loop. The limiters are the exact limit_req model (limit-req.js: ms clock, delays
 * included). Everything else is taken as instant (k6's own time, loopback hops): `hopMs` and the
 * jitter trials cover it, and the thresholds' tolerance covers the rest. `config`:
 *   users: [[path, ...], ...]           each user's requests, in order
 *   rampMs                              user i starts at i x rampMs / users (JMeter's ramp-up)
 *   thinkMs                             a user's pause after each answer
 *   resources: {path: {serviceMs, maxAgeS}}
 *   front, back: limit_req policies {rate, burst, delay} or null (direct mode: neither)
 *   serverCache: null | 'proxy_cache' | 'lua';  cacheLock: concurrent misses wait for one fill
 *   clientCache: boolean
 *   retry: null | {attempts, backoffMs}  a 503 is retried after backoffMs x 2^k, up to attempts
 *   workers: the application's concurrency
 *   hopMs: time per loopback hop; phase: sub-ms phase of nginx's clock (0..1)
 * Returns per-request records and totals.
 */
export function runLoop(config, rand = Math.random) {
  const { users, rampMs = 0, hopMs = HOP_MS, jitterMs = 0, phase = 0 } = config;
  const loop = {
    config,
    q: eventQueue(),
    hop: () => hopMs + rand() * jitterMs,
    nginxMs: (t) => Math.floor(t + phase),
    records: [],
    totals: { responses: 0, ok: 0, limited: 0, fromClientCache: 0, serverHits: 0, retries: 0, appServed: 0 },
  };
  const app = application(loop);
  const issue = client(loop, front(loop, back(loop, app)), app);
  users.forEach((_, u) => loop.q.push((u * rampMs) / users.length, (t) => issue(u, 0, t)));
  while (loop.q.size) {
    const e = loop.q.pop();
    e.fn(e.t);
  }
  const { totals } = loop;
  totals.appServed = app.served;
  totals.appServedByPath = app.servedByPath;
  totals.appMaxQueue = app.maxQueue;
  return { records: loop.records, totals };
}

/** The application: `workers` at once, the rest in a FIFO queue, each request its resource's think time. */
function application({ config: { resources, workers }, q }) {
  const app = { busy: 0, queue: [], served: 0, servedByPath: {}, maxQueue: 0 };
  app.request = (t, path, done) => {
    const start = (ts) => {
      app.busy += 1;
      q.push(ts + resources[path].serviceMs, (te) => {
        app.busy -= 1;
        app.served += 1;
        app.servedByPath[path] = (app.servedByPath[path] || 0) + 1;
        if (app.queue.length) app.queue.shift()(te);
        done(te, 200);
      });
    };
    if (app.busy < workers) start(t);
    else {
      app.queue.push(start);
      app.maxQueue = Math.max(app.maxQueue, app.queue.length);
    }
  };
  return app;
}

/** The back nginx: its limiter, then the application. `done(t, status)` is called at the back. */
function back({ config, q, hop, nginxMs }, app) {
  const limiter = config.back && limitReq(config.back);
  return (t, path, done) => {
    if (!limiter) return app.request(t + hop(), path, (te, s) => done(te + hop(), s));
    const r = limiter.offer(nginxMs(t));
    if (!r.ok) return done(t, 503);
    q.push(t + r.delayMs, (td) => app.request(td + hop(), path, (te, s) => done(te + hop(), s)));
  };
}

/** The front nginx: its limiter (limit_req runs before the cache: preaccess phase), then its cache, then the back. */
function front({ config, q, hop, nginxMs, totals }, backRequest) {
  const { resources, serverCache = null, cacheLock = false } = config;
  const limiter = config.front && limitReq(config.front);
  const serverStore = new Map(); // path -> fresh(nowMs)
  const filling = new Map(); // path -> [waiting continuations] (cache lock)
  return (t, path, done) => {
    const afterLimit = (ta) => {
      if (serverCache) {
        const fresh = serverStore.get(path);
        if (fresh && fresh(ta)) {
          totals.serverHits += 1;
          return done(ta, 200, 'server-hit');
        }
        if (cacheLock && filling.has(path))
          return filling.get(path).push((tf, s) => done(tf, s, s === 200 ? 'server-hit' : undefined));
        if (cacheLock) filling.set(path, []);
      }
      backRequest(ta + hop(), path, (tb, s) => {
        const tf = tb + hop();
        if (serverCache && s === 200) serverStore.set(path, freshness[serverCache](tf, resources[path].maxAgeS));
        if (serverCache && cacheLock) {
          const waiting = filling.get(path) || [];
          filling.delete(path);
          for (const w of waiting) w(tf, s);
        }
        done(tf, s, 'upstream');
      });
    };
    if (!limiter) return afterLimit(t);
    const r = limiter.offer(nginxMs(t));
    if (!r.ok) return done(t, 503, 'front-limited');
    if (r.delayMs) q.push(t + r.delayMs, afterLimit);
    else afterLimit(t);
  };
}

/** The users: each goes through its list, asking its client cache first, retrying a 503 if it retries. */
function client({ config, q, hop, records, totals }, frontRequest, app) {
  const { users, thinkMs = 0, resources, front: viaFront, back: viaBack, clientCache = false, retry = null } = config;
  const clientStores = users.map(() => new Map());
  const send =
    viaFront || viaBack ? frontRequest : (ts, p, done) => app.request(ts, p, (te, s) => done(te, s, 'direct'));
  function issue(u, i, t, attempt = 0, firstT = t) {
    const path = users[u][i];
    const next = (tEnd) => {
      if (i + 1 < users[u].length) q.push(tEnd + thinkMs, (tn) => issue(u, i + 1, tn));
    };
    if (clientCache && attempt === 0) {
      const fresh = clientStores[u].get(path);
      if (fresh && fresh(t)) {
        totals.responses += 1;
        totals.ok += 1;
        totals.fromClientCache += 1;
        records.push({ user: u, path, start: t, end: t, status: 200, source: 'client-cache' });
        return next(t);
      }
    }
    send(t + hop(), path, (te, status, source) => {
      const tEnd = te + hop();
      if (status === 503 && retry && attempt < retry.attempts) {
        totals.retries += 1;
        q.push(tEnd + retry.backoffMs * 2 ** attempt, (tr) => issue(u, i, tr, attempt + 1, firstT));
        return;
      }
      if (clientCache && status === 200) clientStores[u].set(path, freshness.client(tEnd, resources[path].maxAgeS));
      totals.responses += 1;
      if (status === 200) totals.ok += 1;
      else totals.limited += 1;
      records.push({ user: u, path, start: firstT, end: tEnd, status, source });
      next(tEnd);
    });
  }
  return issue;
}

/** What the seed's JMeter reports, from one run's records. */
export function summarize({ records, totals }) {
  const first = Math.min(...records.map((r) => r.start));
  const last = Math.max(...records.map((r) => r.end));
  const lat = records.map((r) => r.end - r.start);
  return {
    responses: totals.responses,
    ok: totals.ok,
    limited: totals.limited,
    limitedShare: totals.limited / totals.responses,
    durationMs: last - first,
    throughput: (totals.responses * 1000) / (last - first),
    meanMs: lat.reduce((a, b) => a + b, 0) / lat.length,
    minMs: Math.min(...lat),
    maxMs: Math.max(...lat),
    appServed: totals.appServed,
    fromClientCache: totals.fromClientCache,
    serverHits: totals.serverHits,
    retries: totals.retries,
    // What went over the wire (k6's http_reqs, the proxy's own count): every attempt, and no
    // answer from a client cache.
    sentOk: totals.ok - totals.fromClientCache,
    sentLimited: totals.limited + totals.retries,
    sent: totals.responses - totals.fromClientCache + totals.retries,
  };
}

/**
 * The model's range per figure over `trials` runs with loopback jitter and nginx clock phases
 * (seeded, so the same config always gives the same range). A loop whose users race for a
 * limiter's free slot is chaotic (a millisecond decides who waits 5 s and who gets a 503), so
 * its counts spread wide, and a few trials' range leaves out runs the model itself would give.
 */
export function predictLoop(config, { trials = RANGE_TRIALS, jitterMs = LOOP_JITTER_MS, seed = 'closed-loop' } = {}) {
  const rand = seededRandom(`${seed}:${JSON.stringify(config)}`);
  const acc = {};
  for (let k = 0; k < trials; k += 1) {
    const s = summarize(
      runLoop({ ...config, jitterMs: (jitterMs * k) / Math.max(1, trials - 1), phase: rand() }, rand),
    );
    for (const [key, v] of Object.entries(s)) {
      const a = (acc[key] ||= { min: Infinity, max: -Infinity });
      a.min = Math.min(a.min, v);
      a.max = Math.max(a.max, v);
    }
  }
  return acc;
}
