/*
 * Counts survive the trip: per case and status, what k6 counted (its summary), what the stores
 * hold (Prometheus's k6_http_reqs_total, and the same counter as Prometheus forwarded it to
 * InfluxDB) and, for limiter cases, what the proxy itself counted (each proxy's module reads its
 * own counters: lab/policy/proxies/) must be the same number. A mismatch fails the run.
 *
 * InfluxDB's count is never taken from k6's own points (database k6): InfluxDB keeps one point
 * per series and timestamp, so two http_reqs samples with the same tags in the same nanosecond
 * merge into one, and telling them apart took a tag per VU, which made InfluxDB's series grow
 * with the VUs (issue 21). k6 aggregates the counter it sends Prometheus, whose forwarded value
 * cannot merge: a series' last value is the whole count.
 */
import { okMetric, limitedMetric, alsoMetric, sentMetric } from '../../thresholds/kinds/limiter.js';
import { parsePrometheusText } from '../../k6/lib/prom-text.js';
import { sentByK6 } from '../../thresholds/generator.js';
import { proxies } from '../policy/proxies/index.mjs';
import { CONNECTIONS } from '../policy/proxies/seen-line.mjs';

export { parsePrometheusText };

// How far back a run's last samples are looked for: `just verdict` judges runs made days ago.
export const RUN_LOOKBACK = '30d';

// The row of what the application served (closed-loop plans): k6 has it from the application's
// /counts, Prometheus from scraping its counter, the proxy from the back end's 200s.
const APP = 'app served';

const add = (acc, kase, status, n) => {
  acc[kase] ||= {};
  acc[kase][status] = (acc[kase][status] || 0) + n;
};

/**
 * The proxy's own counts, read from its metrics endpoint before it stops: `byCase` per case and
 * status where its counters name a case, and `own`, per counter it keeps (a router's, a
 * backend's: each proxy's module names it, `ownCounter`) and status, where they do not.
 */
export async function proxyCounts(plan, kind, topology) {
  if (!kind.proxyCounts) return null;
  const out = {};
  const own = {};
  for (const service of new Set(plan.cases.map((c) => c.service))) {
    const s = topology.services[service];
    if (!s.metrics) continue;
    const res = await fetch(`http://127.0.0.1:${s.ports[s.metrics.port]}${s.metrics.path}`, {
      signal: AbortSignal.timeout(5000),
    });
    const samples = parsePrometheusText(await res.text());
    const mine = plan.cases.filter((c) => c.service === service);
    const limited = Object.fromEntries(mine.map((c) => [c.id, String(c.limitedStatus)]));
    // Where each case enters (the proxies' modules say how their counters name a case).
    const entry = Object.fromEntries(mine.map((c) => [c.id, (c.path || '/').split('?')[0]]));
    const ask = { limited, entry, anyUri: Boolean(plan.targetPolicies) };
    for (const sample of samples) {
      const { labels, value } = sample;
      // The application reached directly counts what it answered itself.
      if (sample.name === 'lab_app_requests_total' && labels.case in limited) {
        add(out, labels.case, labels.status, value);
        if (labels.status === '200') add(out, labels.case, APP, value);
      }
      for (const proxy of proxies) {
        const counter = proxy.ownCounter?.(sample);
        if (counter) add(own, counterKey(proxy, counter.where), counter.status, value);
        const counted = proxy.countOf(sample, ask);
        if (counted?.status) add(out, counted.case, counted.status, value);
        // Beyond the case's entry, the back end's 200s are what it got from the application.
        else if (counted?.app && kind.appServed) add(out, counted.case, APP, value);
      }
    }
  }
  return { byCase: out, own, placeOf: {}, lab: {} };
}

/** The name of one of a proxy's own counters, as its rows show it and the log's lines place cases on it. */
const counterKey = (proxy, where) => `${proxy.title} ${where}`;

/**
 * A proxy's own count per case and status from its access log (the lab's log in a team's Envoy:
 * its rate-limit stats count per bucket, not per case), each line read by the proxy's module
 * (`proxy.seen`), added into `into`. Lines of no case (the lab's warm-up and readiness requests) are not
 * a case's; where one of the proxy's own counters counted them too (`ownStatus`, its status there),
 * they are added to `into.lab`, what that counter holds beyond the cases.
 */
