/*
 * `up <experiment> [--quick[=N]] [knobs]`: start one experiment's stack and leave it up (a
 * detached keeper owns it); prints `name url` per endpoint.
 */
import { parseRunArgs } from './args.mjs';
import { keepUp } from './keeper.mjs';

export default async function up(words, ctx) {
  return keepUp(ctx, parseRunArgs(words, { target: 'experiment' }).name, words, './labw down');
}
