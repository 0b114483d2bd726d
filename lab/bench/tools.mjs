/*
 * What the benches share: wrk and k6 run once against a URL with their figures read back, k6
 * measured from /proc (its CPU and peak memory), and the machine a bench ran on, for its table.
 * A benchmark, not a test: a bench fails only when a run itself fails.
 */
import { spawn, spawnSync, execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { statFields, TICKS_PER_S } from '../stack/cpu.mjs';
import { wrkArgs, parseWrk } from '../lib/wrk.mjs';

const wrkCall = (env, url, connections, seconds, { script, body, threads = 2, timeoutS = 5 } = {}) => [
  'wrk',
  wrkArgs(url, connections, seconds, { threads, timeoutS, script }),
  { env: { ...env, LAB_BODY: body || '' }, encoding: 'utf8' },
];
const wrkResult = (url, failed, stdout, stderr) => {
  if (failed) throw new Error(`wrk ${url}: ${stderr || stdout}`);
  return { ...parseWrk(stdout), raw: stdout };
};

/** wrk against url; `script` (a Lua file) and `body` (a file it posts, as LAB_BODY) are optional. */
export function wrk(env, url, connections, seconds, opts = {}) {
  const r = spawnSync(...wrkCall(env, url, connections, seconds, opts));
  return wrkResult(url, r.status !== 0, r.stdout, r.stderr);
}

/** The same, without blocking: a promise of its figures (two loads at once). */
export function wrkAsync(env, url, connections, seconds, opts = {}) {
  return new Promise((resolve, reject) => {
    execFile(...wrkCall(env, url, connections, seconds, opts), (err, stdout, stderr) => {
      try {
        resolve(wrkResult(url, err, stdout, stderr || err?.message));
      } catch (e) {
        reject(e);
      }
    });
  });
}

/** k6 running `script` with URL, VUS and DURATION for `seconds`; its summary is written to `out`. */
export function k6(env, script, url, connections, seconds, out) {
  const r = spawnSync(
    'k6',
    [
      'run',
      '--quiet',
      '-e',
      `URL=${url}`,
      '-e',
      `VUS=${connections}`,
      '-e',
      `DURATION=${seconds}s`,
      '-e',
      `OUT=${out}`,
      script,
    ],
    { env, encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error(`k6 ${url}: ${r.stderr.slice(-2000)}`);
  const m = JSON.parse(readFileSync(out, 'utf8')).metrics;
  return {
    rps: Math.round(m.http_reqs.values.count / seconds),
    failed: m.http_req_failed.values.rate,
    p99: m.http_req_duration.values['p(99)'],
  };
}

/** k6's CPU seconds (utime + stime) and peak RSS, polled from /proc until it exits. */
export function runMeasured(env, args) {
  return new Promise((resolve, reject) => {
    const k6 = spawn('k6', args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    k6.stderr.on('data', (d) => {
      err = (err + d).slice(-2000);
    });
    let cpuS = 0;
    let rssKiB = 0;
    const poll = () => {
      try {
        const s = statFields(k6.pid);
        if (s) cpuS = s.ticks / TICKS_PER_S;
        rssKiB = Math.max(
          rssKiB,
          Number((/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${k6.pid}/status`, 'utf8')) || [])[1] || 0),
        );
      } catch {
        /* exited */
      }
    };
    const timer = setInterval(poll, 100);
    k6.on('exit', (code) => {
      clearInterval(timer);
      if (code !== 0) reject(new Error(`k6 ${args.join(' ')}: code ${code}: ${err}`));
      else resolve({ cpuS, rssMiB: rssKiB / 1024 });
    });
  });
}

/** The bench's figures in bench.json: wrk's without its raw output. */
export const withoutRaw = (results) => results.map(({ wrk: { raw, ...w }, ...r }) => ({ ...r, wrk: w }));

/** The CPU model and core count, printed with every bench's table. */
export function machine() {
  const cpu = (/model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8')) || [])[1] || 'unknown CPU';
  return `${cpu.trim()}, ${spawnSync('nproc', { encoding: 'utf8' }).stdout.trim()} cores`;
}
