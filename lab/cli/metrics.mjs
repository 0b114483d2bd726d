/*
 * `metrics up [--retention=30d]|down|status|series`: the metrics stores (InfluxDB, Prometheus,
 * process-exporter), kept running between runs by a keeper; status says whether they are up,
 * who started them, where, and per store its series, disk, memory, retention and the oldest run
 * it keeps; series says what one run of each suite adds to each store (computed from the k6
 * code's tag sets, lab/bench/cardinality.mjs).
 *
 * Stores come up two ways: kept by `metrics up` (a keeper's state file of kind `metrics`; runs
 * stream to them and leave them up), or started by a run for itself when none were up (in that
 * run's state file; the run stops them at its end). A second run, and `metrics up|down`, are
 * refused while a run is live (lab/run/lock.mjs), so no run streams to another run's stores
 * or has its stores stopped under it. The retention is set as the stores start: --retention here,
 * else LAB_METRICS_RETENTION, else 30 days (lab/stores/stores.mjs).
 */
import { join } from 'node:path';
import { readFileSync, writeFileSync } from 'node:fs';
import { duSize } from '../lib.mjs';
import { keepUp, stopKept } from './keeper.mjs';
import { flagValue } from './args.mjs';
import {
  METRICS_PROFILE,
  storesUp,
  storeUrls,
  metricsRetention,
  applyRetention,
  storeHoldings,
  rssMiB,
  seriesBudget,
} from '../stores/stores.mjs';
import { ownerAlive, readStates, sameProcess } from '../stack/procs.mjs';
import { stackServices } from '../stack/topology.mjs';
import { refuseWhileLive } from '../run/lock.mjs';
import { formatTable } from '../judge/table.mjs';

/** Who started the stores that are up, from the state files of live runners and keepers. */
export function storesOwner(stateDir, topology) {
  const stores = new Set(stackServices(topology, METRICS_PROFILE).map((s) => s.name));
  for (const { id, st } of readStates(stateDir)) {
    if (!ownerAlive(st)) continue;
    if (st.kind === METRICS_PROFILE) return { kept: true, says: "kept by './labw metrics up'" };
    if ((st.procs || []).some((p) => stores.has(p.name) && sameProcess(p.pid, p.start)))
      return { kept: false, run: id, says: `started by run ${id} for itself; they stop when it ends` };
  }
  return { kept: false, says: 'not started by this checkout (docker compose, or another one)' };
}

/** The live process of a store service, from the state files (null: not started by this checkout). */
function storePid(stateDir, name) {
  for (const { st } of readStates(stateDir)) {
    if (!ownerAlive(st)) continue;
    const p = (st.procs || []).find((x) => x.name === name && sameProcess(x.pid, x.start));
    if (p) return p.pid;
  }
  return null;
}

const n = (x) => (x === null || x === undefined ? '-' : Number(x).toLocaleString('en-US'));
const mib = (x) => (x === null ? '-' : `${x.toFixed(0)} MiB`);

/** The words after `up`: --retention=<72h|30d|12w> at most. */
function upRetention(words) {
  let retention = null;
  for (let i = 0; i < words.length; i += 1) {
    const r = flagValue(words, i, '--retention', '30d');
    if (!r || retention) throw new Error(`usage: ./labw metrics up [--retention=30d]; got '${words.join(' ')}'`);
    retention = r[0];
    i += r[1] - 1;
  }
  if (retention === null) return metricsRetention();
  try {
    return metricsRetention({ LAB_METRICS_RETENTION: retention });
  } catch {
    throw new Error(`--retention=${retention}: give a whole number of hours, days or weeks, like 72h, 30d or 12w`);
  }
}

/** `metrics up`: the stores kept up (by a keeper) with the retention asked, applied to InfluxDB too. */
async function metricsUp(rest, ctx) {
  const { root, stateDir, say, topology } = ctx;
  refuseWhileLive(root, './labw metrics up');
  const retention = upRetention(rest);
  if (await storesUp(topology()))
    throw new Error(`the metrics stores are already up (${storesOwner(stateDir, topology()).says})`);
  // The keeper inherits it: the stores' commands see it as {{retention}}.
  process.env.LAB_METRICS_RETENTION = retention;
  const code = await keepUp(ctx, METRICS_PROFILE, [METRICS_PROFILE], './labw metrics down');
  await applyRetention(storeUrls(topology()), retention);
  say(
    `# retention: ${retention} (InfluxDB's databases; Prometheus's where the topology passes it, see ./labw metrics status)`,
  );
  return code;
}

