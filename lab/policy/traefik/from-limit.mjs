/*
 * A team's limit ("R requests a second per client, B of them at once, 429 above") as the Traefik
 * dynamic config closest to it: a rateLimit of average R a second with a burst of B, keyed by the
 * client address (its default).
 */

import { traefikLimits } from '../../../thresholds/models/rate-reservation.js';

/** {file, text, says} for `limit` {rate, atOnce, status}. */
export function traefikFromLimit({ rate, atOnce, status }) {
  const { maxDelayMs } = traefikLimits({ average: rate, periodS: 1, burst: atOnce });
  const text = `# ${rate} requests a second per client, ${atOnce} at once, 429 above (written by ./labw compare-proxies)
http:
  routers:
    api:
      rule: "PathPrefix(\`/\`)"
      entryPoints: [web]
      service: app
      middlewares: [per-client]
  middlewares:
    per-client:
      rateLimit:
        average: ${rate}
        period: 1s
        burst: ${atOnce}
  services:
    app:
      loadBalancer:
        servers:
          - url: "http://10.0.0.12:8000"
`;
  return {
    file: 'traefik.yml',
    text,
    says: [
      `a request over the rate waits up to ${+maxDelayMs.toFixed(1)} ms for a token before it is refused`,
      ...(status === 429 ? [] : [`answers 429, not ${status}: Traefik's rateLimit has no status of its own`]),
      'a bucket idle 1 to 2 s is dropped and comes back full',
    ],
  };
}
