/*
 * The checks a response gets, named as k6's summary and the pages list them: the statuses the
 * policy allows. A case counts the answers outside them as unexpected too, by status. k6-safe.
 */

/**
 * One check: the answer is 200 or the status the policy limits with (or one its other limits
 * refuse with: `also`, a limit_conn's 503 beside a limit_req's 429).
 */
export const statusChecks = (limitedStatus, proto = null, also = []) => ({
  [`status is 200 or ${[limitedStatus, ...also].join(' or ')}`]: (r) =>
    r.status === 200 || r.status === limitedStatus || also.includes(r.status),
  // A listener that speaks HTTP/2 (a team's `listen ... ssl http2`) is spoken to in it.
  ...(proto ? { [`protocol is ${proto}`]: (r) => r.proto === proto } : {}),
});