/** `metrics down`: the kept stores stopped, their data kept. */
async function metricsDown(rest, ctx) {
  refuseWhileLive(ctx.root, './labw metrics down');
  // Only a keeper that is still the process its state file names is signalled (procs.mjs ownerAlive).
  const stopped = await stopKept(ctx, (st) => st.kind === METRICS_PROFILE && ownerAlive(st));
  ctx.say(
    stopped
      ? "metrics stores stopped; their data stays in .lab/data/ ('./labw clean --yes' deletes it)"
      : 'the metrics stores were not up',
  );
  return 0;
}

/** `metrics series [--write]`: the series one run adds to each store, computed; --write puts them in their doc. */
async function metricsSeries(rest, { root, say }) {
  // --write: into the doc that states them (test/stores.test.mjs checks it is current).
  const { seriesPerRun, seriesRows, seriesMarkdown, withSeriesBlock, SERIES_DOC } =
    await import('../bench/cardinality.mjs');
  const per = await seriesPerRun();
  const { head, rows } = seriesRows(per);
  say(
    `series one run adds to each store (computed from the k6 code's tag sets; a run that went as planned):\n\n${formatTable(rows, head)}`,
  );
  if (rest.includes('--write')) {
    const file = join(root, SERIES_DOC);
    writeFileSync(file, withSeriesBlock(readFileSync(file, 'utf8'), seriesMarkdown(per)));
    say(`wrote the table into ${SERIES_DOC}`);
  }
  return 0;
}

/** The status table: each store's series, disk, memory, retention and oldest run kept. */
function holdingsRows(urls, h, { data, stateDir }) {
  const influxDisk = (db) =>
    `${duSize(join(data, 'influxdb', 'data', db))} + wal ${duSize(join(data, 'influxdb', 'wal', db))}`;
  return [
    ...[urls.database, urls.forwarded].map((db) => [
      `InfluxDB ${db}`,
      n(h.influx.series[db]),
      influxDisk(db),
      '',
      h.influx.retention[db] ?? '-',
      h.influx.oldest[db] ?? '-',
    ]),
    [
      'InfluxDB (all)',
      n(Object.values(h.influx.series).reduce((a, b) => a + b, 0)),
      duSize(join(data, 'influxdb')),
      mib(rssMiB(storePid(stateDir, 'influxdb'))),
      '',
      '',
    ],
    [
      'Prometheus (head)',
      n(h.prometheus.series),
      duSize(join(data, 'prometheus')),
      mib(rssMiB(storePid(stateDir, 'prometheus'))),
      h.prometheus.retention ?? '-',
      h.prometheus.oldest ?? '-',
    ],
  ];
}

/** `metrics status`: whether the stores are up and whose, where their data is, and what they hold. */
async function metricsStatus(rest, { root, stateDir, say, topology }) {
  const urls = storeUrls(topology());
  const up = await storesUp(topology());
  const data = join(root, '.lab', 'data');
  say(
    `metrics stores: ${up ? `up, ${storesOwner(stateDir, topology()).says}` : 'down'}; InfluxDB ${urls.influx} (databases ${urls.database}, ${urls.forwarded}), Prometheus ${urls.prometheus}`,
  );
  say(`data: ${data} (${duSize(data)})`);
  if (!up) return 0;
  let h;
  try {
    h = await storeHoldings(urls);
  } catch (e) {
    say(`could not read what the stores hold: ${e.message}`);
    return 0;
  }
  say(
    formatTable(holdingsRows(urls, h, { data, stateDir }), [
      'store',
      'series',
      'disk',
      'memory (RSS)',
      'retention',
      'oldest run kept',
    ]),
  );
  say(
    `series limit: max-series-per-database = ${n(seriesBudget(root))} per InfluxDB database (stacks/metrics/influxdb.conf); retention wanted: ${metricsRetention()} (LAB_METRICS_RETENTION, or metrics up --retention)`,
  );
  return 0;
}

// Each subcommand, and the words it takes after it (up: its own, read by upRetention).
const SUBCOMMANDS = {
  up: { run: metricsUp, takes: null },
  down: { run: metricsDown, takes: [] },
  status: { run: metricsStatus, takes: [] },
  series: { run: metricsSeries, takes: ['--write'] },
};

/** `metrics up [--retention=30d]|down|status|series [--write]`. */
export default async function metrics([sub, ...rest], ctx) {
  const command = Object.hasOwn(SUBCOMMANDS, sub ?? '') ? SUBCOMMANDS[sub] : null;
  if (!command || (command.takes && rest.some((w) => !command.takes.includes(w))))
    throw new Error(
      `usage: ./labw metrics up [--retention=30d]|down|status|series [--write]; got '${[sub, ...rest].join(' ')}'`,
    );
  return command.run(rest, ctx);
}
