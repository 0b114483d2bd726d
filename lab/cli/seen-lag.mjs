/*
 * How long after k6 stamped each request its proxy's limiter saw it, from the recorded runs
 * (docs/runs/<testid>/*.sends.json, as the runner wrote them): per run and proxy the lag's
 * quantiles over every limited request, pooled; the measure SEEN_LAG_MS states.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { table } from '../lib.mjs';
import { TESTID } from '../lib/run-names.mjs';
import { proxyNamed } from '../policy/proxies/index.mjs';
import { pooledQuantiles, SEEN_LAG_MS } from '../../thresholds/models/seen-lag.js';

const SHOWN = [0, 0.5, 0.9, 0.99, 0.999, 1];
// A recorded lag's proxy: the one it names; a record made before lags named theirs holds nginx's
// (read at 1 ms) or Envoy's (at 1 µs), the two proxies whose sightings the lab then read.
const BEFORE_NAMES = { 1: 'nginx', 0.001: 'envoy' };
const PROXY = (lag) => proxyNamed(lag.proxy ?? BEFORE_NAMES[lag.resolutionMs]).title;

/** Per recorded run, the seen lags of its cases by proxy: [{testid, byProxy: {proxy: [{n, q}]}}]. */
export function recordedLags(root) {
  const dir = join(root, 'docs', 'runs');
  return readdirSync(dir)
    .filter((id) => TESTID.test(id))
    .sort()
    .map((testid) => {
      const byProxy = {};
      for (const f of readdirSync(join(dir, testid)).filter((x) => x.endsWith('.sends.json'))) {
        const rec = JSON.parse(readFileSync(join(dir, testid, f), 'utf8'));
        for (const lag of Object.values(rec.seenLagMs || {})) (byProxy[PROXY(lag)] ||= []).push(lag);
      }
      return { testid, byProxy };
    })
    .filter((r) => Object.keys(r.byProxy).length);
}

const fmt = (x) => x.toFixed(2);

/** The generated block: per run and proxy, requests and the pooled lag's quantiles; then all runs pooled. */
export function seenLagTable(root) {
  const runs = recordedLags(root);
  const rows = runs.flatMap((r) =>
    Object.entries(r.byProxy).map(([proxy, parts]) => [
      r.testid,
      proxy,
      String(parts.reduce((a, p) => a + p.n, 0)),
      ...pooledQuantiles(parts, SHOWN).map(([, x]) => fmt(x)),
    ]),
  );
  const all = {};
  for (const r of runs) for (const [proxy, parts] of Object.entries(r.byProxy)) (all[proxy] ||= []).push(...parts);
  const pooled = Object.entries(all).map(
    ([proxy, parts]) =>
      `${proxy}: ${pooledQuantiles(parts, SHOWN)
        .map(([p, x]) => `p${p * 100} ${fmt(x)}`)
        .join(', ')} ms`,
  );
  const stated = Object.values(SEEN_LAG_MS).map(
    (t) =>
      `${t.proxy}: ${t.q
        .filter(([p]) => SHOWN.includes(p))
        .map(([p, x]) => `p${p * 100} ${fmt(x)}`)
        .join(', ')} ms`,
  );
  return (
    `${runs.length} recorded run${runs.length === 1 ? '' : 's'} of \`just test spike --quick=2\` (testids in the table; docs/runs/ keeps them), lag in ms (nginx's readings are whole ms of its own clock, up to 1 ms short of the lag):\n\n` +
    `${table(['run (testid)', 'proxy', 'requests', 'min', 'p50', 'p90', 'p99', 'p99.9', 'max'], rows)}\n\n` +
    `All pooled: ${pooled.join('; ')}.\nStated in SEEN_LAG_MS (thresholds/models/seen-lag.js), for cases whose proxy logged no sighting: ${stated.join('; ')}.`
  );
}
