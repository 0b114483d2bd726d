import { absent } from './lib/needs.mjs';

// The JSON filter implementations under test, and how to start each with the test's limits.
// The guard limits (maxConnections, maxPipeline, sendTimeoutMs) are passed only when a test sets
// them, so the filters' own defaults hold otherwise. `processes` is how many processes share the
// listening socket: the connection cap is each process's own.
export function filterImplementations() {
  const opt = (flag, v) => (v === undefined ? [] : [flag, String(v)]);
  const common = ({
    port,
    backend,
    maxBody,
    maxHead,
    headerTimeoutMs,
    idleTimeoutMs,
    backendTimeoutMs,
    maxConnections,
    sendTimeoutMs,
  }) => [
    '--port',
    String(port),
    '--backend',
    backend,
    '--max-body',
    String(maxBody),
    '--max-head',
    String(maxHead),
    '--header-timeout-ms',
    String(headerTimeoutMs),
    '--idle-timeout-ms',
    String(idleTimeoutMs),
    '--backend-timeout-ms',
    String(backendTimeoutMs),
    ...opt('--max-connections', maxConnections),
    ...opt('--send-timeout-ms', sendTimeoutMs),
  ];
  const node = (workers) => (limits) => [
    'node',
    'servers/node/json-filter.js',
    '--workers',
    String(workers),
    ...common(limits),
    ...opt('--max-pipeline', limits.maxPipeline),
  ];
  // The Erlang filter answers a connection's requests one after another: one in flight at most.
  const erlang = (limits) => ['servers/erlang/json_filter.sh', ...common(limits)];
  // `missing`: why its runtime is not there (null when it is); its tests go through needs().
  return [
    { name: 'node', command: node(0), processes: 1, missing: null },
    { name: 'node-cluster', command: node(2), processes: 2, missing: null },
    { name: 'erlang', command: erlang, processes: 1, missing: absent('erl', ['-version']) },
  ];
}
