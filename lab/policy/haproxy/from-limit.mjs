/*
 * A team's limit ("R requests a second per client, B of them at once, 429 above") as the
 * HAProxy config closest to it: a stick table's sliding window of B/R seconds, denying above B.
 * HAProxy has no bucket: no burst refilled at R, and what it denies counts too.
 */

/** {file, text, says} for `limit` {rate, atOnce, status}. */
export function haproxyFromLimit({ rate, atOnce, status }) {
  const periodMs = Math.round((atOnce / rate) * 1000);
  const text = `# ${rate} requests a second per client, ${atOnce} at once, ${status} above (written by ./labw compare-proxies)
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s

frontend api
    bind :8080
    stick-table type ip size 100k expire ${Math.max(30_000, 2 * periodMs)}ms store http_req_rate(${periodMs}ms)
    http-request track-sc0 src
    http-request deny deny_status ${status} if { sc_http_req_rate(0) gt ${atOnce} }
    default_backend app

backend app
    server app1 10.0.0.12:8000
`;
  return {
    file: 'haproxy.cfg',
    text,
    says: [
      `a window of ${periodMs / 1000} s holding ${atOnce}: no bucket, so no steady ${rate} r/s after a burst`,
      'a denied request counts in the window: a client held above the limit is locked out',
    ],
  };
}
