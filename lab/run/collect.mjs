/*
 * After the load: what the phase measured. The CPU samples (the stack's and k6's), the proxy's
 * own counts (read before the stack stops), k6's summary, and the nothing-lost table: the same
 * counts from k6, each metrics store and the proxy, which must agree.
 */
import { writeFileSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  proxyCounts,
  addLoggedCounts,
  k6Counts,
  storeCounts,
  countsTable,
  ownCounterRows,
} from '../judge/nothing-lost.mjs';
import { runName } from '../lib/run-names.mjs';
import { proxyNamed } from '../policy/proxies/index.mjs';

/** The CPU the phase used, saved beside its summary; k6's own is said. */
export function stopSampling(plan, started, { run, stores, say }) {
  const cpu = started.sampler.stop();
  const cgroupSamples = started.sampler.cgroupSamples();
  writeFileSync(join(run.dir, `${runName(plan)}.cpu.json`), JSON.stringify(cpu));
  // Its last sample, once it exited, reads 0: the most it reached is what it used.
  const k6cpu = cpu.k6?.length ? Math.max(...cpu.k6.map(([, s]) => s)) : undefined;
  if (k6cpu !== undefined)
    say(`${plan.experiment}: k6 used ${k6cpu.toFixed(1)} CPU seconds${stores ? ' (streaming to the stores)' : ''}`);
  return { cpu, cgroupSamples, caps: started.caps };
}

/**
 * The proxy's own counts, and a scrape more, so that Prometheus holds the last of them too; a
 * service that counts per case in its access log (countsLog) is read after that wait, its log flushed.
 */
export async function readProxy(plan, kind, { topology }, stack) {
  const counts = await proxyCounts(plan, kind, topology);
  await new Promise((r) => setTimeout(r, 2000));
  if (!counts) return counts;
  const cases = new Set(plan.cases.map((c) => c.id));
  for (const p of stack.procs.filter((x) => topology.services[x.name]?.countsLog)) {
    const file = join(p.prefix, topology.services[p.name].countsLog);
    const proxy = proxyNamed(topology.services[p.name].sightings);
    if (existsSync(file)) addLoggedCounts(counts, readFileSync(file, 'utf8'), cases, proxy);
  }
  return counts;
}

export function readSummary(plan, { run }) {
  const file = join(run.dir, `${runName(plan)}.summary.json`);
  return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : null;
}

/** The nothing-lost rows of a phase; a problem when the counts differ. */
export async function countRows(plan, kind, summary, proxy, sinceMs, { run, stores }) {
  if (!stores || !summary) return { rows: [], problems: [] };
  try {
    const app = kind.appServed && { service: plan.accounting.service, sinceMs };
    const k6 = k6Counts(plan, kind, summary);
    const table = countsTable(
      plan,
      k6,
      await storeCounts(stores.urls, run.id, plan.experiment, kind.streams, app),
      proxy?.byCase ?? null,
    );
    const own = ownCounterRows(k6, proxy);
    return {
      rows: [...table.rows, ...own.rows],
      problems:
        table.agree && own.agree
          ? []
          : [`${plan.experiment}: counts differ between k6, the stores and the proxy (the LOST rows above)`],
    };
  } catch (e) {
    return { rows: [], problems: [`${plan.experiment}: reading the stores: ${e.message}`] };
  }
}
