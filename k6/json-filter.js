/*
 * Where does each JSON filter (Node, Node cluster, Erlang) stop keeping up, and what does a
 * relayed request cost it against nginx relaying everything and the bare backend? Seed 004;
 * stacks/json-filter/README.md. Run by hand: docs/knobs.md.
 */
import { experimentRun } from './lib/run.js';

export const { options, setup, warm, hit, teardown, handleSummary } = experimentRun('json-filter');
