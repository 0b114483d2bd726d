/*
 * Which load generator sends a case: k6, unless the case names another (`generator: 'wrk'`,
 * sent by the runner's wrk stage, lab/run/wrk.mjs). k6-safe.
 */
export const sentBy = (generator) => (c) => (c.generator ?? 'k6') === generator;
export const sentByK6 = sentBy('k6');
