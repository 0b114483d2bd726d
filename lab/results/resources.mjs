/*
 * The resources of an experiment: the resources table its capped phases saved (CPU against the
 * quota, memory against the limit, OOM kills) and a chart per service, k6 included: CPU % of a
 * core from the runner's own sampler (there even without the stores), memory from the boards.
 */
import { resourceRows } from '../stack/resources.mjs';
import { boardPanels, panelSeries } from './boards.mjs';
import { chart, chartId, PALETTE } from './chart.mjs';

/** CPU % of one core over ~1 s steps, from cumulative CPU seconds [[epochMs, cpuS], ...]. */
export function cpuPercent(series) {
  const out = [];
  let anchor = series?.[0];
  for (const s of series || []) {
    if (s[1] < anchor[1]) break; // the process gone: the sampler reads nothing
    if (s[0] - anchor[0] < 1000) continue;
    out.push([s[0], ((s[1] - anchor[1]) / ((s[0] - anchor[0]) / 1000)) * 100]);
    anchor = s;
  }
  return out;
}

/** The resources tables of an experiment's phases: [{phase, head, rows}] (the printed table's). */
export const resourceTables = (exp) =>
  exp.phases
    .filter((p) => p.resources?.length)
    .map((p) => ({ phase: p.phase, ...resourceRows(p.phase || exp.name, p.resources) }));

/** A service's memory over time from the boards: its cgroup where capped, else its processes' resident memory. */
function memoryOf(run, exp, service) {
  const find = (uid, title) => boardPanels(run.panels, uid).find((p) => p.panel.startsWith(title));
  const sources = [
    [find('lab-resources', 'Memory in use'), (l) => l.name === service],
    [find('lab-resources', 'Resident memory'), (l) => l.groupname === service],
  ];
  for (const [p, keep] of sources) {
    const s = p && panelSeries(p, { ...exp.window, keep })[0];
    if (s) return s.points;
  }
  return null;
}

/** One chart per service (and k6): CPU % of a core, and memory on a second axis where the boards have it. */
export function serviceCharts(run, exp) {
  return ['k6', ...exp.services]
    .map((service, i) => {
      const cpu = exp.phases.flatMap((p) => cpuPercent(p.cpu?.[service]));
      const mem = service === 'k6' ? null : memoryOf(run, exp, service);
      const series = [{ label: 'CPU % of a core', points: cpu, color: PALETTE[i % PALETTE.length] }];
      if (mem) series.push({ label: 'memory', points: mem, unit: 'bytes', color: '#8AB8FF', dash: true });
      // CPU and memory are sampled on two clocks: joined over each other's points, or each line
      // breaks at every point of the other and draws as nothing but a sliver.
      return chart({
        id: chartId('res', service),
        title: service,
        unit: 'percent',
        series,
        height: 180,
        spanGaps: true,
        noTruth: "drawn from the runner's own samples (cpu.json) and the boards' memory: the samples are the figures",
      });
    })
    .filter((c) => c.data[0].length);
}
