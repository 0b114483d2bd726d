/*
 * Prometheus text format -> [{name, labels, value}], enough of it for counters: read by k6
 * scripts (a service's own counts in setup and teardown) and by the lab's nothing-lost table.
 */
export function parsePrometheusText(text) {
  const out = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m || line.startsWith('#')) continue;
    const labels = {};
    for (const [, k, v] of (m[2] || '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[k] = v.replace(/\\(.)/g, '$1');
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}
