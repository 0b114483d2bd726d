/*
 * The resources table of a run, like the seed's `docker stats`, from the cgroups' own counters
 * sampled over the run (lab/stack/cpu.mjs): per service, CPU % of one core over the loaded window,
 * memory in use (the most seen in the window) against its limit, the kernel's peak, PIDs, OOM
 * kills and time throttled by the CPU quota.
 */
import { cpuBetween } from './cpu.mjs';

const MiB = 1024 ** 2;
const inWindow = (samples, fromMs, toMs) => samples.filter(([t]) => t >= fromMs && t <= toMs).map(([, s]) => s);

/**
 * One row per service: {service, cpuS, cpuPct, capPct, memBytes, memMaxBytes, memLimitBytes, memPct,
 * pids, oomKills, throttledS}.
 * No network I/O: natively every service shares the loopback interface, and cgroups count no
 * bytes (Docker gives each container its own network namespace, which is where docker stats
 * reads it).
 */
export function resourcesOver(samples, caps, fromMs, toMs) {
  const wallS = (toMs - fromMs) / 1000;
  return Object.entries(samples).map(([service, series]) => {
    const seen = inWindow(series, fromMs, toMs);
    const all = series.map(([, s]) => s);
    const last = all.at(-1) || {};
    const cpuS = cpuBetween(
      series.map(([t, s]) => [t, s.cpuS]),
      fromMs,
      toMs,
    );
    const memBytes = seen.length ? Math.max(...seen.map((s) => s.memBytes ?? 0)) : null;
    const limit = caps[service]?.memBytes ?? null;
    const throttled = cpuBetween(
      series.map(([t, s]) => [t, s.throttledS]),
      fromMs,
      toMs,
    );
    return {
      service,
      cpuS,
      cpuPct: cpuS === null ? null : (cpuS / wallS) * 100,
      capPct: caps[service]?.cpu ? caps[service].cpu * 100 : null,
      memBytes,
      memMaxBytes: last.memMaxBytes ?? null,
      memLimitBytes: limit,
      memPct: limit && memBytes !== null ? (memBytes / limit) * 100 : null,
      pids: seen.length ? Math.max(...seen.map((s) => s.pids ?? 0)) : null,
      oomKills: last.oomKills ?? 0,
      throttledS: throttled,
    };
  });
}

const f = (x, d = 2) => (x === null || x === undefined ? '-' : x.toFixed(d));

/** Rows for the printed table, with its head. */
export function resourceRows(caseName, rows) {
  const head = [
    'case',
    'service',
    'CPU %',
    'cap %',
    'mem used / limit (MiB)',
    'mem %',
    'peak (MiB)',
    'PIDs',
    'OOM kills',
    'throttled (s)',
  ];
  const out = rows.map((r, i) => [
    i ? '' : caseName,
    r.service,
    f(r.cpuPct),
    r.capPct === null ? '-' : f(r.capPct, 0),
    `${f(r.memBytes / MiB)} / ${r.memLimitBytes ? f(r.memLimitBytes / MiB, 0) : 'none'}`,
    f(r.memPct, 1),
    f(r.memMaxBytes / MiB),
    String(r.pids ?? '-'),
    String(r.oomKills),
    f(r.throttledS, 1),
  ]);
  return { head, rows: out };
}
