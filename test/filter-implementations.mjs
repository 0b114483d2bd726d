// The JSON filter implementations under test, and how to start each with the test's limits.
export function filterImplementations() {
  const node = (workers) => ({ port, backend, maxBody, maxHead, headerTimeoutMs, backendTimeoutMs }) => [
    'node', 'servers/node/json-filter.js', '--port', String(port), '--backend', backend, '--workers', String(workers),
    '--max-body', String(maxBody), '--max-head', String(maxHead),
    '--header-timeout-ms', String(headerTimeoutMs), '--backend-timeout-ms', String(backendTimeoutMs),
  ];
  return [
    { name: 'node', command: node(0), pid: (child) => child.pid },
  ];
}
