/*
 * burst (seed 003): nginx limit_req at 3 r/s with one queue size per location (0, 50, 100, 300,
 * 400). Every location is hit at 2, 3 and 9 r/s in turn; the model says how many requests each
 * queue lets through, how many get 503, and how long the last one waits.
 */
import { planRun } from './lib/plan-run.js';

const run = planRun('burst');
export const options = run.options;
export const setup = run.setup;
export const warm = run.warm;
export const hit = run.hit;
export const handleSummary = run.handleSummary;
