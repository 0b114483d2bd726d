/*
 * The metrics stores, part of the topology (compose profile `metrics`: InfluxDB, Prometheus and
 * process-exporter, natively Debian's). `just metrics up` keeps them running between runs; a
 * `just test` uses them when they are up and otherwise starts them for its run and stops them
 * after. Their data stays in .lab/data/ either way, until `just clean`, and within the retention a
 * team sets (`LAB_METRICS_RETENTION=90d ./labw metrics up`; 30 days unless told):
 * shared stores kept for hundreds of runs stay bounded (issue 21).
 */
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { startStack, stopStack } from '../stack/start-stop.mjs';

export const METRICS_PROFILE = 'metrics';

/** Where k6 writes and where queries go, from the topology's ports. */
export function storeUrls(topology) {
  const port = (name) => topology.services[name].ports.http;
  // k6's influxdb output writes to `database`; Prometheus forwards what it holds to `forwarded`.
  return {
    influx: `http://127.0.0.1:${port('influxdb')}`,
    prometheus: `http://127.0.0.1:${port('prometheus')}`,
    database: 'k6',
    forwarded: 'prometheus',
  };
}

async function answers(url, okStatus) {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
    await res.arrayBuffer();
    return okStatus.includes(res.status);
  } catch {
    return false;
  }
}

/** Are both stores up and answering? */
export async function storesUp(topology) {
  const u = storeUrls(topology);
  return (await answers(`${u.influx}/ping`, [204])) && (await answers(`${u.prometheus}/-/ready`, [200]));
}

export const DEFAULT_RETENTION = '30d';
const HOURS = { h: 1, d: 24, w: 168 };

/**
 * How long both stores keep a run: LAB_METRICS_RETENTION, a whole number of hours, days or weeks
 * (72h, 30d, 12w: what InfluxDB's retention policies and Prometheus's
 * --storage.tsdb.retention.time both read), 30 days unless set.
 */
export function metricsRetention(env = process.env) {
  const r = String(env.LAB_METRICS_RETENTION || DEFAULT_RETENTION).trim();
  if (!/^[1-9][0-9]{0,5}[hdw]$/.test(r))
    throw new Error(`LAB_METRICS_RETENTION='${r}': give a whole number of hours, days or weeks, like 72h, 30d or 12w`);
  return r;
}

export const retentionHours = (r) => Number(r.slice(0, -1)) * HOURS[r.at(-1)];

/** The shard groups InfluxDB itself picks for a retention: 1h under two days, 1d up to six months, 7d beyond. */
export const shardDuration = (r) => (retentionHours(r) < 48 ? '1h' : retentionHours(r) <= 24 * 183 ? '1d' : '7d');

/** What the stores' templates and commands see ({{retention}}). */
export const storesPolicy = (env = process.env) => ({ retention: metricsRetention(env) });

/** One InfluxQL statement by POST; throws with InfluxDB's error. */
async function influxQL(urls, q, db) {
  const body = new URLSearchParams({ q, ...(db ? { db } : {}) });
  const res = await fetch(`${urls.influx}/query`, { method: 'POST', body, signal: AbortSignal.timeout(30_000) });
  const out = await res.json().catch(() => ({}));
  const err = out.error || out.results?.find((x) => x.error)?.error;
  if (!res.ok || err) throw new Error(`InfluxDB: ${q}: ${err || res.status}`);
  return out.results;
}

/**
 * InfluxDB's two databases (k6, which k6's output would otherwise make with a policy that keeps
 * everything, and prometheus, what Prometheus forwards) with their default policy, autogen, set
 * to keep `retention` in shard groups of shardDuration(retention): InfluxDB drops a shard group
 * whole once its end is older than the retention, and its series with it. Idempotent: a store
 * kept from before gets the retention too. Run when the stores start (Prometheus's own comes
 * from its flag).
 */
export async function applyRetention(urls, retention = metricsRetention()) {
  for (const db of [urls.database, urls.forwarded]) {
    await influxQL(urls, `CREATE DATABASE "${db}"`);
    await influxQL(
      urls,
      `ALTER RETENTION POLICY "autogen" ON "${db}" DURATION ${retention} SHARD DURATION ${shardDuration(retention)} DEFAULT`,
    );
  }
}

