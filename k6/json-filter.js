/*
 * json-filter (seed 004): each server in turn (Node single, Node cluster, Erlang, nginx as the
 * reference) is ramped through held arrival rates until it stops keeping up (the breakpoint),
 * then loaded by a fixed number of connections as the seed's wrk run was.
 */
import { capacityRun } from './lib/capacity-run.js';

const run = capacityRun();
export const options = run.options;
export const setup = run.setup;
export const connect = run.connect;
export const post = run.post;
export const teardown = run.teardown;
export const handleSummary = run.handleSummary;
