/*
 * A Traefik config file (YAML or TOML) as plain data, with where each key stands: `at(path)` is
 * 'file:line' of the key at that path (a list of keys and indexes). YAML keeps positions
 * (yaml's LineCounter); TOML's parser does not, so its keys are found by walking its tables'
 * headers and key lines, the way a reader of the file would.
 */
import { readFileSync } from 'node:fs';
import { LineCounter, parseDocument, isMap, isSeq } from 'yaml';
import { parse as parseToml } from 'smol-toml';

const isToml = (file) => /\.toml$/i.test(file);

/** A YAML file: {data, at}. */
function yamlSource(file, text) {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter });
  const line = (offset) => lineCounter.linePos(offset).line;
  if (doc.errors.length) {
    const e = doc.errors[0];
    throw new Error(`${file}:${line(e.pos[0])}: not YAML Traefik can read: ${e.message.split('\n')[0]}`);
  }
  const at = (path) => {
    let node = doc.contents;
    let offset = 0;
    for (const key of path) {
      if (isMap(node)) {
        const pair = node.items.find((p) => String(p.key?.value ?? p.key) === String(key));
        if (!pair) break;
        offset = pair.key?.range?.[0] ?? offset;
        node = pair.value;
      } else if (isSeq(node) && node.items[key]) {
        node = node.items[key];
        offset = node.range?.[0] ?? offset;
      } else break;
    }
    return `${file}:${line(offset)}`;
  };
  return { data: doc.toJS() ?? {}, at };
}

const unquote = (k) =>
  k
    .trim()
    .replace(/^"(.*)"$/, '$1')
    .replace(/^'(.*)'$/, '$1');
const dotted = (s) => s.split('.').map(unquote);

/** Each key line of a TOML text as the full path it sets: [{path, line}] (array tables as index 0..n). */
function tomlKeyLines(text) {
  const out = [];
  let table = [];
  const arrays = new Map();
  text.split('\n').forEach((raw, i) => {
    const l = raw.replace(/#.*$/, '').trim();
    let m = l.match(/^\[\[([^\]]+)\]\]$/);
    if (m) {
      const name = dotted(m[1]).join('.');
      const n = arrays.has(name) ? arrays.get(name) + 1 : 0;
      arrays.set(name, n);
      table = [...dotted(m[1]), n];
      out.push({ path: table, line: i + 1 });
      return;
    }
    m = l.match(/^\[([^\]]+)\]$/);
    if (m) {
      table = dotted(m[1]);
      out.push({ path: table, line: i + 1 });
      return;
    }
    m = l.match(/^([A-Za-z0-9_."'-]+)\s*=/);
    if (m) out.push({ path: [...table, ...dotted(m[1])], line: i + 1 });
  });
  return out;
}

/**
 * A TOML file: {data, at}. A key stands on the first line that writes it or a key inside it (a
 * table's header, a dotted key), else on the line of the longest path written that leads to it.
 */
function tomlSource(file, text) {
  let data;
  try {
    data = parseToml(text);
  } catch (e) {
    throw new Error(`${file}:${e.line ?? 1}: not TOML Traefik can read: ${e.message.split('\n')[0]}`, { cause: e });
  }
  const keys = tomlKeyLines(text);
  const at = (path) => {
    const want = path.map(String);
    let best = { n: 0, line: 1 };
    for (const k of keys) {
      const p = k.path.map(String);
      let n = 0;
      while (n < p.length && n < want.length && p[n] === want[n]) n += 1;
      // Within the wanted key (n = its length) or on the way to it (n = the line's own length).
      const score = n === want.length ? n + 1 : n === p.length ? n : 0;
      if (score > best.n) best = { n: score, line: k.line };
    }
    return `${file}:${best.line}`;
  };
  return { data, at };
}

/** A Traefik config file read: {file, data, at(path)}. */
export function sourceOf(file) {
  const text = readFileSync(file, 'utf8');
  return { file, ...(isToml(file) ? tomlSource(file, text) : yamlSource(file, text)) };
}
