/*
 * CPU time of each stack service over a run, read from /proc: a service is its process group
 * (nginx and its workers, the Node cluster's primary and workers, the Erlang VM), so the sum
 * of utime + stime over the group's members, sampled every `intervalMs`.
 */
import { readFileSync, readdirSync } from 'node:fs';

export const TICKS_PER_S = 100; // USER_HZ on Linux

/**
 * A process's /proc/<pid>/stat as numbers, from its state on (the name in parentheses, which may
 * hold spaces, cut off): `pgrp` its process group, `ticks` its utime + stime. Null once it is gone.
 */
export function statFields(pid) {
  let stat;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { pgrp: Number(f[2]), ticks: Number(f[11]) + Number(f[12]) };
}

/** utime + stime (ticks) per process group, for the groups asked. */
export function groupTicks(groups) {
  const out = Object.fromEntries([...groups].map((g) => [g, 0]));
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const s = statFields(pid); // null: gone meanwhile
    if (s && s.pgrp in out) out[s.pgrp] += s.ticks;
  }
  return out;
}

/**
 * Starts sampling the services' process groups; stop() returns {service: [[epochMs, cpuS], ...]}.
 * A service in a cgroup of its own (lab/stack/cgroups.mjs) is read from the cgroup instead: its CPU
 * in nanoseconds, counting every process that ever ran in it; its memory, PIDs and OOM kills
 * are kept too, for the resources table (cgroupSamples()).
 */
export function sampleCpu(procs, intervalMs = 250) {
  const inCgroup = procs.filter((p) => p.cgroup);
  const groups = Object.fromEntries(procs.filter((p) => !p.cgroup).map((p) => [p.pid, p.name]));
  const series = Object.fromEntries(procs.map((p) => [p.name, []]));
  const stats = Object.fromEntries(inCgroup.map((p) => [p.name, []]));
  const take = () => {
    const t = Date.now();
    for (const [g, ticks] of Object.entries(groupTicks(Object.keys(groups))))
      series[groups[g]].push([t, ticks / TICKS_PER_S]);
    for (const p of inCgroup) {
      const s = p.cgroup.stats();
      series[p.name].push([t, s.cpuS]);
      stats[p.name].push([t, s]);
    }
  };
  take();
  const timer = setInterval(take, intervalMs);
  return {
    /** Samples one more process group from now on (k6, once started). */
    track(name, pid) {
      groups[pid] = name;
      series[name] = [];
    },
    stop() {
      clearInterval(timer);
      take();
      return series;
    },
    /** {service: [[epochMs, stats], ...]} of the services in cgroups. */
    cgroupSamples: () => stats,
  };
}

/**
 * CPU seconds a service used between two epoch times, interpolated between samples. What one
 * request costs a service is then CPU seconds over a window divided by the requests in it, which
 * does not depend on how much CPU k6 took on the same cores.
 */
export function cpuBetween(samples, fromMs, toMs) {
  const at = (t) => {
    if (!(samples?.length >= 2) || t < samples[0][0] || t > samples.at(-1)[0]) return null;
    let i = 1;
    while (samples[i][0] < t) i += 1;
    const [t0, c0] = samples[i - 1];
    const [t1, c1] = samples[i];
    return t1 === t0 ? c1 : c0 + ((c1 - c0) * (t - t0)) / (t1 - t0);
  };
  const a = at(fromMs);
  const b = at(toMs);
  return a === null || b === null ? null : b - a;
}
