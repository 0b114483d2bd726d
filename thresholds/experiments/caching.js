/*
 * Seed 000: does caching rescue an application behind two rate limiters? JMeter users loop
 * through a front nginx (limit_req 100 r/s, burst 200) and a back nginx (10 r/s, burst 50) to
 * an application server with 10 threads, with a server cache, a client cache, both, neither,
 * or straight to the application.
 */
import { seededRandom } from '../models/random.js';
import { provenance as kind } from '../kinds/closed-loop.js';

const RESOURCES = ['hare', 'tortoise', 'snail'];

/** How each mode reaches the application, and what the client does on its side. */
const MODES = {
  none: { target: 'plain' },
  server: { target: 'cached' },
  client: { target: 'plain', clientCache: true },
  both: { target: 'cached', clientCache: true },
  direct: { target: 'app' },
  // Beyond the seed, which recommends a retrying client (Apache HttpClient's) but never ran one.
  retry: { target: 'plain', retry: true },
};

/**
 * The load test's order: every user, every iteration, the three resources shuffled by a seeded
 * generator. The plan records it, so k6 replays the order the model simulated.
 */
export function shuffledOrders(users, iterations, seed) {
  const rand = seededRandom(seed);
  return Array.from({ length: users }, () =>
    Array.from({ length: iterations }, () => {
      const a = [...RESOURCES];
      for (let i = a.length - 1; i > 0; i -= 1) {
        const j = Math.floor(rand() * (i + 1));
        [a[i], a[j]] = [a[j], a[i]];
      }
      return a;
    }).flat(),
  );
}

const sameForAll = (users, list) => Array.from({ length: users }, () => [...list]);

