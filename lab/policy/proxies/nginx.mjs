/*
 * nginx behind the proxy interface (index.mjs): its config read as nginx reads it (../nginx/),
 * modelled as a chain of limit_req and limit_conn (thresholds/models/limit-req-chain.js), run
 * with the lab's counters and its own limiter clock in the access log.
 */
import { isAbsolute } from 'node:path';
import { nginxPolicy } from '../nginx/policy.mjs';
import { nginxPlan } from '../nginx/plan.mjs';
import { NGINX_HEAD, nginxRows } from '../nginx/table.mjs';
import { renderNginx, changeNotes } from '../nginx/render.mjs';
import { makeFiles } from '../nginx/probe.mjs';
import { placePorts } from '../ports.mjs';
import { fieldsOf } from './seen-line.mjs';
import { nginxFromLimit } from '../nginx/from-limit.mjs';

const places = (policy) => policy.explored.places.map((p) => p.place);
const collectAts = (dirs) => dirs.flatMap((d) => [d.at, ...(d.block ? collectAts(d.block) : [])]);

export default {
  name: 'nginx',
  title: 'nginx',
  // Anything no other proxy claims is read as nginx's: `nginx -t`'s word comes in preflight.
  claims: () => true,
  tool: (tools) => tools.crossplane,
  read: (file, tools, opts) => nginxPolicy(file, tools, opts),
  table: (policy) => [NGINX_HEAD, nginxRows(policy)],
  places,
  scheme: (policy) => (policy.explored.places[0]?.ssl ? 'https' : 'http'),
  targets: nginxPlan,
  changes: changeNotes,
  // The files of the policy's own folder, its includes with it (nginx's stock files come from the
  // installed nginx when it is planned, and are not copied).
  ownFiles: (policy) =>
    [...new Set(collectAts(policy.tree).map((at) => at.replace(/:\d+$/, '')))].filter((f) => !isAbsolute(f)),
  service: {
    file: 'nginx.conf',
    // No official image: the lab's config loads Debian's lua module (its clock and counters).
    noImage:
      "the lab's config of it loads Debian's lua module (libnginx-mod-http-lua) for its clock and counters, which no official nginx image carries",
    render: (policy, view, tools, backend, placed) => {
      // The files its locations serve from disk (nginx named them: ../nginx/explore.mjs).
      makeFiles(view.prefix, policy.explored.files);
      return renderNginx(policy, {
        ports: placePorts(places(policy)),
        metricsPort: view.self.own,
        backend,
        prefix: view.prefix,
        root: view.root,
        python: tools.python,
        version: policy.version,
        placed,
      }).text;
    },
    command: ['nginx', '-p', '{{prefix}}/', '-c', '{{config.conf}}', '-e', 'stderr', '-g', 'daemon off;'],
    validate: ['nginx', '-t', '-q', '-p', '{{prefix}}/', '-c', '{{config.conf}}', '-e', 'stderr'],
    ready: 'http://127.0.0.1:{{self.own}}/healthz',
    metrics: { port: 'own', path: '/metrics' },
    countsLog: null,
  },
  /**
   * One of its metrics' samples as a case's count: the lab's counter per case, location and
   * status. Where a request passes two of its locations (caching's front and back ends), the one
   * the case enters by counts it (by the URI's path: a case's query is not in it), and beyond it
   * the back end's 200s are what the application served; a team's policy (`anyUri`) is one proxy
   * per request, whose URI an error_page or try_files may have changed (/509.html).
   */
  countOf: ({ name, labels }, { limited, entry, anyUri }) => {
    if (name !== 'lab_nginx_requests_total' || !(labels.case in limited)) return null;
    if (anyUri || labels.location.startsWith(entry[labels.case])) return { case: labels.case, status: labels.status };
    return labels.status === '200' ? { case: labels.case, app: true } : null;
  },
  /**
   * A line of its seen.log (`case clock msec request_time status`): the limiter's own monotonic ms
   * clock where the lab's module could read it, else the request's start on its wall clock, in ms;
   * and where the stamp is the limiter's, how long the request then took (`heldMs`) and its
   * `status`. The stamp (rewrite phase) and the request's start read the same
   * cached time, as k6's request arrives in one read; the log is written, and the limit_conn slot
   * given back as its pool is destroyed, in the same tick (ngx_http_free_request), so
   * $request_time, in ms of that cached time, is the slot's hold. Lines of the seeds' configs
   * and of runs before the status was logged have 4 fields and no hold.
   */
  seen: (line) => {
    const f = fieldsOf(line);
    if (f.length !== 4 && f.length !== 5) return null;
    const monotonic = f[1] !== '-';
    const ms = monotonic ? Number(f[1]) : Math.round(Number(f[2]) * 1000) - Math.round(Number(f[3]) * 1000);
    const held = monotonic && f.length === 5 ? { heldMs: Math.round(Number(f[3]) * 1000), status: f[4] } : {};
    return { case: f[0], ms, clock: monotonic ? 'monotonic' : 'wall', limiterClock: monotonic, ...held };
  },
  // The clock resolution its sightings are read at, ms.
  resolutionMs: 1,
  // What it lets through at once: its burst and the one beyond it.
  atOnce: (t) => (t.burst ?? 0) + 1,
  // A team's limit (R r/s, B at once) written as this proxy's closest config (compare-proxies).
  fromLimit: nginxFromLimit,
};
