/*
 * An Envoy policy as the model read it, for the Policy tab and `./labw expect`: a row per route,
 * with the bucket it meets and the file:line it comes from.
 */

export const ENVOY_HEAD = [
  'route',
  'bucket',
  'tokens',
  'refill',
  'per connection',
  'enabled',
  'enforced',
  'status',
  'from',
];

const shareWords = (x) => `${Math.round(x * 1000) / 10} %`;

/** A route's row: the bucket it meets. */
function envoyRow(r) {
  const route = `${r.listener}/${r.host} ${JSON.stringify(r.match)}`;
  const b = r.bucket;
  if (!b) return [route, 'none', '', '', '', '', '', '', r.at];
  const refill = `${b.tokensPerFill} per ${b.fillIntervalMs} ms`;
  const shares = [shareWords(b.enabled), shareWords(b.enforced)];
  return [
    route,
    `${b.stat} (${r.bucketFrom})`,
    String(b.maxTokens),
    refill,
    b.perConnection ? 'yes' : 'no',
    ...shares,
    String(b.status),
    b.at,
  ];
}

/** Every route's row (every cell shown, not judged). */
export const envoyRows = (policy) => policy.routes.map(envoyRow);
