/*
 * `down`: stop whatever `up` started (and any orphans it left); the metrics stores stay up,
 * `metrics down` stops them. Only a keeper that is still the process its state file names is
 * signalled (procs.mjs ownerAlive: same pid and start ticks); a pid since reused by an unrelated
 * process is left alone, and the dead keeper's processes are reaped by their own checked pids.
 */
import { stopKept } from './keeper.mjs';
import { ownerAlive } from '../stack/procs.mjs';

export default async function down(words, ctx) {
  const n = await stopKept(ctx, (st) => st.kind === 'up' && ownerAlive(st));
  ctx.say(n ? 'stopped' : 'nothing was running');
  return 0;
}
