/*
 * A team's haproxy.cfg as the lab runs it: the file as written, with only what must move moved,
 * and what the lab needs to watch it added:
 *   - each frontend's binds on a port of the lab's on 127.0.0.1 (`ports`, by where it listened), a
 *     TLS one with the lab's certificate and what it offers a client as written (ALPN, versions);
 *   - every server at the lab's backend (plain HTTP);
 *   - what the lab does itself left out of global (daemon, chroot, user, pidfile, logs, stats
 *     socket, threads): HAProxy runs in the foreground, as the services' user, in one thread,
 *     logging to the lab, with the open files the machine gives it (no strict-limits);
 *   - per request, a log line of its case, the millisecond HAProxy's rules ran in (its date as
 *     the rules saw it, set before any of the file's rules) and the status it answered: the
 *     sightings the replay reads, and the proxy's own count of each case;
 *   - /healthz on every frontend answered by HAProxy before the file's rules (nothing tracks it:
 *     where the frontend tracks in tcp-request content rules, /healthz is accepted before them);
 *   - a frontend of the lab's on its own port: /healthz for readiness, /metrics from HAProxy's
 *     Prometheus exporter.
 * The knobs' values are written where they stand (a deny's or a flag's limit, the table's periods
 * expire and size, the timeout tarpit, the rate-limit sessions).
 */
import { GLOBAL_OWN, RATE_PERIODS, placeOfBind, quoteWord, tlsOptionsOf } from './read.mjs';
import { labPem } from './cert.mjs';

// When HAProxy's rules ran, in its own millisecond (its date as the rules see it); the bench of
// its model logs the same (lab/bench/haproxy-window.mjs).
export const RULE_MS = 'http-request set-var(txn.lab_rule_ms) date(0,ms)';
const LAB_RULES = [
  // The lab's readiness and warm-up requests are answered before any rule of the file counts them.
  'http-request return status 200 content-type text/plain string ok if { path /healthz }',
  RULE_MS,
  'http-request set-var(txn.lab_case) req.hdr(x-lab-case)',
];
// The frontend of the lab's own (readiness, metrics), apart from the file's.
export const LAB_FRONTEND = 'lab_own';
const LAB_TCP_ACCEPT = 'tcp-request content accept if { path /healthz }';
// The lab's log, and one thread (read.mjs GLOBAL_OWN says why); a global maxconn asks for two
// open files per connection, and where the machine allows fewer, HAProxy starts with what it is
// given instead of exiting (read.mjs FD_WORDS).
const LAB_GLOBAL = ['  log stdout format raw local0', '  nbthread 1', '  no strict-limits'];
// Then the millisecond the stream ended, its log written then, in the same run of its task as its
// tracked entries let it go (src/stream.c process_stream, then stream_free:
// stream_store_counters); last, how it ended (%ts: `P` where a rule denied it, `L` where HAProxy
// answered it itself, as a return does), which says which of its counters counted it.
const LAB_LOG = 'log-format "%[var(txn.lab_case)] %[var(txn.lab_rule_ms)] %ST %f %b %[date(0,ms)] %ts"';
const DROPPED_FRONTEND = new Set(['log-format', 'log', 'capture']);

const line = (ws) => `  ${ws.map(quoteWord).join(' ')}`;

