/*
 * `up <experiment> [--quick[=N]] [knobs]` (or `up --policy=FILE ...`): start one experiment's stack and leave it up (a
 * detached keeper owns it); prints `name url` per endpoint. Refused while a run is live (its
 * ports, and the 2 cores its figures need: lab/run/lock.mjs).
 */
import { parseRunArgs, stackWords } from './args.mjs';
import { keepUp } from './keeper.mjs';
import { refuseWhileLive } from '../run/lock.mjs';

export default async function up(words, ctx) {
  // `up --policy=FILE [--quick] [knobs]`: a team's policy's stack, as `test --policy` runs it.
  const { name } = parseRunArgs(stackWords(words, ctx.root), { target: 'experiment' });
  refuseWhileLive(ctx.root, `./labw up ${name}`);
  return keepUp(ctx, name, words, './labw down');
}
