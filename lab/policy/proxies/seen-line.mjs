/*
 * The lab's seen.log lines that a proxy's config writes as words (`case time status`): its words.
 * A proxy's module reads its own lines (`seen(line)`: docs/adding-a-proxy.md).
 */

/** A seen.log line's words, split at spaces; a case of '-' or none (the lab's warm-up) is no line of a case. */
export function fieldsOf(line) {
  const f = line.trim().split(/\s+/);
  return f.length < 2 || f[0] === '-' || f[0] === '' ? [] : f;
}

/**
 * The status a proxy's own count of the connections it accepted goes by (HAProxy's sessions):
 * a seen line's `accepts` names the counter that counted its connection.
 */
export const CONNECTIONS = 'connections';
