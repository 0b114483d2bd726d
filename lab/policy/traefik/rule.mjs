/*
 * A Traefik router's rule as the lab sends to it: the rule's expression (matchers joined by &&
 * and ||, in parentheses, Traefik's rule syntax) read into one request that matches it, {host,
 * path}. Host, Path and PathPrefix are read (several arguments, as the v2 syntax allows, each an
 * alternative); an alternative that needs any other matcher, or a negation, is passed over for
 * the next, and a rule none of whose alternatives is read is said with the first that stopped it.
 */

const TOKEN = /\s*(?:(\(|\)|&&|\|\||!)|([A-Za-z]+)\(((?:\s*(?:`[^`]*`|"(?:[^"\\]|\\.)*")\s*,?)*)\))/y;

/** The rule's tokens: '(' ')' '&&' '||' '!' and {matcher, args, text}; null where it is not read. */
function tokens(rule) {
  const out = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < rule.length) {
    if (/^\s*$/.test(rule.slice(TOKEN.lastIndex))) break;
    const at = TOKEN.lastIndex;
    const m = TOKEN.exec(rule);
    if (!m) return { none: `'${rule.slice(at).trim()}' is not read` };
    if (m[1]) out.push(m[1]);
    else {
      const args = [...m[3].matchAll(/`([^`]*)`|"((?:[^"\\]|\\.)*)"/g)].map((a) => a[1] ?? a[2]);
      out.push({ matcher: m[2], args, text: m[0].trim() });
    }
  }
  return { list: out };
}

// What a matcher asks of a request, one alternative per argument.
const ASKS = {
  Host: (v) => ({ host: v }),
  Path: (v) => ({ path: v }),
  PathPrefix: (v) => ({ prefix: v }),
};

/** Two asks together, or null where no request meets both. */
function both(a, b) {
  if (a.host && b.host && a.host.toLowerCase() !== b.host.toLowerCase()) return null;
  const out = { ...a, ...b };
  const prefixes = [a.prefix, b.prefix].filter(Boolean).sort((x, y) => y.length - x.length);
  if (prefixes.length === 2 && !prefixes[0].startsWith(prefixes[1])) return null;
  if (prefixes.length) out.prefix = prefixes[0];
  if (a.path && b.path && a.path !== b.path) return null;
  if (out.path && out.prefix && !out.path.startsWith(out.prefix)) return null;
  return out;
}

/** The tokens as a tree: {or: [a, b]}, {and: [a, b]}, {not: a} or a matcher; throws where it is not read. */
function tree(list) {
  let i = 0;
  const primary = () => {
    const t = list[i++];
    if (t === '(') {
      const inner = or();
      if (list[i++] !== ')') throw new Error('a parenthesis is not closed');
      return inner;
    }
    if (t === '!') return { not: primary() };
    if (!t || typeof t === 'string') throw new Error(`'${t ?? 'the end'}' where a matcher was expected`);
    return t;
  };
  const joined = (op, next) => () => {
    let node = next();
    while (list[i] === op) {
      i += 1;
      node = { [op === '&&' ? 'and' : 'or']: [node, next()] };
    }
    return node;
  };
  const and = joined('&&', primary);
  const or = joined('||', and);
  const root = or();
  if (i < list.length)
    throw new Error(`'${typeof list[i] === 'string' ? list[i] : list[i].text}' is not expected there`);
  return root;
}

/** The asks of the requests that meet a tree, in the rule's order, and the first thing not read. */
function alternatives(node, unread) {
  if (node.or) return node.or.flatMap((n) => alternatives(n, unread));
  if (node.and) {
    const [a, b] = node.and.map((n) => alternatives(n, unread));
    return a.flatMap((x) => b.map((y) => both(x, y)).filter(Boolean));
  }
  if (node.not) {
    unread.push('a negation (!)');
    return [];
  }
  if (!ASKS[node.matcher]) {
    unread.push(node.text);
    return [];
  }
  return node.args.map(ASKS[node.matcher]);
}

// Whether one matcher meets a request {host, path}.
const MEETS = {
  Host: (v, r) => (r.host ?? '').toLowerCase() === v.toLowerCase(),
  Path: (v, r) => r.path === v,
  PathPrefix: (v, r) => r.path.startsWith(v),
};

/** Whether a tree meets a request: true, false, or null where a matcher it needs is not read. */
function meets(node, request) {
  if (node.not) {
    const v = meets(node.not, request);
    return v === null ? null : !v;
  }
  if (node.and || node.or) {
    const [a, b] = (node.and ?? node.or).map((n) => meets(n, request));
    if (node.and) return a === false || b === false ? false : a && b;
    return a === true || b === true ? true : a === null || b === null ? null : false;
  }
  if (!MEETS[node.matcher]) return null;
  return node.args.some((v) => MEETS[node.matcher](v, request));
}

/** A rule as a tree, or {none: why}. */
function parsed(rule, at) {
  if (!rule.trim()) return { none: `${at}: no rule` };
  const read = tokens(rule);
  if (read.none) return { none: `rule ${rule}: ${read.none}` };
  try {
    return { root: tree(read.list) };
  } catch (e) {
    return { none: `rule ${rule}: ${e.message}` };
  }
}

/** A rule the lab can send to: {host, path} (path '/' when it names none), or {none: why}. */
export function readRule(rule, at) {
  const p = parsed(rule, at);
  if (p.none) return p;
  const unread = [];
  const [first] = alternatives(p.root, unread);
  if (!first)
    return {
      none: `rule ${rule}: ${unread.length ? `'${unread[0]}' is not read` : 'no request meets it'} (Host, Path and PathPrefix joined by && and || are)`,
    };
  return { host: first.host ?? null, path: first.path ?? first.prefix ?? '/' };
}

/** Whether `rule` meets a request {host, path}: true, false, or null where the lab cannot tell. */
export function ruleMeets(rule, request) {
  const p = parsed(rule, '');
  return p.none ? null : meets(p.root, request);
}
