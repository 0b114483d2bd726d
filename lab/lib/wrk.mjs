/*
 * wrk, the HTTP benchmarking tool: its command line, and its report read as figures. The
 * benches and the capacity runs (lab/run/wrk.mjs) both call it.
 */

/**
 * wrk's command line: `timeoutS` (none: wrk's own 2 s), `script` (a Lua file) and `latency` (its
 * percentiles) are optional.
 */
export const wrkArgs = (url, connections, seconds, { threads = 2, timeoutS = 5, script, latency = false } = {}) => [
  '-t',
  String(threads),
  '-c',
  String(connections),
  '-d',
  `${seconds}s`,
  ...(timeoutS ? ['--timeout', `${timeoutS}s`] : []),
  ...(latency ? ['--latency'] : []),
  ...(script ? ['-s', script] : []),
  url,
];

const UNIT_MS = { us: 1e-3, ms: 1, s: 1000, m: 60_000 };

/**
 * wrk's report as figures: requests and their rate, non-2xx answers, socket errors (each kind
 * and their sum), and with --latency its percentiles in ms (`latencyMs['99']`).
 */
export function parseWrk(stdout) {
  const num = (re) => Number((re.exec(stdout) || [])[1] ?? 0);
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(stdout);
  const socket = sock
    ? { connect: Number(sock[1]), read: Number(sock[2]), write: Number(sock[3]), timeout: Number(sock[4]) }
    : { connect: 0, read: 0, write: 0, timeout: 0 };
  const latencyMs = {};
  const dist = /Latency Distribution\n((?:\s+\d+%\s+[\d.]+\w+[ \t]*\n)+)/.exec(stdout);
  for (const [, p, v, unit] of (dist?.[1] ?? '').matchAll(/(\d+)%\s+([\d.]+)(us|ms|s|m)\b/g))
    latencyMs[p] = Number(v) * UNIT_MS[unit];
  return {
    rps: num(/Requests\/sec:\s+([\d.]+)/),
    requests: num(/(\d+) requests in/),
    non2xx: num(/Non-2xx or 3xx responses: (\d+)/),
    socket,
    socketErrors: Object.values(socket).reduce((a, b) => a + b, 0),
    latencyMs,
  };
}
