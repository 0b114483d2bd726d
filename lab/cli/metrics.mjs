/*
 * `metrics up|down|status`: the metrics stores (InfluxDB, Prometheus, process-exporter), kept
 * running between runs by a keeper; status says whether they are up, where, and their data's size.
 */
import { join } from 'node:path';
import { duSize } from './context.mjs';
import { keepUp, stopKept } from './keeper.mjs';
import { METRICS_PROFILE, storesUp, storeUrls } from '../stores/stores.mjs';

export default async function metrics([sub, ...rest], ctx) {
  const { root, say, topology } = ctx;
  if (rest.length || !['up', 'down', 'status'].includes(sub)) throw new Error(`usage: ./labw metrics up|down|status; got '${[sub, ...rest].join(' ')}'`);
  if (sub === 'up') {
    if (await storesUp(topology())) throw new Error('the metrics stores are already up');
    return keepUp(ctx, METRICS_PROFILE, [METRICS_PROFILE], './labw metrics down');
  }
  if (sub === 'down') {
    const n = await stopKept(ctx, (st) => st.kind === METRICS_PROFILE);
    say(n ? 'metrics stores stopped; their data stays in .lab/data/ (just clean deletes it)' : 'the metrics stores were not up');
    return 0;
  }
  const urls = storeUrls(topology());
  say(`metrics stores: ${(await storesUp(topology())) ? 'up' : 'down'}; InfluxDB ${urls.influx} (database ${urls.database}), Prometheus ${urls.prometheus}`);
  say(`data: ${join(root, '.lab', 'data')} (${duSize(join(root, '.lab', 'data'))})`);
  return 0;
}
