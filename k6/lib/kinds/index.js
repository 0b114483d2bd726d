/*
 * Each plan kind's executor, by kind name: what a VU does for a plan of that kind (its requests,
 * and what it reads before and after). Every executor is `(plan, baseUrls) -> {setup?, hit,
 * teardown?}`; k6/lib/run.js gives it the scenarios, thresholds, health check and summary.
 */
import limiter from './limiter.js';
import closedLoop from './closed-loop.js';
import capped from './capped.js';
import capacity from './capacity.js';

export const executors = { limiter, 'closed-loop': closedLoop, capped, capacity };
