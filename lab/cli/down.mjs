/*
 * `down`: stop whatever `up` started (and any orphans it left); the metrics stores stay up,
 * `metrics down` stops them.
 */
import { stopKept } from './keeper.mjs';

export default async function down(words, ctx) {
  const n = await stopKept(ctx, (st) => st.kind === 'up');
  ctx.say(n ? 'stopped' : 'nothing was running');
  return 0;
}
