/*
 * envoy-vs-nginx (seed 002): 400 r/s bursts of 1, 2 and 4 s against Envoy's token bucket and
 * nginx's leaky bucket with the same long-run rate. Same counts, different shape: Envoy rejects
 * at once, nginx makes the excess wait up to 9 s.
 */
import { planRun } from './lib/plan-run.js';

const run = planRun('envoy-vs-nginx');
export const options = run.options;
export const setup = run.setup;
export const warm = run.warm;
export const hit = run.hit;
export const handleSummary = run.handleSummary;
