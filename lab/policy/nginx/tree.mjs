/*
 * The directive tree nginx reads for a team's file: crossplane's parse of each file (the pinned
 * PyPI package, lab/requirements.txt), each include spliced in where it stands, as nginx resolves
 * it, every directive with its file:line.
 *
 * Where an include is read from:
 *   - a path relative to the config's folder, or inside it: from there (nginx reads relative
 *     paths from its main file's folder);
 *   - nginx's stock files (mime.types, the *_params, fastcgi.conf, proxy_params, snippets/,
 *     modules-enabled/), named relative or under the installed nginx's folder (/etc/nginx), when
 *     the config's folder has none of its own: from the installed nginx's folder;
 *   - a path under a folder given with --include-dir=FROM=DIR: from DIR;
 *   - anything else outside the folder: refused, naming the include and the flag that reads it.
 * A file made to be included in nginx's http block (a conf.d or sites-enabled file: server and
 * zones, no http block) is read as the installed nginx.conf reads it: in its http block.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';

// The installed nginx's configuration folder (Debian's --conf-path is /etc/nginx/nginx.conf).
export const STOCK_DIR = '/etc/nginx';
// nginx's stock files, as a path below its folder.
const STOCK_FILE =
  /^(mime\.types|fastcgi_params|fastcgi\.conf|uwsgi_params|scgi_params|proxy_params|koi-utf|koi-win|win-utf|snippets\/[^/]+|modules-enabled\/[^/]+)$/;
// Directives that belong in an http block: a file whose top level has them is made to be included there.
const HTTP_LEVEL = new Set(['server', 'upstream', 'map', 'geo', 'limit_req_zone', 'limit_conn_zone', 'split_clients']);

// crossplane's own parse (its library: the command line cannot skip the context check that an
// included file, read on its own, fails: its directives belong where the include stands).
const PARSE =
  'import crossplane, json, sys; print(json.dumps(crossplane.parse(sys.argv[1], single=True, check_ctx=sys.argv[2] == "1")))';

/** One file's directive tree by crossplane, without following its includes. */
function parseOne(python, file, checkCtx) {
  let out;
  try {
    out = execFileSync(python, ['-c', PARSE, file, checkCtx ? '1' : '0'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      maxBuffer: 256 * 1024 * 1024,
    });
  } catch (e) {
    const said = String(e.stderr || e.message)
      .trim()
      .split('\n')
      .pop();
    throw new Error(`crossplane could not read ${file}: ${said}`, { cause: e });
  }
  const parsed = JSON.parse(out);
  const errors = parsed.config.flatMap((c) => c.errors.map((x) => ({ ...x, file: x.file ?? c.file })));
  // crossplane words them as nginx does, most with the file:line at their end.
  if (errors.length)
    throw new Error(
      errors.map((x) => (x.error.includes(`${x.file}:`) ? x.error : `${x.file}:${x.line}: ${x.error}`)).join('\n'),
    );
  return parsed.config[0].parsed;
}

/** The files a path names: itself, or those its `*` in the last part matches (sorted, as nginx's glob). */
function globbed(path, at, pattern) {
  if (/[?[\]{}]/.test(path) || dirname(path).includes('*'))
    throw new Error(`${at}: include ${pattern}: only a '*' in the file name is read`);
  if (!basename(path).includes('*')) return existsSync(path) ? [path] : [];
  const re = new RegExp(
    `^${basename(path)
      .split('*')
      .map((p) => p.replace(/[.+^$()|\\]/g, '\\$&'))
      .join('.*')}$`,
  );
  const dir = dirname(path);
  return existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => re.test(f) && !f.startsWith('.') && statSync(join(dir, f)).isFile())
        .sort()
        .map((f) => join(dir, f))
    : [];
}

/** Is `file` inside `folder` (both resolved, symlinks too)? */
const inside = (folder, file) => {
  const rel = relative(realpathSync(folder), realpathSync(file));
  return rel && !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel);
};

/** The stock file a path names below nginx's folder ('mime.types', 'snippets/x.conf'), or null. */
const stockName = (rest) => (STOCK_FILE.test(rest) ? rest : null);

/**
 * Where an include is read from: {files, from}, `from` saying which rule took it. `dirs`:
 * --include-dir's [{from, dir}]. Throws naming the include and what would make it readable.
 */
export function includeFiles(pattern, { folder, dirs = [], stockDir = STOCK_DIR, at }) {
  const stock = (rest) => ({ files: globbed(join(stockDir, rest), at, pattern), from: 'stock' });
  if (!isAbsolute(pattern)) {
    const own = globbed(join(folder, pattern), at, pattern);
    if (own.some((f) => !inside(folder, f)))
      throw new Error(
        `${at}: include ${pattern} is outside the config's folder (${folder}): the lab reads only what it was pointed at; --include-dir=FROM=DIR reads an absolute folder from DIR`,
      );
    if (own.length || !stockName(pattern)) return { files: own, from: 'folder', wanted: join(folder, pattern) };
    return stock(pattern);
  }
  const mapped = dirs.find((d) => pattern === d.from || pattern.startsWith(`${d.from.replace(/\/$/, '')}/`));
  const under = (prefix) => pattern.slice(prefix.replace(/\/$/, '').length + 1);
  if (mapped) {
    const files = globbed(join(mapped.dir, under(mapped.from)), at, pattern);
    if (files.length || !(pattern.startsWith(`${stockDir}/`) && stockName(under(stockDir))))
      return {
        files,
        from: `--include-dir=${mapped.from}=${mapped.dir}`,
        wanted: join(mapped.dir, under(mapped.from)),
      };
  }
  if (pattern.startsWith(`${stockDir}/`) && stockName(under(stockDir))) return stock(under(stockDir));
  const files = globbed(pattern, at, pattern);
  if (files.length && files.every((f) => inside(folder, f))) return { files, from: 'folder' };
  throw new Error(
    `${at}: include ${pattern} is outside the config's folder (${folder}) and not one of nginx's stock files: --include-dir=${dirname(pattern.replace(/\*.*$/, 'x'))}=DIR reads it from DIR`,
  );
}

