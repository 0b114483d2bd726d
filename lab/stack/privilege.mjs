/*
 * Least privilege, natively. A runner that is root (CI) needs root for one thing only: putting a
 * capped service into its cgroup. So every service it starts runs as the system user `lab`
 * (made by lab/install.sh), dropped at exec time with setpriv (util-linux): the cgroup join is
 * done first, still as root, by the service's own pre-exec shell (cgroups.mjs wrapInCgroup:
 * nothing of the service runs outside its cgroup, not even an nginx worker forked at once),
 * which then execs setpriv, which drops to `lab` and execs the service; one pid throughout.
 * Its config validation (`nginx -t` makes nginx's temp and cache folders) runs as `lab` too.
 *
 * What a service may write: its own folder of the run (`{{prefix}}`: nginx's pid, temp and cache
 * folders), made fresh and handed to `lab` after its configs are rendered into it (the configs
 * stay root's: read-only to the service), and its data folder (.lab/data/<service>), handed over
 * whole. Logs are opened by the runner and passed as descriptors, so nothing there changes.
 * Everything else (the checkout, .lab/, the run's folders) stays root's and read-only to it; a
 * build that a service would do in the checkout is the topology's `prepare`, run by the runner
 * itself (start-stop.mjs), so root never runs code `lab` could have written.
 *
 * A runner that is not root (a developer's machine) changes nothing: services run as the
 * invoking user, as they always did.
 */
import { spawnSync } from 'node:child_process';
import { lchownSync, lstatSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { wrapInCgroup } from './cgroups.mjs';

export const SERVICE_USER = 'lab';

/** {name, uid, gid, home} of `name` from a passwd(5) text, or null. */
export function passwdEntry(text, name) {
  for (const line of text.split('\n')) {
    const f = line.split(':');
    if (f[0] === name && f.length >= 7) return { name, uid: Number(f[2]), gid: Number(f[3]), home: f[5] };
  }
  return null;
}

function lookUp(name) {
  try {
    const found = passwdEntry(readFileSync('/etc/passwd', 'utf8'), name);
    if (found) return found;
  } catch {
    /* no /etc/passwd: ask NSS */
  }
  const r = spawnSync('getent', ['passwd', name], { encoding: 'utf8' });
  return r.status === 0 ? passwdEntry(r.stdout, name) : null;
}

/**
 * Whom the services run as: null when the runner is not root (they run as the runner), else
 * the `lab` user. A root runner without it is refused, naming the fix, rather than running its
 * services as root.
 */
export function serviceUser({ uid = process.getuid?.(), name = SERVICE_USER, lookup = lookUp } = {}) {
  if (uid !== 0) return null;
  const user = lookup(name);
  if (!user)
    throw new Error(
      `the lab runs as root, and its services run as the system user '${name}', which does not exist: run './labw setup' (lab/install.sh makes it) as root`,
    );
  if (user.uid === 0)
    throw new Error(`the user '${name}' the services run as has uid 0: it must be an unprivileged user`);
  return user;
}

/**
 * setpriv's argv that runs `argv` as `user`: real and effective uid and gid, no supplementary
 * groups, no capabilities (none inheritable, an empty bounding set), and no_new_privs, so that
 * no setuid program it might run gets root back.
 */
export const dropTo = (user, argv) => [
  'setpriv',
  `--reuid=${user.uid}`,
  `--regid=${user.gid}`,
  '--clear-groups',
  '--inh-caps=-all',
  '--bounding-set=-all',
  '--no-new-privs',
  '--',
  ...argv,
];

/**
 * How a service is started: {argv, env}. With a `user` (a root runner), dropped to it by
 * setpriv, and its HOME its own folder (root's is not readable to it); with `procsFiles` (a
 * capped service), joined to its cgroup first, as root. Without a user, the argv as given.
 */
export function serviceLaunch({ argv, env, user = null, procsFiles = null, home = null }) {
  let out = user ? dropTo(user, argv) : argv;
  if (procsFiles?.length) out = wrapInCgroup(out, procsFiles);
  const outEnv = user ? { ...env, USER: user.name, LOGNAME: user.name, ...(home ? { HOME: home } : {}) } : env;
  return { argv: out, env: outEnv };
}

/** Hands the folder `dir` itself to `user` (not what is in it): the service may add files there. */
export function giveDir(user, dir) {
  lchownSync(dir, user.uid, user.gid);
}

/**
 * Hands `dir` and everything under it to `user` (a store's data, kept between runs, perhaps
 * written by root before the lab dropped privileges). Links are chowned themselves, never
 * followed, so a link the service left there cannot turn this onto a file outside.
 */
export function giveTree(user, dir) {
  const walk = (path) => {
    const st = lstatSync(path);
    if (st.uid !== user.uid || st.gid !== user.gid) lchownSync(path, user.uid, user.gid);
    if (st.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
  };
  walk(dir);
}

/**
 * Why `user` might not reach `path` (for the message of a service that died at start-up), or
 * ''. It has no supplementary groups, so a folder on the way must let it search: as owner, as
 * group, or as other.
 */
export function reachHint(user, path) {
  for (let p = path; ; p = dirname(p)) {
    try {
      const st = statSync(p);
      const bit = st.uid === user.uid ? 0o100 : st.gid === user.gid ? 0o010 : 0o001;
      if (st.isDirectory() && !(st.mode & bit))
        return `; user ${user.name} cannot enter ${p} (mode ${(st.mode & 0o777).toString(8)}): the checkout must be readable to it`;
    } catch {
      /* gone: nothing to say */
    }
    if (p === dirname(p)) return '';
  }
}

/**
 * Whom a stack rooted at `root` runs as: serviceUser(), unless that user cannot enter the
 * checkout (a clone under /root, mode 700): then the services can read neither their code nor
 * their configs, and the least privilege that works is the runner's own. It is said, with the
 * folder that blocks and the fix, and the run goes on.
 */
export function stackUser(root, say = () => {}, options = {}) {
  const user = serviceUser(options);
  if (!user) return null;
  const blocked = reachHint(user, root);
  if (!blocked) return user;
  say(
    `WARNING: the services run as root${blocked}; move the checkout, or open that folder to others (chmod o+x), to run them as ${user.name}`,
  );
  return null;
}
