/*
 * A team's limit ("R requests a second per client, B of them at once, 429 above") as the nginx
 * config closest to it: limit_req keyed by the client address, its burst the B less the one
 * nginx always lets through, nodelay.
 */

/** {file, text, says} for `limit` {rate, atOnce, status}. */
export function nginxFromLimit({ rate, atOnce, status }) {
  const text = `# ${rate} requests a second per client, ${atOnce} at once, ${status} above (written by ./labw compare-proxies)
worker_processes 1;
events { worker_connections 1024; }
http {
    limit_req_zone $binary_remote_addr zone=per_client:10m rate=${rate}r/s;
    limit_req_status ${status};
    server {
        listen 8080;
        location / {
            limit_req zone=per_client burst=${atOnce - 1} nodelay;
            proxy_pass http://10.0.0.12:8000;
        }
    }
}
`;
  return {
    file: 'nginx.conf',
    text,
    says: [
      `burst=${atOnce - 1}: nginx lets one request through beyond its burst`,
      'its clock is a whole millisecond: a request 1 ms early for its slot is refused',
    ],
  };
}
