/*
 * k6 options as JavaScript a k6 user reads: `export const options = {...}` with a comment above
 * each scenario and each threshold. Shared by the exported script, the run page's Script tab
 * and the stacks' READMEs.
 */

const key = (k) => (/^[A-Za-z_$][\w$]*$/.test(k) ? k : JSON.stringify(k));
const inline = (v) =>
  v && typeof v === 'object'
    ? Array.isArray(v)
      ? `[${v.map(inline).join(', ')}]`
      : `{ ${Object.entries(v)
          .map(([k, x]) => `${key(k)}: ${inline(x)}`)
          .join(', ')} }`
    : JSON.stringify(v);
const comment = (text, pad) => `${pad}// ${text}\n`;

/** An object one property per line (a scenario), its values inline. */
const multiline = (v, pad) =>
  `{\n${Object.entries(v)
    .map(([k, x]) => `${pad}  ${key(k)}: ${inline(x)},\n`)
    .join('')}${pad}}`;

/** One entry per line (or per property, `spread`), each with its comment (notes[name]) above it. */
function block(name, entries, notes, pad, spread = false) {
  const lines = Object.entries(entries).map(
    ([k, v]) =>
      `${notes[k] ? comment(notes[k], pad) : ''}${pad}${key(k)}: ${spread ? multiline(v, pad) : inline(v)},\n`,
  );
  return `  ${name}: {\n${lines.join('')}  },\n`;
}

/**
 * `export const options = {...}`: scenarios and thresholds (each with its note), then the other
 * options as they are. `only`: the scenario names to print (a README's one case), with theirs.
 */
export function optionsCode(
  { scenarios, thresholds, scenarioNotes = {}, thresholdNotes = {}, ...rest },
  { only = null } = {},
) {
  const picked = (o, keep) => (only ? Object.fromEntries(Object.entries(o).filter(([k]) => keep(k))) : o);
  const caseOf = (metric) => /\{(?:case|scenario):([^,}]+)/.exec(metric)?.[1];
  const sc = picked(scenarios, (k) => only.includes(k));
  const th = picked(thresholds, (k) => only.includes(caseOf(k)));
  const others = ['leadPeriods'];
  const tail = Object.entries(rest)
    .filter(([k]) => !others.includes(k))
    .map(([k, v]) => `  ${key(k)}: ${inline(v)},\n`)
    .join('');
  return `export const options = {\n${block('scenarios', sc, scenarioNotes, '    ', true)}${block('thresholds', th, thresholdNotes, '    ')}${only ? '' : tail}};\n`;
}