export function addLoggedCounts(into, text, cases, proxy) {
  for (const line of text.split('\n')) {
    const s = proxy.seen(line);
    if (!s) continue;
    const mine = cases.has(s.case);
    if (s.where && s.ownStatus && !mine) add(into.lab, counterKey(proxy, s.where), s.ownStatus, 1);
    // The counter of the connections it came on (`accepts`): a request of the lab's own is each
    // VU's first to it, on a connection of its own.
    if (s.accepts && !mine) add(into.lab, counterKey(proxy, s.accepts), CONNECTIONS, 1);
    if (!s.status || !mine) continue;
    add(into.byCase, s.case, String(s.status), 1);
    // Which of its own counters counted the line (`where`, as its ownCounter names it).
    into.placeOf[s.case] ||= {};
    if (s.where) into.placeOf[s.case][String(s.status)] = counterKey(proxy, s.where);
    if (s.accepts) into.placeOf[s.case][CONNECTIONS] = counterKey(proxy, s.accepts);
  }
  return into;
}

/**
 * What k6 counted of `status` among the cases whose requests of that status the proxy's log
 * placed at `where`; `refused` is every status but 200. Null when k6 does not count that status.
 */
function k6At(k6, placeOf, where, status) {
  let n = 0;
  for (const [kase, byStatus] of Object.entries(placeOf)) {
    const k = k6[kase];
    if (!k) continue;
    if (status === 'refused') {
      const refusedThere = ([st, w]) => st !== '200' && st !== CONNECTIONS && w === where;
      if (Object.entries(byStatus).some(refusedThere)) n += k.all - (k['200'] ?? 0);
    } else if (byStatus[status] === where) {
      if (!(status in k)) return null;
      n += k[status];
    }
  }
  return n;
}

/**
 * The rows of the proxy's own counters (a Traefik router's requests per code, an HAProxy
 * backend's 2xx and a frontend's own answers) against what k6 counted of the cases they counted,
 * plus what the proxy logged of the lab's own requests there: the proxy's log says which counter
 * each case's requests went to.
 */
export function ownCounterRows(k6, proxy) {
  const rows = [];
  let agree = true;
  for (const [where, byStatus] of Object.entries(proxy?.own ?? {}))
    for (const [status, counted] of Object.entries(byStatus)) {
      const k6Sent = k6At(k6, proxy.placeOf, where, status);
      const labSent = proxy.lab?.[where]?.[status] ?? 0;
      const sent = k6Sent === null ? null : k6Sent + labSent;
      // A counter nothing went through (the lab's own frontend's) says nothing.
      if (sent === 0 && counted === 0) continue;
      const same = sent === counted;
      if (sent !== null) agree &&= same;
      rows.push([
        `(${where})`,
        status,
        sent === null ? '-' : labSent ? `${k6Sent} + ${labSent} the lab's own` : String(sent),
        '-',
        '-',
        String(counted),
        sent === null ? 'shown' : same ? 'ok' : 'LOST',
      ]);
    }
  return { rows, agree };
}

/** What k6's summary says per case and status (the statuses its thresholds name), and in all. */
export function k6Counts(plan, kind, summary) {
  const m = summary?.metrics || {};
  const n = (name) => m[name]?.values?.count ?? 0;
  const out = {};
  // A case another load generator sent (wrk: lab/run/wrk.mjs) has no k6 count to agree with.
  for (const c of plan.cases.filter(sentByK6)) {
    out[c.id] = { all: n(sentMetric(c)) };
    if (c.limitedStatus) Object.assign(out[c.id], { 200: n(okMetric(c)), [c.limitedStatus]: n(limitedMetric(c)) });
    for (const st of c.alsoStatuses ?? []) out[c.id][st] = n(alsoMetric(c, st));
    // What the application served, as it told k6 (its /counts, read in teardown).
    if (kind.appServed) out[c.id][APP] = n(`lab_app_served{case:${c.id}}`);
    // The connections it opened, where the plan knows them: one per request of a case that opens
    // one each, none for one whose VUs' connections the warm-up opened.
    if (plan.countsConnections) out[c.id][CONNECTIONS] = c.connects ? out[c.id].all : 0;
  }
  return out;
}

async function getJson(url) {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  if (!res.ok) throw new Error(`${url.split('?')[0]}: ${res.status} ${await res.text()}`);
  return res.json();
}

/**
 * What each store holds for one experiment of a run (testid), per case and status; with `app`
 * ({service, sinceMs}), also the application's own counter of 200s as Prometheus scraped it
 * since its stack started (a scrape carries no testid, and the stack is fresh per run).
 * InfluxDB's counts are what Prometheus forwarded to it (forwardedCounts), for every plan
 * whichever outputs k6 streamed to (`streams` is kept for the callers, and no longer decides);
 * without an InfluxDB URL (a verdict from Prometheus alone) `influx` is null, no say.
 */
