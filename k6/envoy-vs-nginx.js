/*
 * Envoy's token bucket and nginx's leaky bucket at the same long-run rate, hit by 400 r/s bursts
 * of 1, 2 and 4 s: the same counts pass, but does nginx make the excess wait while Envoy answers
 * at once? Seed 002; stacks/envoy-vs-nginx/README.md. Run by hand: docs/knobs.md.
 */
import { experimentRun } from './lib/run.js';

export const { options, setup, warm, hit, teardown, handleSummary } = experimentRun('envoy-vs-nginx');
