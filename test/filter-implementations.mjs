import { spawnSync } from 'node:child_process';

// The JSON filter implementations under test, and how to start each with the test's limits.
export function filterImplementations() {
  const node = (workers) => ({ port, backend, maxBody, maxHead, headerTimeoutMs, idleTimeoutMs, backendTimeoutMs }) => [
    'node', 'servers/node/json-filter.js', '--port', String(port), '--backend', backend, '--workers', String(workers),
    '--max-body', String(maxBody), '--max-head', String(maxHead),
    '--header-timeout-ms', String(headerTimeoutMs), '--idle-timeout-ms', String(idleTimeoutMs), '--backend-timeout-ms', String(backendTimeoutMs),
  ];
  const erlang = ({ port, backend, maxBody, maxHead, headerTimeoutMs, idleTimeoutMs, backendTimeoutMs }) => [
    'servers/erlang/json_filter.sh', '--port', String(port), '--backend', backend,
    '--max-body', String(maxBody), '--max-head', String(maxHead),
    '--header-timeout-ms', String(headerTimeoutMs), '--idle-timeout-ms', String(idleTimeoutMs), '--backend-timeout-ms', String(backendTimeoutMs),
  ];
  const hasErl = spawnSync('erl', ['-version'], { stdio: 'ignore' }).status === 0;
  return [
    { name: 'node', command: node(0) },
    { name: 'node-cluster', command: node(2) },
    { name: 'erlang', command: erlang, skip: hasErl ? false : 'erl not installed: run ./labw setup' },
  ];
}
