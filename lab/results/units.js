/*
 * How a figure is written in a Grafana unit (reqps, s, ms, µs, percentunit, percent, bytes, none):
 * the same text on the charts' axes and legends (bundled into the pages) and in the builder's
 * tables, so a value reads the same everywhere on the site.
 */

const trim = (x, d) => String(Number(x.toFixed(d)));

/** A number with at most `d` decimals, in k/M/G when large (Grafana's 'short'). */
export function short(v, d = 2) {
  const a = Math.abs(v);
  if (a >= 1e9) return `${trim(v / 1e9, d)} G`;
  if (a >= 1e6) return `${trim(v / 1e6, d)} M`;
  if (a >= 1e4) return `${trim(v / 1e3, d)} k`;
  return trim(v, a && a < 0.01 ? 4 : d);
}

/** A duration given in seconds: µs, ms, s or min. */
export function seconds(v) {
  const a = Math.abs(v);
  if (a === 0) return '0 s';
  if (a < 1e-3) return `${trim(v * 1e6, 1)} µs`;
  if (a < 1) return `${trim(v * 1e3, 1)} ms`;
  if (a < 120) return `${trim(v, 2)} s`;
  return `${trim(v / 60, 1)} min`;
}

/** Bytes in IEC units, as Grafana's 'bytes'. */
export function bytes(v) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let x = v;
  while (Math.abs(x) >= 1024 && i < units.length - 1) {
    x /= 1024;
    i += 1;
  }
  return `${trim(x, i ? 1 : 0)} ${units[i]}`;
}

const FORMATS = {
  reqps: (v) => `${short(v)} req/s`,
  s: seconds,
  ms: (v) => seconds(v / 1000),
  µs: (v) => seconds(v / 1e6),
  percentunit: (v) => `${trim(v * 100, 2)} %`,
  percent: (v) => `${trim(v, 2)} %`,
  bytes,
  none: (v) => short(v),
};

/** A value in a unit; '-' for none. An unknown unit is written as 'none'. */
export function format(unit, v) {
  if (v === null || v === undefined || Number.isNaN(v)) return '-';
  if (!Number.isFinite(v)) return v > 0 ? '+Inf' : '-Inf';
  return (FORMATS[unit] || FORMATS.none)(v);
}

/** The units this module writes; a chart in another unit falls back to 'none'. */
export const UNITS = Object.keys(FORMATS);
