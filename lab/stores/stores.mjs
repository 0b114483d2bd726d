/*
 * The metrics stores, part of the topology (compose profile `metrics`: InfluxDB, Prometheus and
 * process-exporter, natively Debian's). `just metrics up` keeps them running between runs; a
 * `just test` uses them when they are up and otherwise starts them for its run and stops them
 * after. Their data stays in .lab/data/ either way, until `just clean`.
 */
import { join } from 'node:path';
import { startStack, stopStack } from '../stack/start-stop.mjs';

export const METRICS_PROFILE = 'metrics';

/** Where k6 writes and where queries go, from the topology's ports. */
export function storeUrls(topology) {
  const port = (name) => topology.services[name].ports.http;
  // k6's influxdb output writes to `database`; Prometheus forwards what it holds to `forwarded`.
  return { influx: `http://127.0.0.1:${port('influxdb')}`, prometheus: `http://127.0.0.1:${port('prometheus')}`, database: 'k6', forwarded: 'prometheus' };
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

/** Starts the metrics profile as a stack; a store that cannot start is an error naming it. */
export async function startStores({ root, env, topology, tmpDir, logDir, state, log }) {
  try {
    return await startStack({ root, env, topology, profile: METRICS_PROFILE, policy: {}, targets: [], tmpDir, logDir, state, log });
  } catch (e) {
    throw new Error(`the metrics stores could not start, so no load was sent (or run with --no-metrics):\n${e.message}`);
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
    return { urls, close: async () => {} };
  }
  say('metrics: starting InfluxDB, Prometheus, process-exporter and cgroup-exporter for this run (keep them with `./labw metrics up`)');
  const stack = await startStores({ root, env, topology, tmpDir: join(tmp, 'metrics'), logDir: join(dir, 'logs'), state, log: (m) => say(`  ${m}`) });
  try {
    await untilScraping(urls);
  } catch (e) {
    await stopStack(stack);
    throw e;
  }
  return { urls, stack, close: () => stopStack(stack) };
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
      const res = await fetch(`${urls.prometheus}/api/v1/targets?state=active`, { signal: AbortSignal.timeout(1000) });
      const targets = (await res.json()).data?.activeTargets || [];
      if (targets.some((t) => Date.parse(t.lastScrape) > 0)) return;
    } catch {
      // not answering yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`Prometheus at ${urls.prometheus} scraped nothing within ${timeoutMs / 1000} s of starting, so no load was sent`);
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
      '--out', 'experimental-prometheus-rw',
      '--tag', `testid=${testid}`, '--tag', `experiment=${plan.experiment}`, '--tag', `suite=${plan.suite}`,
    ],
    env: {
      K6_PROMETHEUS_RW_SERVER_URL: `${urls.prometheus}/api/v1/write`,
      // What the dashboards show per case (k6's default is p(99) alone).
      K6_PROMETHEUS_RW_TREND_STATS: 'p(95),p(99),min,max,avg,med,count',
      K6_PROMETHEUS_RW_PUSH_INTERVAL: '1s',
    },
  };
}
