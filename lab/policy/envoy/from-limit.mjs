/*
 * A team's limit ("R requests a second per client, B of them at once, 429 above") as the Envoy
 * bootstrap closest to it: a local rate limit's token bucket of B tokens, refilled k tokens every
 * k/R s, k the fewest that make the interval 250 ms or more: Envoy refuses one under 50 ms, and
 * --quick divides it by up to 5.
 */

/** {file, text, says} for `limit` {rate, atOnce, status}. */
export function envoyFromLimit({ rate, atOnce, status }) {
  const perFill = Math.ceil(rate / 4);
  const intervalMs = Math.round((perFill * 1000) / rate);
  const text = `# ${rate} requests a second per client, ${atOnce} at once, ${status} above (written by ./labw compare-proxies)
static_resources:
  listeners:
  - name: api
    address: { socket_address: { address: 0.0.0.0, port_value: 8080 } }
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: api
          route_config:
            virtual_hosts:
            - name: api
              domains: ["*"]
              routes:
              - match: { prefix: "/" }
                route: { cluster: app }
          http_filters:
          - name: envoy.filters.http.local_ratelimit
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit
              stat_prefix: per_client
              status: { code: ${status === 429 ? 'TooManyRequests' : status} }
              token_bucket: { max_tokens: ${atOnce}, tokens_per_fill: ${perFill}, fill_interval: ${intervalMs / 1000}s }
              filter_enabled: { default_value: { numerator: 100, denominator: HUNDRED } }
              filter_enforced: { default_value: { numerator: 100, denominator: HUNDRED } }
          - name: envoy.filters.http.router
            typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router }
  clusters:
  - name: app
    type: STRICT_DNS
    load_assignment: { cluster_name: app, endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: 10.0.0.12, port_value: 8000 } } } }] }] }
`;
  return {
    file: 'envoy.yaml',
    text,
    says: [
      "one bucket for the listener, not one per client: Envoy's local limit has no per-address bucket (the lab's one client makes them the same)",
      `refilled ${perFill} token${perFill > 1 ? 's' : ''} every ${intervalMs} ms, not continuously`,
    ],
  };
}
