/*
 * How many requests does nginx's limit_req (3 r/s) pass, how many get 503, and how long does the
 * last one wait, for each queue size (burst 0 to 400) at 2, 3 and 9 r/s? Seed 003; the model's
 * answer is in stacks/burst/README.md. Run by hand: docs/knobs.md.
 */
import { experimentRun } from './lib/run.js';

export const { options, setup, warm, hit, teardown, handleSummary } = experimentRun('burst');
