/*
 * Brings one experiment's stack up natively from the topology: render, validate, start in
 * dependency order, wait for readiness; and takes it down again, whatever happened. A root
 * runner starts every service as the user `lab` (privilege.mjs), after its cgroup join.
 */
import { spawnSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdirSync, cpSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { stackServices, portsByService, scrapeTargets } from './topology.mjs';
import { serviceView, renderConfigs, renderArgs, renderText } from './render.mjs';
import { spawnLogged, stopProcess, assertPortsFree, logTail, requireTools } from './procs.mjs';
import { createCgroup, parseCaps, removeWhenEmpty } from './cgroups.mjs';
import { stackUser, serviceLaunch, giveDir, giveTree, reachHint } from './privilege.mjs';

/** What the metrics services' templates need from the topology: scrape targets, process groups. */
export const topologyView = (topology) => ({
  scrape: scrapeTargets(topology),
  groups: Object.keys(topology.services).map((service) => ({ service })),
});

/**
 * A service's folder, data and rendered configs, ready to start: {prefix, view, launch}. Its
 * `prepare` step runs (as the runner) and its `validate` step (as the service) checks the configs.
 */
function prepareService(s, { root, env, topology, policy, targets, ports, tmpDir, logDir, user }) {
  const prefix = join(tmpDir, s.name);
  // The service's own folder, handed to it below: made fresh, so that root never writes
  // (renders) into a folder where a service of an earlier start could have left a link.
  if (user) rmSync(prefix, { recursive: true, force: true });
  mkdirSync(prefix, { recursive: true });
  const data = s.data ? join(root, '.lab', 'data', s.name) : undefined;
  if (data) mkdirSync(data, { recursive: true });
  if (data && user) giveTree(user, data);
  const base = serviceView({
    policy,
    targets,
    ports,
    service: s,
    prefix,
    root,
    native: true,
    extra: { ...topologyView(topology), data },
  });
  const view = { ...base, config: renderConfigs(root, s, base, prefix) };
  if (Object.keys(s.configs).length) cpSync(prefix, join(logDir, '..', 'config', s.name), { recursive: true });
  // Its configs stay root's (read-only to it); the folder is its own: pid, temp and cache files.
  if (user) giveDir(user, prefix);
  // A build the service would otherwise make in the checkout, by the runner (privilege.mjs).
  if (s.prepare) run(s, 'prepare', renderArgs(s.prepare, view), root, env);
  const launch = (argv, procsFiles) => serviceLaunch({ argv, env, user, procsFiles, home: prefix });
  if (s.validate) {
    const shown = renderArgs(s.validate, view);
    const checked = launch(shown);
    validate(s, checked.argv, root, checked.env, shown);
  }
  return { prefix, view, launch };
}

/**
 * A service's cgroup caps, or null for none. A service that declares caps gets a cgroup even
 * when the level caps nothing: its CPU and memory are then accounted the same way, which is what
 * the model's costs need. A slowed service (`--stack-cpu`) gets a cgroup capped at its share of a
 * core, its CPU cap replacing any its level gave.
 */
function capsOf(s, view, slowed) {
  const declared = s.caps ? renderText(s.caps, view).trim() : null;
  if (!slowed[s.name]) return declared;
  const others = (declared || '').split(/\s+/).filter((c) => c && !c.startsWith('cpu='));
  return [`cpu=${slowed[s.name]}%`, ...others].join(' ');
}

/** Starts a prepared service in its cgroup, waits until it is ready and POSTs its init URLs; returns its process. */
function startService(s, { prefix, view, launch }, { root, logDir, state, user, slowed }) {
  const caps = capsOf(s, view, slowed);
  let cgroup = null;
  if (caps !== null) {
    cgroup = createCgroup(`lab-${process.pid}-${s.name}`, parseCaps(caps));
    state.addCgroups(cgroup.paths);
  }
  // Joined to its cgroup (as root), then dropped to the service user, then exec'd: one pid.
  const { argv, env: serviceEnv } = launch(renderArgs(s.command, view), cgroup?.procsFiles);
  const proc = spawnLogged(s.name, argv, { cwd: root, env: serviceEnv, logFile: join(logDir, `${s.name}.log`) });
  Object.assign(proc, { user, root, cgroup, caps, prefix });
  state.add(proc);
  return proc;
}

/** Waits until a started service answers its readiness URL, then POSTs its init URLs; returns the readiness URL. */
async function readyService(s, proc, view) {
  const ready = renderText(s.ready, view);
  await waitReady(proc, ready);
  for (const url of s.init.map((u) => renderText(u, view))) {
    const res = await fetch(url, { method: 'POST', signal: AbortSignal.timeout(10_000) });
    if (!res.ok) throw new Error(`${s.name}: POST ${url} after start-up answered ${res.status} ${await res.text()}`);
  }
  return ready;
}

/**
 * Starts a profile's services in dependency order, each ready before the next: {profile, procs,
 * baseUrls, readyUrls, died (the first process that exits unasked)}. On any failure, what started
 * is stopped and the error thrown.
 */
export async function startStack({
  root,
  env,
  topology,
  profile,
  policy,
  slowed = {},
  targets,
  tmpDir,
  logDir,
  state,
  log = () => {},
}) {
  const services = stackServices(topology, profile);
  const ports = portsByService(topology);
  // null unless the runner is root; then every service runs as this user (privilege.mjs).
  const user = stackUser(root, log);
  requireTools([...services.map((s) => s.command[0]), ...(user ? ['setpriv'] : [])], env);
  await assertPortsFree(services.flatMap((s) => Object.values(s.ports).map((port) => ({ port, service: s.name }))));
  mkdirSync(logDir, { recursive: true });
  const stack = { profile, procs: [], baseUrls: {}, readyUrls: {} };
  const where = { root, env, topology, policy, targets, ports, tmpDir, logDir, user, state, slowed };
  try {
    for (const s of services) {
      const prepared = prepareService(s, where);
      const proc = startService(s, prepared, where);
      stack.procs.push(proc);
      stack.readyUrls[s.name] = await readyService(s, proc, prepared.view);
      stack.baseUrls[s.name] = `${s.scheme ?? 'http'}://127.0.0.1:${s.ports.http}`;
      log(`${s.name} ready at ${stack.baseUrls[s.name]}`);
    }
  } catch (e) {
    await stopStack(stack);
    throw e;
  }
  // Resolves with the first process that exits while nobody asked it to.
  stack.died = Promise.race(
    stack.procs.map((p) => p.exitPromise.then(() => (p.expectedExit ? new Promise(() => {}) : p))),
  );
  return stack;
}

/** Runs a service's `prepare` step as the runner itself; an error names the step and its output. */
function run(service, what, argv, cwd, env) {
  const r = spawnSync(argv[0], argv.slice(1), { cwd, env, encoding: 'utf8', timeout: 120_000 });
  if (r.error) throw new Error(`${service.name}: cannot run '${argv[0]}' (its ${what} step): ${r.error.message}`);
  if (r.status !== 0)
    throw new Error(`${service.name}: its ${what} step '${argv.join(' ')}' failed:\n${(r.stderr + r.stdout).trim()}`);
}

/** Runs `argv` (perhaps behind setpriv); messages name `shown`, the validation command itself. */
function validate(service, argv, cwd, env, shown = argv) {
  const r = spawnSync(argv[0], argv.slice(1), { cwd, env, encoding: 'utf8', timeout: 60_000 });
  if (r.error) throw new Error(`${service.name}: cannot run '${argv[0]}' to validate its config: ${r.error.message}`);
  if (r.status !== 0) {
    throw new Error(`${service.name}: config rejected by '${shown.join(' ')}':\n${(r.stderr + r.stdout).trim()}`);
  }
}

/** Resolves once `url` answers 2xx; throws with the log's tail if the process exits or the time runs out. */
export async function waitReady(proc, url, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (proc.exited) {
      const as = proc.user ? `; it ran as user ${proc.user.name}${reachHint(proc.user, proc.root)}` : '';
      const why = `${proc.exited.error || `code ${proc.exited.code}, signal ${proc.exited.signal}`}${as}`;
      throw new Error(
        `${proc.name} exited during start-up (${why}); last lines of ${proc.logFile}:\n${logTail(proc.logFile)}`,
      );
    }
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      if (res.ok) return;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline)
      throw new Error(
        `${proc.name} not ready at ${url} after ${timeoutMs / 1000} s; log: ${proc.logFile}\n${logTail(proc.logFile)}`,
      );
    await sleep(100);
  }
}

/**
 * Stops in reverse start order, so proxies go before the servers behind them; a capped
 * service's cgroup goes once its last process is reaped (the kernel refuses it before).
 */
export async function stopStack(stack) {
  for (const p of [...stack.procs].reverse()) {
    await stopProcess(p);
    if (!p.cgroup) continue;
    const left = await removeWhenEmpty(p.cgroup.paths);
    if (left.length) console.error(`${p.name}: cgroup(s) not removed: ${left.join(', ')}`);
  }
}
