/*
 * Writes a store refused, read from the logs of whoever wrote: k6's outputs (InfluxDB's line
 * protocol, Prometheus remote write) and Prometheus forwarding to InfluxDB. A refusal says why
 * (a series limit, a bad request, a store gone) before anyone has to compare counts; a slow
 * flush is only a warning.
 */

/** One logfmt line's fields (key=value, key="quoted value"). */
export function logfmt(line) {
  const out = {};
  for (const m of line.matchAll(/([\w.]+)=("(?:[^"\\]|\\.)*"|\S*)/g)) {
    // Quoted: its escapes undone (a \\n is a line break; trimmed: k6 ends an error with one).
    out[m[1]] = m[2].startsWith('"')
      ? m[2]
          .slice(1, -1)
          .replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c))
          .trim()
      : m[2];
  }
  return out;
}

// Who wrote a line, by its fields: a k6 output, or Prometheus's remote-write queue.
const WRITERS = [
  { store: 'InfluxDB', from: 'k6', match: (f) => /influx/i.test(f.output || '') },
  { store: 'Prometheus', from: 'k6', match: (f) => /prometheus/i.test(f.output || '') },
  { store: 'InfluxDB', from: 'Prometheus remote_write', match: (f) => f.component === 'remote' },
];

/**
 * [{store, from, level: 'error' | 'warn', message}] for every line of `text` where a writer said
 * a write failed (error) or may have dropped samples (warn).
 */
export function refusedWrites(text) {
  const out = [];
  for (const line of (text || '').split('\n')) {
    if (!/level=(error|warn)/.test(line)) continue;
    const f = logfmt(line);
    const w = WRITERS.find((x) => x.match(f));
    if (!w) continue;
    const level = f.level === 'error' ? 'error' : 'warn';
    const message = [f.msg, f.error || f.err].filter(Boolean).join(': ');
    out.push({ store: w.store, from: w.from, level, message });
  }
  return out;
}

/** The refusals as problems, one per store and message (with how often it was said). */
export function refusalProblems(refusals, where) {
  const seen = new Map();
  for (const r of refusals.filter((x) => x.level === 'error')) {
    const key = `${r.store} refused writes from ${r.from}${where ? ` in ${where}` : ''}: ${r.message}`;
    seen.set(key, (seen.get(key) || 0) + 1);
  }
  return [...seen].map(([k, n]) => (n > 1 ? `${k} (${n} times)` : k));
}