/** How a file is named in a directive's `at`: relative to the config's folder, else its absolute path. */
const nameOf = (folder, path) => {
  const rel = relative(folder, path);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path;
};

/**
 * The tree of `path` with its includes spliced in; `ctx`: {python, folder, dirs, stockDir,
 * seen (the files being read, outermost first), checkCtx, notes (what was read from where)}.
 */
function walk(path, ctx) {
  const name = nameOf(ctx.folder, path);
  const splice = (dirs) =>
    dirs.flatMap((d) => {
      const at = `${name}:${d.line}`;
      // Comments (crossplane keeps them as '#' directives) say nothing to nginx.
      if (d.directive === '#') return [];
      if (d.directive !== 'include') {
        return [{ directive: d.directive, args: d.args, at, ...(d.block ? { block: splice(d.block) } : {}) }];
      }
      const got = includeFiles(d.args[0], { ...ctx, at });
      if (!got.files.length && !d.args[0].includes('*'))
        throw new Error(`${at}: include ${d.args[0]}: ${got.wanted ?? d.args[0]} is not there`);
      for (const f of got.files)
        if (ctx.seen.includes(f)) throw new Error(`${at}: include ${d.args[0]} includes itself`);
      if (got.from !== 'folder') ctx.notes.push({ at, include: d.args[0], from: got.from, files: got.files });
      return got.files.flatMap((f) => walk(f, { ...ctx, seen: [...ctx.seen, f], checkCtx: false }));
    });
  return splice(parseOne(ctx.python, path, ctx.checkCtx));
}

/** Does a parsed top level read as a file made for nginx's http block (no main or events context of its own)? */
const isFragment = (top) =>
  !top.some((d) => d.directive === 'http' || d.directive === 'events') && top.some((d) => HTTP_LEVEL.has(d.directive));

/**
 * The installed nginx.conf with `fragment` in its http block where it includes conf.d, and its
 * sites-enabled (Debian's default site) left out: what nginx reads once the file is deployed.
 */
function inStockMain(fragment, ctx, file) {
  const main = join(ctx.stockDir, 'nginx.conf');
  if (!existsSync(main))
    throw new Error(
      `${file}: a file for nginx's http block, and no ${main} to read it in: './labw setup' installs nginx`,
    );
  const stockCtx = { ...ctx, folder: ctx.stockDir, seen: [main], checkCtx: false };
  const placed = { done: false };
  const into = (dirs) =>
    dirs.flatMap((d) => {
      if (d.directive === 'include' && /(conf\.d|sites-enabled)\//.test(d.args[0])) {
        if (placed.done) return [];
        placed.done = true;
        return fragment;
      }
      if (d.directive === '#') return [];
      if (d.directive === 'http')
        return [{ directive: 'http', args: [], at: `${main}:${d.line}`, block: into(d.block) }];
      if (d.directive === 'include') return walkOne(d, stockCtx, main);
      return [
        { directive: d.directive, args: d.args, at: `${main}:${d.line}`, ...(d.block ? { block: into(d.block) } : {}) },
      ];
    });
  const tree = into(parseOne(ctx.python, main, false));
  if (!placed.done) throw new Error(`${main} includes no conf.d: the lab cannot place ${file} in it`);
  ctx.notes.push({
    at: basename(file),
    include: null,
    from: `read in the http block of ${main}, where it includes conf.d`,
  });
  return tree;
}

/** One include directive of the stock main, spliced. */
function walkOne(d, ctx, main) {
  const at = `${main}:${d.line}`;
  const got = includeFiles(d.args[0], { ...ctx, at });
  return got.files.flatMap((f) => walk(f, { ...ctx, seen: [main, f] }));
}

/**
 * The whole tree of `file`: {tree, notes, fragment}. `tools`: {python}; `includeDirs`:
 * --include-dir's [{from, dir}]; `stockDir`: the installed nginx's folder (tests give another).
 */
export function readTree(file, { python }, { includeDirs = [], stockDir = STOCK_DIR } = {}) {
  const path = resolve(file);
  const ctx = { python, folder: dirname(path), dirs: includeDirs, stockDir, seen: [path], notes: [] };
  const top = parseOne(python, path, false);
  if (!isFragment(top)) return { tree: walk(path, { ...ctx, checkCtx: true }), notes: ctx.notes, fragment: false };
  const fragment = walk(path, { ...ctx, checkCtx: false });
  return { tree: inStockMain(fragment, ctx, file), notes: ctx.notes, fragment: true };
}

/** --include-dir=FROM=DIR's value, checked where it enters: FROM an absolute folder, DIR one that is there. */
export function includeDir(value) {
  const m = /^(\/[^=]*)=(.+)$/.exec(value ?? '');
  if (!m) throw new Error(`--include-dir=${value}: FROM=DIR, FROM an absolute folder the config names (/etc/nginx)`);
  const dir = resolve(m[2]);
  if (!existsSync(dir) || !statSync(dir).isDirectory())
    throw new Error(`--include-dir=${value}: ${dir} is not a folder`);
  return { from: m[1].replace(/\/+$/, '') || '/', dir };
}