export default {
  name: 'caching',
  seed: '000',
  kind: 'closed-loop',
  // Time cannot be compressed: Cache-Control lifetimes are whole seconds, so a 3 s lifetime /5 is
  // not expressible, and nginx's proxy_cache counts whole seconds too.
  maxQuick: 1,
  knobs: {
    front_rate: { default: 100, kind: 'rate', doc: 'front nginx limit_req rate (r/s)' },
    front_burst: { default: 200, kind: 'count', doc: 'front nginx limit_req burst' },
    back_rate: { default: 10, kind: 'rate', doc: 'back nginx limit_req rate (r/s)' },
    back_burst: { default: 50, kind: 'count', doc: 'back nginx limit_req burst' },
    hare_ms: {
      default: 100,
      kind: 'whole',
      doc: "/hare's think time (ms)",
      max: 10_000,
      why: 'a suite must end in minutes',
    },
    tortoise_ms: {
      default: 2000,
      kind: 'whole',
      doc: "/tortoise's think time (ms)",
      max: 10_000,
      why: 'a suite must end in minutes',
    },
    snail_ms: {
      default: 5000,
      kind: 'whole',
      doc: "/snail's think time (ms)",
      max: 10_000,
      why: 'a suite must end in minutes',
    },
    hare_max_age: {
      default: 3,
      kind: 'count',
      doc: "/hare's Cache-Control max-age (s)",
      max: 3600,
      why: 'longer than any run',
    },
    tortoise_max_age: {
      default: 10,
      kind: 'count',
      doc: "/tortoise's Cache-Control max-age (s)",
      max: 3600,
      why: 'longer than any run',
    },
    snail_max_age: {
      default: 60,
      kind: 'count',
      doc: "/snail's Cache-Control max-age (s)",
      max: 3600,
      why: 'longer than any run',
    },
    // The seed's 10 threads; its own figures fit 4 (provenance.fitted.seed_workers).
    workers: {
      default: 10,
      kind: 'whole',
      doc: 'requests the application serves at once; the rest wait in its queue',
      max: 1000,
      why: 'each is a pending timer, not a thread: more is not a configuration anyone runs',
    },
    server_cache: {
      default: 'proxy_cache',
      kind: 'choice',
      values: ['proxy_cache', 'lua'],
      doc: 'the server cache: nginx proxy_cache, or the lua_shared_dict cache (stacks/caching/lab_cache.lua)',
    },
    cache_lock: {
      default: 'off',
      kind: 'choice',
      values: ['off', 'on'],
      doc: 'concurrent misses wait for one fill (proxy_cache_lock), or all go through',
    },
    // The seed does not state JMeter's ramp-up: fitted (provenance.fitted.ramp_s).
    ramp_s: {
      default: 5,
      kind: 'count',
      doc: "users start one by one over this many seconds (JMeter's ramp-up; see the experiment file for why 5)",
      max: 600,
      why: 'a suite must end in minutes',
    },
    retry_attempts: {
      default: 3,
      kind: 'count',
      doc: 'the retrying client: retries of a 503',
      max: 10,
      why: 'the backoff doubles each time',
    },
    retry_backoff_ms: {
      default: 100,
      kind: 'whole',
      doc: 'the retrying client: wait before the first retry, doubled for each next one (ms)',
      max: 10_000,
      why: 'a suite must end in minutes',
    },
  },
  derived: (k) => ({
    // For the stack's templates: which cache, and the application's --resources argument.
    cache_proxy: k.server_cache === 'proxy_cache',
    cache_lua: k.server_cache === 'lua',
    app_resources: RESOURCES.map((r) => `${r}=${k[`${r}_ms`]}:${k[`${r}_max_age`]}`).join(','),
    resources: {
      hare: { serviceMs: k.hare_ms, maxAgeS: k.hare_max_age },
      tortoise: { serviceMs: k.tortoise_ms, maxAgeS: k.tortoise_max_age },
      snail: { serviceMs: k.snail_ms, maxAgeS: k.snail_max_age },
    },
  }),
  /** Where each mode's requests go: the front nginx with or without the cache, or the app. */
  targets: () => [
    { id: 'plain', service: 'caching-nginx', path: '/plain' },
    { id: 'cached', service: 'caching-nginx', path: '/cached' },
    { id: 'app', service: 'caching-app', path: '' },
  ],
  modes: MODES,
  /** Where k6 reads what the application served, per case (before and after the run). */
  accounting: { service: 'caching-app', path: '/counts' },
  /** What the model runs for a mode: the chain, the caches and the client. */
  loopConfig(k, mode) {
    const m = MODES[mode];
    const viaProxy = m.target !== 'app';
    return {
      front: viaProxy ? { rate: k.front_rate, burst: k.front_burst, delay: 0 } : null,
      back: viaProxy ? { rate: k.back_rate, burst: k.back_burst, delay: 0 } : null,
      serverCache: m.target === 'cached' ? k.server_cache : null,
      cacheLock: k.cache_lock === 'on',
      clientCache: Boolean(m.clientCache),
      retry: m.retry ? { attempts: k.retry_attempts, backoffMs: k.retry_backoff_ms } : null,
      workers: k.workers,
      rampMs: k.ramp_s * 1000,
    };
  },
  /** Cases per suite: a mode, and each user's list of requests. */
  cases: {
    smoke: () =>
      ['none', 'server', 'client', 'direct'].map((mode) => ({
        id: `${mode}-smoke`,
        mode,
        users: sameForAll(2, ['hare', 'hare']),
        rampS: 0,
      })),
    stress: () =>
      Object.keys(MODES).map((mode) => ({
        id: `${mode}-stress`,
        mode,
        users: sameForAll(100, Array(10).fill('hare')),
      })),
    load: () =>
      Object.keys(MODES).map((mode) => ({ id: `${mode}-load`, mode, users: shuffledOrders(10, 10, 'caching-load') })),
  },
  suites: { smoke: true, stress: true, load: true },
  /** The seed's figures: responses/s, share of 503s, latency (ms). */
  seedFigures: {
    'none-stress': { throughput: 23, limitedShare: 0.54 },
    'server-stress': { throughput: 99.3, limitedShare: 0 },
    'client-stress': { throughput: 99.5, limitedShare: 0 },
    'both-stress': { throughput: 193, limitedShare: 0 },
    'direct-stress': { throughput: 39, limitedShare: 0 },
    'none-load': { throughput: 1.4, meanMs: 6874, minMs: 104, maxMs: 19069 },
    'server-load': { throughput: 20, meanMs: 377, minMs: 2, maxMs: 12005 },
    'client-load': { throughput: 9.2, meanMs: 857, minMs: 0, maxMs: 14988 },
    'both-load': { throughput: 16.9, meanMs: 418, minMs: 0, maxMs: 12997 },
  },
  /** Where each constant comes from: docs/model.md#where-the-constants-come-from. */
  provenance: {
    derived: {
      front_rate: { value: 100, seed: 'Front-end rate-limit 100 r/s (200 r/s burst)' },
      front_burst: { value: 200, seed: 'Front-end rate-limit 100 r/s (200 r/s burst)' },
      back_rate: { value: 10, seed: 'Back-end rate limit 10 r/s (50 r/s burst)' },
      back_burst: { value: 50, seed: 'Back-end rate limit 10 r/s (50 r/s burst)' },
      hare_ms: { value: 100, seed: '/hare (0.1s delay, 3s cache-expiry)' },
      hare_max_age: { value: 3, seed: '/hare (0.1s delay, 3s cache-expiry)' },
      tortoise_ms: { value: 2000, seed: '/tortoise (2s delay, 10s cache-expiry)' },
      tortoise_max_age: { value: 10, seed: '/tortoise (2s delay, 10s cache-expiry)' },
      snail_ms: { value: 5000, seed: '/snail (5s delay, 60s cache-expiry)' },
      snail_max_age: { value: 60, seed: '/snail (5s delay, 60s cache-expiry)' },
      workers: { value: 10, seed: 'Application server with 10 threads' },
      stress: {
        value: { users: 100, iterations: 10, path: 'hare' },
        seed: '100 concurrent users, 10 repititions, /hare',
      },
      load: {
        value: { users: 10, iterations: 10, paths: RESOURCES },
        seed: '10 concurrent users, 10 repititions, /tortoise, /hare, /snail in random order',
      },
    },
    fitted: {
      ramp_s: {
        value: 5,
        fittedTo: [
          { case: 'both-stress', figure: 'throughput', seed: 193 },
          { case: 'client-stress', figure: 'throughput', seed: 99.5 },
          { case: 'server-stress', figure: 'throughput', seed: 99.3 },
        ],
        how: "JMeter's ramp-up: with both caches nearly every answer is an instant hit, so 1000 answers at 193 r/s last as long as the users take to start; the other cached figures agree with 5",
      },
      seed_workers: {
        value: 4,
        knob: 'workers',
        fittedTo: [
          { case: 'direct-stress', figure: 'throughput', seed: 39 },
          { case: 'none-load', figure: 'throughput', seed: 1.4 },
        ],
        how: "busy threads by Little's law: 39 r/s x 0.1 s, and 1.4 r/s x 2.37 s (the mean think time). Not the default, which stays the 10 the seed states",
      },
    },
    measured: { ...kind.measured },
    assumed: {
      server_cache: { value: 'proxy_cache', why: 'the seed says server-side caching in nginx, not how' },
      cache_lock: { value: 'off', why: "nginx's default; the seed does not say" },
      retry_attempts: { value: 3, why: 'beyond the seed, which recommends a retrying client but never ran one' },
      retry_backoff_ms: { value: 100, why: 'beyond the seed, which recommends a retrying client but never ran one' },
      ...kind.assumed,
    },
  },
};
