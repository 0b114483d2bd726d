/*
 * A team's own policy file (--policy=FILE): which proxy's it is, told apart by its content, and
 * its reader, one module per proxy behind one interface: read(file, tools) -> {proxy, routes, ...}
 * (lab/policy/<proxy>.mjs). Adding a proxy is one file and one line here.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { nginxPolicy } from './nginx.mjs';
import { envoyPolicy } from './envoy.mjs';

export const readers = [
  // An Envoy bootstrap has static_resources (YAML or JSON); anything else is read as nginx's.
  {
    proxy: 'envoy',
    claims: (text) => /(^|\n)\s*"?static_resources"?\s*:/.test(text),
    read: (file, tools) => envoyPolicy(file, tools),
  },
  { proxy: 'nginx', claims: () => true, read: (file, tools, opts) => nginxPolicy(file, tools, opts) },
];

/** The tools the readers run, from the lab's own install (lab/install.sh): crossplane and Envoy in its venv. */
export const policyTools = (root) => {
  const bin = join(root, '.lab', 'venv', 'bin');
  return {
    python: join(bin, 'python'),
    crossplane: join(bin, 'crossplane'),
    envoy: join(bin, 'envoy'),
    // Where nginx's answers to the lab's probe are kept (lab/policy/nginx/probe.mjs).
    cacheDir: join(root, '.lab', 'cache', 'nginx-probe'),
  };
};

/**
 * Reads a policy file (checked where it enters: a readable regular file); throws with what is
 * wrong and where. `opts`: {includeDirs} (--include-dir's, for nginx).
 */
export function readPolicy(file, tools, opts = {}) {
  if (!existsSync(file) || !statSync(file).isFile()) throw new Error(`--policy=${file}: no such file`);
  const text = readFileSync(file, 'utf8');
  const reader = readers.find((r) => r.claims(text));
  const needs = { nginx: tools.crossplane, envoy: tools.envoy }[reader.proxy];
  if (!existsSync(needs)) throw new Error(`--policy: ${needs} is not installed: './labw setup' installs it`);
  return reader.read(file, tools, opts);
}

const delayWords = (l) => (l.nodelay ? 'nodelay' : l.delay ? `delay=${l.delay}` : 'delay all');
const shareWords = (x) => `${Math.round(x * 1000) / 10} %`;

/** An nginx route's rows: one per limit_req, then one per limit_conn, the route named on the first. */
function nginxRouteRows(policy, r) {
  const route = `${r.server.names[0] ?? r.server.listens[0]?.where ?? '-'} ${r.location}`;
  if (r.answeredBefore)
    return [
      [
        route,
        '-',
        `answered ${r.answeredBefore.code} by return before its limits`,
        '',
        '',
        '',
        '',
        '',
        r.answeredBefore.at,
      ],
    ];
  const from = (z, l, inherited) => `${z.at}, ${l.at}${inherited !== 'own' ? ` (from ${inherited})` : ''}`;
  const req = (r.limits ?? []).map((l) => {
    const z = policy.zones[l.zone];
    const dry = r.dryRun.on ? 'on' : 'off';
    return [
      l.zone,
      z.key,
      z.rate,
      String(l.burst),
      delayWords(l),
      String(r.status.code),
      dry,
      from(z, l, r.limitsFrom),
    ];
  });
  const conn = (r.conns ?? []).map((l) => {
    const z = policy.connZones[l.zone];
    const dry = r.connDryRun.on ? 'on' : 'off';
    return [
      `${l.zone} (limit_conn)`,
      z.key,
      `${l.conn} at once`,
      '',
      '',
      String(r.connStatus.code),
      dry,
      from(z, l, r.connsFrom),
    ];
  });
  return [...req, ...conn].map((row, i) => [i ? '' : route, ...row]);
}

/** An Envoy route's row: the bucket it meets. */
function envoyRouteRow(r) {
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

// The policy table's head per proxy.
const HEADS = {
  nginx: ['route', 'limit', 'key', 'rate', 'burst', 'delay', 'status', 'dry run', 'from'],
  envoy: ['route', 'bucket', 'tokens', 'refill', 'per connection', 'enabled', 'enforced', 'status', 'from'],
};

/** The policy as the model read it, route by route: [head, rows] for a table (every cell shown, not judged). */
export function policyRows(policy) {
  const rows =
    policy.proxy === 'nginx'
      ? policy.routes.flatMap((r) => (r.limits?.length || r.conns?.length ? nginxRouteRows(policy, r) : []))
      : policy.routes.map(envoyRouteRow);
  return [HEADS[policy.proxy], rows];
}
