/*
 * A policy's experiment name: one name per experiment everywhere (its history, its services, its
 * pages), so two teams' files must not meet under one. The file's name where it names the policy;
 * where it names only the proxy (nginx.conf, envoy.yaml, default.conf), what the file says of
 * itself (a server name, a listener, a virtual host: the reader's `says`), else its folder's name;
 * `--name` over all of them. Which one it is is said.
 */
import { basename, dirname, resolve } from 'node:path';

/** A knob-safe, path-safe name: lower case letters, digits and dashes. */
export const slug = (text) =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '') || 'root';

// Words that say which proxy or which kind of file, not whose policy: a name made only of them is no name.
const STOCK_WORDS = new Set(
  'nginx envoy haproxy traefik default defaults config configs conf confd d bootstrap main site sites enabled available server proxy front app example sample template local base yaml yml json tmpl j2 prod production dev http https ssl tls etc policies policy fixtures test tests tmp root lab'.split(
    ' ',
  ),
);
const isStock = (name) => name.split('-').every((w) => STOCK_WORDS.has(w) || /^\d+$/.test(w));

// A server name or listener that every sample has: no more a name than the file's.
const GENERIC_SAYS =
  /^(_|localhost|default|listener[-_]?\d*|local[-_]service|backend|service|example\.(com|org|net)|www\.example\.(com|org|net))$/i;

/**
 * The experiment name of a policy read from `file` (`says`: [{name, what, at}] in the file's
 * order) and why: {name, from}. `given`: --name's value, checked where it enters.
 */
export function policyName(file, says = [], given = null) {
  if (given !== null) {
    if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(given))
      throw new Error(`--name=${given}: lower-case letters, digits and dashes, starting with a letter or digit`);
    return { name: given, from: '--name' };
  }
  const own = slug(basename(file).replace(/\.[^.]+$/, ''));
  if (!isStock(own)) return { name: own, from: `its file name, ${basename(file)}` };
  const said = says.find((s) => !GENERIC_SAYS.test(s.name) && /[a-z0-9]/i.test(s.name) && !isStock(slug(s.name)));
  if (said) return { name: slug(said.name), from: `its ${said.what} ${said.name} (${said.at})` };
  const folder = slug(basename(dirname(resolve(file))));
  if (!isStock(folder)) return { name: folder, from: `its folder, ${basename(dirname(resolve(file)))}` };
  throw new Error(
    `${file}: neither its file name, nor what it says of itself (${says.map((s) => s.name).join(', ') || 'no server name or listener'}), nor its folder says whose policy it is: name it with --name=NAME`,
  );
}
