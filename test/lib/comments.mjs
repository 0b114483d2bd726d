/*
 * Comment lines outside the tests that carry a measurement, which belongs in a recorded run and
 * a generated README block, not in code: a date, a run id or a commit (`dated`), or a measured
 * figure (`measured`: a number with a unit beside a word of measuring; a heuristic, shown, not
 * enforced). `node test/lib/comments.mjs` lists them; test/layers.test.mjs holds `dated` at none.
 */
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const MONTH = '(January|February|March|April|May|June|July|August|September|October|November|December)';
const DATED = [
  ['date', new RegExp(`\\b20\\d\\d-\\d\\d-\\d\\d\\b|\\b\\d{1,2} ${MONTH}\\b|\\b${MONTH} \\d{1,2}\\b`)],
  ['run id', /\b\d{8}-\d{6}\b/],
  ['commit', /\b(commit|at) [0-9a-f]{7,12}\b/],
];
const UNIT = String.raw`\b\d+(\.\d+)?\s?(ms|s|%|r\/s|us|µs|MiB|KiB|x)\b`;
const MEASURED = new RegExp(
  `\\b(measured|took|seen|saw|observed|in a (CI|fresh-clone) run|one run|ran at|peaked)\\b.*${UNIT}|${UNIT}.*\\b(measured|took|seen|observed)\\b`,
  'i',
);

/** The comment text of each line of a module: [{line, text}] (block, line and trailing comments). */
function commentLines(source) {
  const out = [];
  let inBlock = false;
  source.split('\n').forEach((l, i) => {
    const t = l.trim();
    const isComment = inBlock || t.startsWith('//') || t.startsWith('/*') || t.startsWith('*');
    if (t.startsWith('/*')) inBlock = !t.includes('*/');
    else if (inBlock && t.includes('*/')) inBlock = false;
    const text = isComment ? t : /\s\/\/\s/.test(l) ? l.slice(l.indexOf(' // ')) : null;
    if (text) out.push({ line: i + 1, text });
  });
  return out;
}

/** Every such comment line of the repository's modules outside the tests: [{file, line, kind, text}]. */
export function figureComments(root) {
  const files = execFileSync('git', ['ls-files', '*.js', '*.mjs'], { cwd: root, encoding: 'utf8' })
    .split('\n')
    .filter((f) => f && !/^(test\/|k6\/lib\/vendor\/|lab\/results\/client\/vendor\/)/.test(f));
  return files.flatMap((file) =>
    commentLines(readFileSync(`${root}/${file}`, 'utf8')).flatMap(({ line, text }) => {
      const dated = DATED.find(([, re]) => re.test(text));
      const kind = dated ? dated[0] : MEASURED.test(text) ? 'measured' : null;
      return kind ? [{ file, line, kind, text }] : [];
    }),
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const found = figureComments(process.cwd());
  for (const f of found) console.log(`${f.file}:${f.line}: [${f.kind}] ${f.text}`);
  const by = (k) => found.filter((f) => (k === 'dated' ? f.kind !== 'measured' : f.kind === k)).length;
  console.log(
    `${found.length} comment lines: ${by('dated')} with a date, run id or commit; ${by('measured')} with a measured figure (heuristic)`,
  );
}
