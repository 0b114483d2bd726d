/*
 * nginx's own word on a team's config: which location a request reaches, which location's
 * limits count it, which key it has in each zone, what it is answered, and which file it would
 * be served from. The lab does not reimplement location matching, map, geo, realip, try_files or
 * error_page: it asks nginx. The probe config (renderProbe) is the run's tree with every limit a
 * dry run and every location adding its id to a trail; a child process (probe-run.mjs) starts
 * it on sockets in a scratch folder, sends the requests, stops it; the scratch folder goes.
 * Results are kept by the hash of what was asked (.lab/cache/nginx-probe/), so that every command
 * reading the same policy asks nginx once.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { d } from './move.mjs';
import { assemble, build, tempPaths } from './render.mjs';
import { dropTo, serviceUser } from '../../stack/privilege.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
// One field per column of the probe's log line, in order; the zones' keys follow.
const FIELDS = ['probe', 'status', 'via', 'limitReq', 'limitConn', 'filename'];
const DRY = new Set(['limit_req_dry_run', 'limit_conn_dry_run']);

/** The tree without the file's dry-run settings: the probe's own (every limit a dry run) reach everywhere. */
const noDryRun = (dirs) =>
  dirs.flatMap((x) => (DRY.has(x.directive) ? [] : [x.block ? { ...x, block: noDryRun(x.block) } : x]));

/** The key columns of the log: every zone's key, limit_req's then limit_conn's, in the policy's order. */
export const keyColumns = (policy) => [
  ...Object.values(policy.zones).map((z) => ({ zone: z.name, conn: false, key: z.key })),
  ...Object.values(policy.connZones).map((z) => ({ zone: z.name, conn: true, key: z.key })),
];

/**
 * The first file each try_files of the policy tests (`$uri`, `/$file`, ...): logged as nginx
 * expands it, so that the file a 404 asked for can be made where try_files looks.
 */
export const tryColumns = (policy) => [
  ...new Set(policy.routes.map((r) => r.tryFiles?.[0]).filter((a) => a && !a.startsWith('@') && !a.startsWith('='))),
];

/** The probe's config text for `policy` in `dir`: every place a socket (`socketOf(place)`). */
export function renderProbe(policy, { dir, python, version, socketOf }) {
  const backend = `unix:${join(dir, 'backend.sock')}`;
  const keys = keyColumns(policy).map((k) => k.key);
  const built = assemble(
    { ...policy, tree: noDryRun(policy.tree) },
    { listenAt: (place) => `unix:${socketOf(place)}`, backend, prefix: dir, version },
    {
      main: (main) => [
        d('error_log', [join(dir, 'error.log'), 'warn']),
        ...main.map((x) => (x.directive === 'worker_processes' ? d('worker_processes', ['1']) : x)),
        ...(main.some((x) => x.directive === 'worker_processes') ? [] : [d('worker_processes', ['1'])]),
      ],
      serverExtra: () => [],
      // Each location the request passes adds its id: the trail nginx took, in order.
      locationExtra: (x) => [d('set', ['$lab_via', `\${lab_via}${x.routeId},`])],
      http: () => [
        ...tempPaths(dir),
        d('limit_req_dry_run', ['on']),
        d('limit_conn_dry_run', ['on']),
        // Tab-separated: a tab inside a value is escaped (\x09), so the columns stay apart.
        d('log_format', [
          'lab_probe',
          [
            '$http_x_lab_probe',
            '$status',
            '$lab_via',
            '$limit_req_status',
            '$limit_conn_status',
            '$request_filename',
            ...keys,
            '$upstream_addr',
            '$document_root',
            ...tryColumns(policy),
          ].join('\t'),
        ]),
        d('access_log', [join(dir, 'probe.log'), 'lab_probe']),
        // The lab's backend, inside the probe's nginx: every pass answers 200 here.
        d(
          'server',
          [],
          [
            d('listen', [backend]),
            d('access_log', ['off']),
            d('location', ['/'], [d('set', ['$lab_via', '']), d('return', ['200', 'lab backend\n'])]),
          ],
        ),
      ],
    },
  );
  return {
    text: build(python, built.tree, `# ${policy.file}, as the lab's probe asks nginx about it`),
    clientHeader: built.clientHeader,
  };
}

/**
 * One log line as {probe, status, via: [route ids], limitReq, limitConn, filename (relative to the
 * probe's folder where it is inside it), keys: [value per key column]}.
 */
function parseLine(line, dir, nKeys) {
  const f = line.split('\t');
  const rest = f.slice(FIELDS.length + nKeys);
  const row = Object.fromEntries(FIELDS.map((k, i) => [k, f[i]]));
  return {
    probe: row.probe,
    status: Number(row.status),
    via: row.via === '-' ? [] : row.via.split(',').filter(Boolean).map(Number),
    limitReq: row.limitReq === '-' ? null : row.limitReq,
    limitConn: row.limitConn === '-' ? null : row.limitConn,
    filename: row.filename === '-' ? null : insideOr(dir, row.filename),
    keys: f.slice(FIELDS.length, FIELDS.length + nKeys).map((v) => (v === '-' ? '' : v)),
    // Whether its answer came from the backend (a limit_conn case needs one to hold it open).
    proxied: Boolean(rest[0] && rest[0] !== '-'),
    docroot: rest[1] && rest[1] !== '-' ? insideOr(dir, rest[1]) : null,
    // Per try_files first argument (tryColumns), as nginx expanded it for the request.
    tries: rest.slice(2),
  };
}

