/*
 * `up <experiment> [--quick[=N]] [knobs]`: start one experiment's stack and leave it up (a
 * detached keeper owns it); prints `name url` per endpoint. Refused while a run is live (its
 * ports, and the 2 cores its figures need: lab/run/lock.mjs).
 */
import { parseRunArgs } from './args.mjs';
import { keepUp } from './keeper.mjs';
import { refuseWhileLive } from '../run/lock.mjs';

export default async function up(words, ctx) {
  const { name } = parseRunArgs(words, { target: 'experiment' });
  refuseWhileLive(ctx.root, `./labw up ${name}`);
  return keepUp(ctx, name, words, './labw down');
}
