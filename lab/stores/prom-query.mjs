/*
 * Prometheus's instant query, as the judges and the stores' own checks ask it.
 */

/** An instant PromQL query: [{labels, value}]. */
export async function promQuery(url, q) {
  const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(q)}`, {
    signal: AbortSignal.timeout(15_000),
  });
  const body = await res.json();
  if (body.status !== 'success') throw new Error(`Prometheus: ${body.error || res.status}`);
  return body.data.result.map((r) => ({ labels: r.metric, value: Number(r.value[1]) }));
}
