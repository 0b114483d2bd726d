/*
 * Seed 002: the same web service behind Envoy's local_ratelimit (a 200-token bucket refilled by
 * 20 tokens per second) and behind nginx (20 r/s, burst=200 delay=20), attacked at 400 r/s for
 * 1, 2 and 4 s. Both pass 200 + 20 x seconds requests; Envoy answers the rest at once with 429,
 * nginx holds up to 180 of them for up to 9 s first.
 */
import { provenance as kind } from '../kinds/limiter.js';

const durations = [1, 2, 4];
const proxies = ['envoy', 'nginx'];

export default {
  name: 'envoy-vs-nginx',
  seed: '002',
  kind: 'limiter',
  // --quick beyond x2 asks k6 for 400 r/s x N bursts, and with the stack on the same 2 cores k6
  // then falls behind and leaves part of a burst unsent (measured: docs/knobs.md#quick-runs).
  maxQuick: 2,
  knobs: {
    max_tokens: { default: 200, kind: 'count', doc: 'Envoy token_bucket.max_tokens (also the initial fill)' },
    tokens_per_fill: { default: 20, kind: 'count', doc: 'Envoy token_bucket.tokens_per_fill' },
    fill_interval: {
      default: 1,
      kind: 'seconds',
      doc: 'Envoy token_bucket.fill_interval (s)',
      max: 3600,
      why: 'a spike lasts seconds: an hour-long interval is a typo',
    },
    nginx_rate: { default: 20, kind: 'rate', doc: 'nginx limit_req_zone rate (r/s)' },
    nginx_burst: { default: 200, kind: 'count', doc: 'nginx limit_req burst' },
    nginx_delay: { default: 20, kind: 'count', doc: 'nginx limit_req delay (requests passed without waiting)' },
    status: { default: 429, kind: 'status', doc: 'status of a limited request, both proxies' },
  },
  check(k) {
    if (k.max_tokens < 1 || k.tokens_per_fill < 1)
      throw new Error('knobs envoy-vs-nginx.max_tokens and tokens_per_fill must be >= 1');
    if (k.nginx_delay > k.nginx_burst) throw new Error('knob envoy-vs-nginx.nginx_delay must not exceed nginx_burst');
  },
  /** Checks that only hold after --quick scaling (Envoy refuses fill intervals under 50 ms). */
  checkScaled(k, factor) {
    if (k.fill_interval < 0.05) {
      throw new Error(
        `envoy-vs-nginx.fill_interval becomes ${k.fill_interval * 1000} ms with --quick=${factor}; Envoy's minimum is 50 ms`,
      );
    }
  },
  targets: (k) => [
    {
      id: 'envoy',
      service: 'envoy-vs-nginx-envoy',
      path: '/',
      limitedStatus: k.status,
      policy: {
        kind: 'token_bucket',
        maxTokens: k.max_tokens,
        tokensPerFill: k.tokens_per_fill,
        fillIntervalMs: k.fill_interval * 1000,
      },
    },
    {
      id: 'nginx',
      service: 'envoy-vs-nginx-nginx',
      path: '/',
      limitedStatus: k.status,
      policy: { kind: 'limit_req', rate: k.nginx_rate, burst: k.nginx_burst, delay: k.nginx_delay },
    },
  ],
  suites: {
    smoke: () => [{ name: 'smoke', rate: 2, seconds: 2, targets: proxies }],
    // One burst at a time, so none steals CPU from another; no pause between them, as each case
    // has a fresh bucket (the seed paused 10 s for its one bucket to refill).
    spike: () => proxies.flatMap((p) => durations.map((d) => ({ name: `${d}s`, rate: 400, seconds: d, targets: [p] }))),
  },
  seedFigures: {
    'envoy-1s': { ok: 220, limited: 180, maxS: 0.105 },
    'envoy-2s': { ok: 240, limited: 560, maxS: 0.0215 },
    'envoy-4s': { ok: 280, limited: 1320, maxS: 0.0157 },
    'nginx-1s': { ok: 220, limited: 180, maxS: 8.999 },
    'nginx-2s': { ok: 240, limited: 560, maxS: 9.005 },
    'nginx-4s': { ok: 280, limited: 1320, maxS: 9.005 },
  },
  /**
   * Where each constant comes from: docs/model.md#where-the-constants-come-from. The seed's text
   * shows no envoy.yaml or nginx.conf, so most of the policy is assumed; nothing is fitted.
   */
  provenance: {
    derived: {
      max_tokens: { value: 200, seed: 'sleep 10 # x tokens_per_fill = 200 [token]' },
      status: { value: 429, seed: '429 Too Many Requests' },
      load: { value: { rate: 400, seconds: durations }, seed: 'vegeta attack -rate=400/s -duration=1s, 2s, 4s' },
    },
    fitted: {},
    measured: { ...kind.measured, maxQuick: { value: 2, source: 'docs/knobs.md' } },
    assumed: {
      tokens_per_fill: {
        value: 20,
        why: "the seed's text shows no envoy.yaml. Its 'sleep 10 # x tokens_per_fill = 200' agrees if a fill comes every second; the value is design.md's",
      },
      fill_interval: { value: 1, why: "the seed's text shows no envoy.yaml: design.md's value" },
      nginx_rate: { value: 20, why: "the seed's text shows no nginx.conf: design.md's account of its stack" },
      nginx_burst: { value: 200, why: "the seed's text shows no nginx.conf: design.md's account of its stack" },
      nginx_delay: { value: 20, why: "the seed's text shows no nginx.conf: design.md's account of its stack" },
      ...kind.assumed,
    },
  },
};
