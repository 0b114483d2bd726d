/*
 * A team's own policy file (--policy=FILE): which proxy's it is, told apart by its content, read
 * by that proxy's module (lab/policy/proxies/: read(file, tools) -> {proxy, routes, ...}).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { proxyClaiming, proxyOf } from './proxies/index.mjs';

/** The tools the readers run, from the lab's own install (lab/install.sh): crossplane and Envoy in its venv. */
export const policyTools = (root) => {
  const bin = join(root, '.lab', 'venv', 'bin');
  return {
    python: join(bin, 'python'),
    crossplane: join(bin, 'crossplane'),
    envoy: join(bin, 'envoy'),
    traefik: join(bin, 'traefik'),
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
  const reader = proxyClaiming(text);
  const needs = reader.tool(tools);
  if (!existsSync(needs)) throw new Error(`--policy: ${needs} is not installed: './labw setup' installs it`);
  return reader.read(file, tools, opts);
}

/** The policy as the model read it, route by route: [head, rows] for a table (every cell shown, not judged). */
export const policyRows = (policy) => proxyOf(policy).table(policy);