/** A line's words with the knobs placed on it: the limit, the table's period, expire and size, the tarpit's hold. */
function placedWords(l, placed) {
  const here = placed.filter((p) => p.at === l.at);
  if (!here.length) return l.words;
  const w = [...l.words];
  for (const p of here) {
    // The limit ends its test: inline, before the closing brace; in an acl, the line's last word;
    // in a set-var, its int(N).
    // A counter's test (`sc_http_req_rate(0) gt N`) has its limit two words on, wherever the test stands.
    const setInt = w.findIndex((x) => /^int\(\d+\)$/.test(x));
    const counterAt = w.findIndex((x, i) => /^sc\d?_/.test(x) && /^\d+$/.test(w[i + 2] ?? ''));
    if (p.param === 'limit' && /^set-var\(/.test(w[1] ?? '') && setInt > 0) w[setInt] = `int(${p.value})`;
    else if (p.param === 'limit' && counterAt >= 0) w[counterAt + 2] = String(p.value);
    else if (p.param === 'limit') w[w.at(-1) === '}' ? w.length - 2 : w.length - 1] = String(p.value);
    // A period is the rate's in the table's store: http_req_rate(P), gpc0_rate(P), gpc1_rate(P), conn_rate(P).
    const rate = RATE_PERIODS[p.param];
    if (rate) {
      const i = w.indexOf('store') + 1;
      w[i] = w[i].replace(new RegExp(`\\b${rate}\\(\\w+\\)`), `${rate}(${Math.round(p.value * 1000)}ms)`);
    }
    if (p.param === 'expire') w[w.indexOf('expire') + 1] = `${Math.round(p.value * 1000)}ms`;
    if (p.param === 'size') w[w.indexOf('size') + 1] = String(p.value);
    if (p.param === 'tarpit') w[2] = `${Math.round(p.value * 1000)}ms`;
    if (p.param === 'sessions') w[2] = String(p.value);
  }
  return w;
}

/** One section's lines as the lab runs them. */
function sectionLines(sec, { ports, backend, placed, pem }) {
  const out = [];
  const proxying = sec.kind === 'frontend' || sec.kind === 'listen';
  for (const l of sec.lines) {
    const [kw] = l.words;
    if (sec.kind === 'global' && GLOBAL_OWN.has(kw)) continue;
    if (proxying && kw === 'bind') continue;
    if (proxying && DROPPED_FRONTEND.has(kw)) continue;
    if (proxying && kw === 'option' && ['httplog', 'tcplog', 'dontlog-normal', 'logasap'].includes(l.words[1]))
      continue;
    if (kw === 'server') {
      out.push(line(['server', l.words[1], backend]));
      continue;
    }
    out.push(line(placedWords(l, placed)));
  }
  if (!proxying) return out;
  const own = sec.lines
    .filter((l) => l.words[0] === 'bind')
    .map(({ words: w }) => {
      const at = `127.0.0.1:${ports[placeOfBind(w[1])]}`;
      return line(w.includes('ssl') ? ['bind', at, 'ssl', 'crt', pem(), ...tlsOptionsOf(w)] : ['bind', at]);
    });
  // The lab's rules first: when the file's rules ran, and the case, before any of them decides.
  const firstRule = out.findIndex((x) => /^\s+(http-request|tcp-request)/.test(x));
  // A content tracker counts every request, the lab's /healthz too: those skip the section's
  // tcp-request content rules (accept ends them), as its http-request ones answer /healthz first.
  const tcpTracks = sec.lines.some((l) => l.words[0] === 'tcp-request' && l.words[1] === 'content');
  const lab = [
    ...own,
    '  log global',
    // Every request logged, whatever the defaults say (dontlog-normal would keep the 200s out).
    '  no option dontlog-normal',
    `  ${LAB_LOG}`,
    ...(tcpTracks ? [`  ${LAB_TCP_ACCEPT}`] : []),
    ...LAB_RULES.map((r) => `  ${r}`),
  ];
  return firstRule < 0 ? [...out, ...lab] : [...out.slice(0, firstRule), ...lab, ...out.slice(firstRule)];
}

/**
 * The haproxy.cfg the lab runs for `policy` (lab/policy/haproxy/read.mjs's reading): `ports` each
 * bind's port by where it listened, `ownPort` the lab's frontend, `backend` host:port, `placed`
 * the knobs' values where they stand (lab/policy/experiment.mjs), `prefix` the service's folder
 * (where a TLS bind's certificate is made).
 */
export function renderHaproxy(policy, { ports, ownPort, backend, placed = [], prefix }) {
  const pem = () => labPem(prefix);
  const text = [`# ${policy.file}, as the lab runs it (lab/policy/haproxy/render.mjs says what moved)`];
  for (const sec of policy.sections) {
    text.push(`${sec.kind}${sec.name ? ` ${sec.name}` : ''}`);
    if (sec.kind === 'global') text.push(...LAB_GLOBAL);
    text.push(...sectionLines(sec, { ports, backend, placed, pem }));
    text.push('');
  }
  if (!policy.sections.some((s) => s.kind === 'global')) text.unshift('global', ...LAB_GLOBAL, '');
  text.push(
    `frontend ${LAB_FRONTEND}`,
    '  mode http',
    `  bind 127.0.0.1:${ownPort}`,
    '  timeout client 10s',
    // A defaults' accept limit is the file's frontends', not the lab's: 0 is HAProxy's "none"
    // (src/proxy.c proxy_parse_rate_limit; src/listener.c limits only where fe_sps_lim is set).
    '  rate-limit sessions 0',
    '  http-request use-service prometheus-exporter if { path /metrics }',
    '  http-request return status 200 content-type text/plain string ok if { path /healthz }',
    '  http-request return status 404',
    '',
  );
  return `${text.join('\n')}\n`;
}
