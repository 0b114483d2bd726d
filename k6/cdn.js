/*
 * An nginx balancer, 4 edge caches and 2 origins, each capped in CPU and memory: what throughput
 * does the costliest service allow at each cap level, and does round robin spread the load?
 * Seed 001; stacks/cdn/README.md. Run by hand: docs/knobs.md.
 */
import { experimentRun } from './lib/run.js';

export const { options, setup, warm, hit, teardown, handleSummary } = experimentRun('cdn');