/** Starts the metrics profile as a stack; a store that cannot start is an error naming it. */
export async function startStores({ root, env, topology, tmpDir, logDir, state, log }) {
  let stack;
  try {
    const policy = storesPolicy(env);
    stack = await startStack({
      root,
      env,
      topology,
      profile: METRICS_PROFILE,
      policy,
      targets: [],
      tmpDir,
      logDir,
      state,
      log,
    });
    await applyRetention(storeUrls(topology), policy.retention);
    return stack;
  } catch (e) {
    if (stack) await stopStack(stack);
    throw new Error(
      `the metrics stores could not start, so no load was sent (or run with --no-metrics):\n${e.message}`,
      { cause: e },
    );
  }
}

/**
 * The stores for one run: the ones already up, or started now and stopped by close().
 * Returns null when the run asked for none.
 */
export async function storesForRun({ root, env, topology, tmp, dir, state, say, wanted }) {
  if (!wanted) return null;
  const urls = storeUrls(topology);
  if (await storesUp(topology)) {
    say(`metrics: streaming to the stores already up (${urls.influx}, ${urls.prometheus})`);
    await untilScraping(urls);
    await withinSeriesBudget(urls, root, say);
    return { urls, close: async () => {} };
  }
  say(
    'metrics: starting InfluxDB, Prometheus, process-exporter and cgroup-exporter for this run (keep them with `./labw metrics up`)',
  );
  const stack = await startStores({
    root,
    env,
    topology,
    tmpDir: join(tmp, 'metrics'),
    logDir: join(dir, 'logs'),
    state,
    log: (m) => say(`  ${m}`),
  });
  try {
    await untilScraping(urls);
    await withinSeriesBudget(urls, root, say);
  } catch (e) {
    await stopStack(stack);
    throw e;
  }
  const close = async () => {
    await untilScrapedSince(urls, Date.now());
    await stopStack(stack);
  };
  return { urls, stack, close };
}

/** When Prometheus last scraped each active target (epoch ms; NaN for never); throws when it does not answer. */
async function lastScrapes(urls) {
  const res = await fetch(`${urls.prometheus}/api/v1/targets?state=active`, { signal: AbortSignal.timeout(1000) });
  return ((await res.json()).data?.activeTargets || []).map((t) => Date.parse(t.lastScrape));
}

/**
 * Prometheus answers /-/ready before it scrapes anything: its discovery hands the static
 * targets to the scrape loops up to 5 s later. A stack that lived only through that gap (a
 * smoke case of 2 s) left one sample or none, and its panels nothing to show. So a run starts
 * its load only once the scrape loops run: some target has been scraped.
 */
export async function untilScraping(urls, { timeoutMs = 20_000 } = {}) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      if ((await lastScrapes(urls)).some((ms) => ms > 0)) return;
    } catch {
      // not answering yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(
    `Prometheus at ${urls.prometheus} scraped nothing within ${timeoutMs / 1000} s of starting, so no load was sent`,
  );
}

/**
 * Waits (at most `timeoutMs`) until Prometheus has scraped every target once since `sinceMs`. A
 * target whose stack has stopped then fails a scrape, and Prometheus marks its series stale; a
 * Prometheus stopped first writes no such marker, and for five minutes the next run's queries
 * still see the stopped proxy's last counts under the same labels (a proxy's counters carry no
 * testid), as if its new process had counted them.
 */
