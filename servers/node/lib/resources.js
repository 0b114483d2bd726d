/*
 * The application server's resources from one argument: `name=serviceMs:maxAgeS,...`, e.g.
 * hare=100:3,tortoise=2000:10,snail=5000:60 (the runner renders it from the knobs).
 */
export function parseResources(text) {
  const out = {};
  for (const part of String(text).split(',')) {
    const m = /^([a-z][a-z0-9-]{0,31})=([0-9]{1,6}):([0-9]{1,6})$/.exec(part);
    if (!m) throw new Error(`--resources: '${part}' is not name=serviceMs:maxAgeS (like hare=100:3)`);
    if (Object.hasOwn(out, m[1])) throw new Error(`--resources: '${m[1]}' is given twice`);
    out[m[1]] = { serviceMs: Number(m[2]), maxAgeS: Number(m[3]) };
  }
  return out;
}