export async function storeCounts(urls, testid, experiment, _streams = ['influx', 'prometheus'], app = null) {
  const prometheus = {};
  const q = `sum by (case, status) (last_over_time(k6_http_reqs_total{testid="${testid}", experiment="${experiment}"}[${RUN_LOOKBACK}]))`;
  const p = await getJson(`${urls.prometheus}/api/v1/query?query=${encodeURIComponent(q)}`);
  for (const r of p.data.result) add(prometheus, r.metric.case, r.metric.status, Number(r.value[1]));
  if (app) {
    const since = Math.max(1, Math.ceil((Date.now() - app.sinceMs) / 1000));
    const aq = `sum by (case) (last_over_time(lab_app_requests_total{service="${app.service}", status="200"}[${since}s]))`;
    const a = await getJson(`${urls.prometheus}/api/v1/query?query=${encodeURIComponent(aq)}`);
    for (const r of a.data.result) add(prometheus, r.metric.case, APP, Number(r.value[1]));
  }
  if (!urls.influx) return { prometheus, influx: null };
  return { prometheus, influx: await forwardedCounts(urls, testid, experiment, prometheus) };
}

export const COUNTS_HEAD = ['case', 'status', 'k6', 'Prometheus', 'InfluxDB', 'proxy', 'agree'];

/** The nothing-lost row of a run's judged figures: how many it wrote, and how many each store holds. */
export function judgedFiguresRow(figures, held) {
  const same = held.prometheus === figures && held.influx === figures;
  return {
    same,
    row: [
      '(judged figures)',
      'all',
      String(figures),
      String(held.prometheus),
      String(held.influx),
      '-',
      same ? 'ok' : 'LOST',
    ],
  };
}

const FORWARD_WAIT_MS = 15_000;

/**
 * What InfluxDB holds of k6's request counter as Prometheus forwarded it (remote write to
 * InfluxDB's /api/v1/prom/write, stacks/metrics/prometheus.yml): the last value of each series
 * (one per segment and per value of k6's other tags), added up per case and status.
 * Forwarding runs behind by a batch or two, so this waits (at most FORWARD_WAIT_MS) until it
 * holds what Prometheus holds; a count still short after that is what was lost.
 */
export async function forwardedCounts(urls, testid, experiment, prometheus) {
  const q = `SELECT sum("v") FROM (SELECT last("value") AS "v" FROM "k6_http_reqs_total" WHERE "testid"='${testid}' AND "experiment"='${experiment}' GROUP BY *) GROUP BY "case","status"`;
  const deadline = Date.now() + FORWARD_WAIT_MS;
  for (;;) {
    const influx = {};
    const r = await getJson(`${urls.influx}/query?db=${urls.forwarded}&q=${encodeURIComponent(q)}`);
    for (const s of r.results[0].series || []) add(influx, s.tags.case, s.tags.status, s.values[0][1]);
    if (JSON.stringify(sorted(influx)) === JSON.stringify(sorted(prometheus)) || Date.now() > deadline) return influx;
    await new Promise((res) => setTimeout(res, 500));
  }
}
const sorted = (byCase) =>
  Object.keys(byCase)
    .sort()
    .map((k) => [
      k,
      Object.entries(byCase[k])
        .filter(([st]) => st !== APP)
        .sort(),
    ]);

/** Rows case | status | k6 | Prometheus | InfluxDB | proxy | agree, and whether all agree. */
export function countsTable(plan, k6, stores, proxy) {
  const rows = [];
  let agree = true;
  const sum = (byStatus) =>
    Object.entries(byStatus || {})
      .filter(([k]) => k !== APP)
      .reduce((a, [, b]) => a + b, 0);
  for (const c of plan.cases.filter((x) => k6[x.id])) {
    // The connections a case opened are judged on the proxy's own counter of them (ownCounterRows).
    for (const status of Object.keys(k6[c.id]).filter((st) => st !== CONNECTIONS)) {
      // A source that never counts what the application served (InfluxDB) has no say in that row.
      const has = (src) => src && (status !== APP || Object.values(src).some((byStatus) => APP in byStatus));
      const pick = (src) => (has(src) ? (status === 'all' ? sum(src[c.id]) : (src[c.id]?.[status] ?? 0)) : null);
      const figures = [k6[c.id][status], pick(stores.prometheus), pick(stores.influx), pick(proxy)];
      const same = figures.every((f) => f === null || f === figures[0]);
      agree &&= same;
      rows.push([
        `${plan.experiment}/${c.id}`,
        status,
        ...figures.map((f) => (f === null ? '-' : String(f))),
        same ? 'ok' : 'LOST',
      ]);
    }
  }
  return { rows, agree, head: COUNTS_HEAD };
}
