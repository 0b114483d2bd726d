/*
 * `metrics up|down|status`: the metrics stores (InfluxDB, Prometheus, process-exporter), kept
 * running between runs by a keeper; status says whether they are up, who started them, where,
 * and their data's size.
 *
 * Stores come up two ways: kept by `metrics up` (a keeper's state file of kind `metrics`; runs
 * stream to them and leave them up), or started by a run for itself when none were up (in that
 * run's state file; the run stops them at its end). A second run, and `metrics up|down`, are
 * refused while a run is live (lab/run/lock.mjs), so no run streams to another run's stores
 * or has its stores stopped under it.
 */
import { join } from 'node:path';
import { duSize } from './context.mjs';
import { keepUp, stopKept } from './keeper.mjs';
import { METRICS_PROFILE, storesUp, storeUrls } from '../stores/stores.mjs';
import { ownerAlive, readStates, sameProcess } from '../stack/procs.mjs';
import { stackServices } from '../stack/topology.mjs';
import { refuseWhileLive } from '../run/lock.mjs';

/** Who started the stores that are up, from the state files of live runners and keepers. */
export function storesOwner(stateDir, topology) {
  const stores = new Set(stackServices(topology, METRICS_PROFILE).map((s) => s.name));
  for (const { id, st } of readStates(stateDir)) {
    if (!ownerAlive(st)) continue;
    if (st.kind === METRICS_PROFILE) return { kept: true, says: "kept by './labw metrics up'" };
    if ((st.procs || []).some((p) => stores.has(p.name) && sameProcess(p.pid, p.start))) return { kept: false, run: id, says: `started by run ${id} for itself; they stop when it ends` };
  }
  return { kept: false, says: 'not started by this checkout (docker compose, or another one)' };
}

export default async function metrics([sub, ...rest], ctx) {
  const { root, stateDir, say, topology } = ctx;
  if (rest.length || !['up', 'down', 'status'].includes(sub)) throw new Error(`usage: ./labw metrics up|down|status; got '${[sub, ...rest].join(' ')}'`);
  if (sub === 'up') {
    refuseWhileLive(root, './labw metrics up');
    if (await storesUp(topology())) throw new Error(`the metrics stores are already up (${storesOwner(stateDir, topology()).says})`);
    return keepUp(ctx, METRICS_PROFILE, [METRICS_PROFILE], './labw metrics down');
  }
  if (sub === 'down') {
    refuseWhileLive(root, './labw metrics down');
    // Only a keeper that is still the process its state file names is signalled (procs.mjs ownerAlive).
    const n = await stopKept(ctx, (st) => st.kind === METRICS_PROFILE && ownerAlive(st));
    say(n ? "metrics stores stopped; their data stays in .lab/data/ ('./labw clean --yes' deletes it)" : 'the metrics stores were not up');
    return 0;
  }
  const urls = storeUrls(topology());
  const up = await storesUp(topology());
  say(`metrics stores: ${up ? `up, ${storesOwner(stateDir, topology()).says}` : 'down'}; InfluxDB ${urls.influx} (database ${urls.database}), Prometheus ${urls.prometheus}`);
  say(`data: ${join(root, '.lab', 'data')} (${duSize(join(root, '.lab', 'data'))})`);
  return 0;
}