export async function untilScrapedSince(urls, sinceMs, { timeoutMs = 5000 } = {}) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      if ((await lastScrapes(urls)).every((ms) => ms >= sinceMs)) return true;
    } catch {
      return false; // not answering: nothing to wait for
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

/**
 * k6's arguments and environment to stream a plan's run to its stores, tagged. `streams` is
 * the plan kind's: k6's influxdb output writes every sample, fine for the limiter experiments
 * (hundreds of r/s), but at the capacity experiments' thousands of r/s it took the CPU the load
 * needed on these 2 cores (measured: docs/metrics-and-dashboards.md). Those go to Prometheus
 * only, which gets k6's aggregated series; so do the capped ones (cdn), whose uncapped level
 * runs thousands of r/s for a minute.
 */
export function k6Outputs(urls, { testid, plan, streams }) {
  return {
    args: [
      ...(streams.includes('influx') ? ['--out', `influxdb=${urls.influx}/${urls.database}`] : []),
      '--out',
      'experimental-prometheus-rw',
      '--tag',
      `testid=${testid}`,
      '--tag',
      `experiment=${plan.experiment}`,
      '--tag',
      `suite=${plan.suite}`,
    ],
    env: {
      K6_PROMETHEUS_RW_SERVER_URL: `${urls.prometheus}/api/v1/write`,
      // What the dashboards show per case (k6's default is p(99) alone).
      K6_PROMETHEUS_RW_TREND_STATS: 'p(95),p(99),min,max,avg,med,count',
      K6_PROMETHEUS_RW_PUSH_INTERVAL: '1s',
    },
  };
}

/** max-series-per-database as stacks/metrics/influxdb.conf sets it (0: none). */
export function seriesBudget(root) {
  const m = /^\s*max-series-per-database\s*=\s*([0-9_]+)/m.exec(
    readFileSync(join(root, 'stacks', 'metrics', 'influxdb.conf'), 'utf8'),
  );
  return m ? Number(m[1].replace(/_/g, '')) : 0;
}

/** Series per InfluxDB database, as the index counts them (/debug/vars). */
export async function influxSeries(urls) {
  const res = await fetch(`${urls.influx}/debug/vars`, { signal: AbortSignal.timeout(10_000) });
  const vars = await res.json();
  const out = {};
  for (const v of Object.values(vars))
    if (v?.name === 'database' && v.tags?.database && !v.tags.database.startsWith('_'))
      out[v.tags.database] = v.values.numSeries;
  return out;
}

// Under this share of the budget a run says nothing; above it, it says how close the stores are.
const BUDGET_WARN = 0.9;

/**
 * Before any load: a database at its series budget fails the run, naming the limit. InfluxDB 1.x
 * enforces max-series-per-database with its in-memory index only: with tsi1 it takes every
 * series (influxdb#8196, and seen here: 8 series written under a limit of 5), so the lab holds
 * the stores to it, before a run rather than by losing its samples.
 */
export async function withinSeriesBudget(urls, root, say) {
  const budget = seriesBudget(root);
  if (!budget) return;
  let series;
  try {
    series = await influxSeries(urls);
  } catch (e) {
    say(`metrics: could not read InfluxDB's series count (${e.message}); the series budget is not checked`);
    return;
  }
  for (const [db, n] of Object.entries(series)) {
    const fix = `shorten the retention (LAB_METRICS_RETENTION, now ${metricsRetention()}; ./labw metrics up --retention=...) or raise max-series-per-database in stacks/metrics/influxdb.conf (sizing: stacks/metrics/README.md)`;
    if (n >= budget)
      throw new Error(
        `InfluxDB database ${db} holds ${n} series, at its limit max-series-per-database = ${budget}: no load was sent; ${fix}`,
      );
    if (n >= budget * BUDGET_WARN)
      say(
        `metrics: InfluxDB database ${db} holds ${n} series, ${Math.round((n / budget) * 100)} % of max-series-per-database = ${budget}; ${fix}`,
      );
  }
}

/** The oldest of a set of testids: both forms start with the UTC stamp, so the least sorts first. */
export const oldestTestid = (ids) => [...ids].filter(Boolean).sort()[0] ?? null;

/**
 * What each store holds: series (InfluxDB per database, Prometheus's head), the retention in
 * force, and the oldest run kept (the least testid each holds).
 */
export async function storeHoldings(urls) {
  const influx = { series: await influxSeries(urls), oldest: {}, retention: {} };
  for (const db of [urls.database, urls.forwarded]) {
    const ids =
      (await influxQL(urls, 'SHOW TAG VALUES WITH KEY = "testid"', db))[0].series?.flatMap((s) =>
        s.values.map((v) => v[1]),
      ) || [];
    influx.oldest[db] = oldestTestid(ids);
    const rps = (await influxQL(urls, `SHOW RETENTION POLICIES ON "${db}"`))[0].series?.[0]?.values || [];
    const dflt = rps.find((v) => v[4] === true);
    influx.retention[db] = dflt ? (dflt[1] === '0s' ? 'forever' : dflt[1]) : null;
  }
  const get = async (path) =>
    (await (await fetch(`${urls.prometheus}${path}`, { signal: AbortSignal.timeout(30_000) })).json()).data;
  const prometheus = {
    series: (await get('/api/v1/status/tsdb')).headStats.numSeries,
    oldest: oldestTestid(await get('/api/v1/label/testid/values')),
    retention: (await get('/api/v1/status/runtimeinfo')).storageRetention,
  };
  return { influx, prometheus };
}

/** A process's resident memory in MiB, from /proc (null when it is gone). */
export function rssMiB(pid) {
  try {
    const kib = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
    return kib / 1024;
  } catch {
    return null;
  }
}
