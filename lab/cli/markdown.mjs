/*
 * Markdown for the generated tables of the docs and the stacks' READMEs (`just docs`): a table,
 * a model's range, a duration, and what a limiter case must give.
 */
export const span = (r) => (r.min === r.max ? `${r.min}` : `${r.min}..${r.max}`);
export const secs = (ms) => `${(ms / 1000).toFixed(ms >= 10_000 ? 1 : 2)} s`;
export const table = (head, rows) => [head, head.map(() => '---'), ...rows].map((r) => `| ${r.join(' | ')} |`).join('\n');
export const byId = (p) => Object.fromEntries(p.cases.map((c) => [c.id, c]));

/** What a limiter case must give: 200s / limited, and the longest wait where it queues. */
export function outcome(c) {
  const wait = c.expected.maxMs ? `, wait ${secs(c.model.maxDelayMs.max)}` : '';
  return `${span(c.expected.ok)} / ${span(c.expected.limited)}${wait}${c.expected.timingSensitive ? ' (ms clock)' : ''}`;
}
