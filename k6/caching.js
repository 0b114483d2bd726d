/*
 * Does a server cache, a client cache or both rescue an application behind two rate limiters,
 * with users looping as JMeter's threads do (or retrying a 503)? Seed 000;
 * stacks/caching/README.md. Run by hand: docs/knobs.md.
 */
import { experimentRun } from './lib/run.js';

export const { options, setup, warm, hit, teardown, handleSummary } = experimentRun('caching');