/** A path relative to `dir` where it is inside it (with a folder's trailing slash kept), else as it is. */
const insideOr = (dir, path) => (path.startsWith(`${dir}/`) ? path.slice(dir.length + 1) : path);

/** What nginx said when it refused the probe's config, with the file's own file:line of the directive it names. */
function refusal(policy, said) {
  const line = said.split('\n').find((l) => /\[emerg\]|\[alert\]/.test(l)) ?? said.split('\n').pop();
  const msg = line.replace(/^.*?\[(emerg|alert)\] (\d+#\d+: )?/, '').replace(/ in \S+:\d+$/, '');
  const directive = /"([a-z_0-9]+)"/.exec(msg)?.[1];
  const at = directive ? findAt(policy.tree, directive) : null;
  const module = /^unknown directive/.test(msg) ? ': a module the installed nginx lacks' : '';
  return `nginx refuses ${policy.file} as the lab runs it: ${msg}${at ? ` (${at})` : ''}${module}`;
}

const findAt = (dirs, name) => {
  for (const x of dirs) {
    if (x.directive === name) return x.at;
    const inner = x.block ? findAt(x.block, name) : null;
    if (inner) return inner;
  }
  return null;
};

/**
 * The files a plan serves from disk, made in `dir` (paths relative to it); one whose path another
 * needs as a folder (or the other way round) is left out: nginx answers the folder's request then.
 */
export function makeFiles(dir, files) {
  for (const f of files) {
    try {
      mkdirSync(dirname(join(dir, f)), { recursive: true });
      if (!existsSync(join(dir, f))) writeFileSync(join(dir, f), 'served by the lab\n');
    } catch {
      /* a path both a file and a folder: the first one made stands */
    }
  }
}

/** Kills an nginx a killed probe left behind (by the pid file in its folder). */
function killLeft(dir) {
  const pidFile = join(dir, 'nginx.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8'));
  try {
    if (pid > 1) process.kill(pid, 'SIGKILL');
  } catch {
    /* gone already */
  }
}

/** A folder and what is in it handed to `user` (the probe's nginx runs as the services do). */
function handOver(dir, user) {
  if (!user) return;
  chownSync(dir, user.uid, user.gid);
  for (const f of readdirSync(dir, { recursive: true })) chownSync(join(dir, f), user.uid, user.gid);
}

// The files whose code makes a probe's answer (kept answers are keyed by them too).
const PROBE_CODE = ['probe.mjs', 'probe-run.mjs'].map((f) => fileURLToPath(new URL(f, import.meta.url)));

/**
 * Asks nginx: each of `requests` ({id, place, tls, host, path, headers}) sent to the probe's
 * config, with `files` (paths relative to its folder) there to serve; returns {rows: {id: row}}.
 * `cacheDir`: where answers are kept, or null.
 */
export function runProbe(policy, requests, { python, version, files = [], cacheDir = null }) {
  const places = [...new Set(requests.map((r) => r.place))];
  const probeDir = mkdtempSync(join(tmpdir(), 'lab-nginx-probe-'));
  try {
    const socketOf = (place) => join(probeDir, `p${places.indexOf(place)}.sock`);
    const { text } = renderProbe(policy, { dir: probeDir, python, version, socketOf });
    // The probe's own code is part of what was asked: an answer read by other code is not kept.
    const code = PROBE_CODE.map((f) => readFileSync(f, 'utf8'));
    const asked = JSON.stringify({ text: text.split(probeDir).join('$DIR'), requests, files, version, code });
    const hash = createHash('sha256').update(asked).digest('hex').slice(0, 32);
    const cached = cacheDir && join(cacheDir, `${hash}.json`);
    if (cached && existsSync(cached)) return JSON.parse(readFileSync(cached, 'utf8'));
    writeFileSync(join(probeDir, 'nginx.conf'), text);
    makeFiles(probeDir, files);
    const out = probeOnce(
      policy,
      probeDir,
      requests.map((r) => ({ ...r, socket: socketOf(r.place) })),
    );
    const unanswered = requests.filter((r) => !out.rows[r.id]).map((r) => r.id);
    if (unanswered.length)
      throw new Error(
        `the lab's nginx probe got no answer to ${unanswered.length} of its ${requests.length} requests (${unanswered.slice(0, 5).join(', ')}): a lab bug, not the config's`,
      );
    if (cached) {
      mkdirSync(cacheDir, { recursive: true });
      writeFileSync(cached, JSON.stringify(out));
    }
    return out;
  } finally {
    killLeft(probeDir);
    rmSync(probeDir, { recursive: true, force: true });
  }
}

/** One child process's probe in `dir`: its log read into rows by probe id. */
function probeOnce(policy, dir, requests) {
  const user = serviceUser();
  handOver(dir, user);
  statSync(dir);
  const r = spawnSync(process.execPath, [join(HERE, 'probe-run.mjs')], {
    input: JSON.stringify({ dir, requests, asUser: user ? dropTo(user, []) : null }),
    encoding: 'utf8',
    timeout: 120_000,
    maxBuffer: 256 * 1024 * 1024,
  });
  if (r.status !== 0 || !r.stdout)
    throw new Error(`the nginx probe failed: ${(r.stderr || r.error?.message || '').trim()}`);
  const out = JSON.parse(r.stdout);
  if (out.error) throw new Error(refusal(policy, out.error));
  const rows = {};
  for (const line of out.log.split('\n').filter(Boolean)) {
    const row = parseLine(line, dir, keyColumns(policy).length);
    if (row.probe && row.probe !== '-') rows[row.probe] = row;
  }
  return { rows };
}
