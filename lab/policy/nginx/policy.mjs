/*
 * A team's nginx config, as the lab reads it: the tree nginx reads (tree.mjs: includes as
 * nginx resolves them, a conf.d file in the installed nginx.conf), the limits it states
 * (read.mjs), and nginx's own word on where requests go and which keys they have
 * (explore.mjs, asking a probe nginx). Returns {proxy, file, tree, zones, connZones, routes,
 * explored, notes, says}; what the model cannot read is refused, naming its file:line.
 */
import { spawnSync } from 'node:child_process';
import { readTree } from './tree.mjs';
import { readNginx } from './read.mjs';
import { explore } from './explore.mjs';

/** The installed nginx's version, [major, minor, patch] (`nginx -v` says it on stderr). */
export function nginxVersion() {
  const r = spawnSync('nginx', ['-v'], { encoding: 'utf8' });
  if (r.error) throw new Error(`--policy: nginx is not installed: './labw setup' installs it`, { cause: r.error });
  const m = /nginx\/(\d+)\.(\d+)\.(\d+)/.exec(`${r.stderr}${r.stdout}`);
  if (!m) throw new Error(`nginx -v said '${`${r.stderr}${r.stdout}`.trim()}': no version`);
  return m.slice(1).map(Number);
}

/** `tools`: {python, nginx: true, cacheDir}; `includeDirs`: --include-dir's [{from, dir}]. */
export function nginxPolicy(file, tools, { includeDirs = [] } = {}) {
  const { tree, notes, fragment } = readTree(file, tools, { includeDirs });
  const read = readNginx(file, tree);
  const version = nginxVersion();
  const policy = { proxy: 'nginx', file, tree, fragment, version, ...read };
  const explored = explore(policy, { python: tools.python, version, cacheDir: tools.cacheDir ?? null });
  // What the file says of itself, for its name (lab/policy/name.mjs): the limited servers' names first.
  const says = [...read.routes.filter((r) => r.limits?.length), ...read.routes].flatMap((r) =>
    r.server.names.map((n) => ({ name: n, what: 'server name', at: r.server.at })),
  );
  return { ...policy, explored, notes: [...notes.map((n) => ({ at: n.at, what: noteWords(n) }))], says };
}

const noteWords = (n) =>
  n.include
    ? `include ${n.include}: read from ${n.from === 'stock' ? "the installed nginx's folder" : n.from} (${n.files.join(', ') || 'no file'})`
    : n.from;
