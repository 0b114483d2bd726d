/*
 * The shape of an experiment's `provenance`: where each of its constants comes from. What the
 * groups mean: docs/model.md#where-the-constants-come-from.
 */

/** Each group, and the field its entries state beside `value`. */
export const GROUPS = { derived: 'seed', fitted: 'fittedTo', measured: 'source', assumed: 'why' };

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const text = (v) => typeof v === 'string' && v.trim() !== '';

/** The seed figures the fitted entries name, as `<case>.<figure>`. */
export function fittedFigures(exp) {
  return new Set(
    Object.values(exp.provenance?.fitted ?? {}).flatMap((e) => (e.fittedTo ?? []).map((f) => `${f.case}.${f.figure}`)),
  );
}

/**
 * What is wrong with an experiment's provenance, one message each ([] when nothing). A key that
 * names a knob holds that knob's default (a list: some of its values); a fitted entry's `knob`
 * names the knob it is a value of, when that value is not the default.
 */
export function provenanceProblems(exp) {
  const p = exp.provenance;
  if (!p || typeof p !== 'object') return [`${exp.name}: no provenance`];
  const out = [];
  const say = (m) => out.push(`${exp.name}: ${m}`);
  const groups = Object.keys(p);
  if (!same([...groups].sort(), Object.keys(GROUPS).sort()))
    say(`groups are ${groups.join(', ')}; expected ${Object.keys(GROUPS).join(', ')}`);
  const knobs = exp.knobs ?? {};
  const seen = new Map();
  for (const [group, field] of Object.entries(GROUPS)) {
    for (const [key, e] of Object.entries(p[group] ?? {})) {
      const at = `${group}.${key}`;
      if (seen.has(key)) say(`${key} is in both ${seen.get(key)} and ${group}`);
      seen.set(key, group);
      if (!e || !('value' in e)) {
        say(`${at} has no value`);
        continue;
      }
      if (group === 'fitted') {
        if (!Array.isArray(e.fittedTo) || e.fittedTo.length === 0) say(`${at} names no figure it was fitted to`);
        for (const f of e.fittedTo ?? []) {
          if (!text(f.case) || !text(f.figure) || f.seed === undefined) {
            say(`${at}: a figure needs case, figure and the seed's value`);
            continue;
          }
          const figures = exp.seedFigures?.[f.case];
          if (!figures) say(`${at}: the seed has no figures for case ${f.case}`);
          else if (figures[f.figure] !== undefined && !same(figures[f.figure], f.seed))
            say(`${at}: ${f.case}.${f.figure} is ${figures[f.figure]} in seedFigures, ${f.seed} here`);
        }
        if (!text(e.how)) say(`${at} does not say how it was fitted`);
        if (e.knob !== undefined && !knobs[e.knob]) say(`${at}: no knob ${e.knob}`);
      } else if (!text(e[field])) say(`${at} has no ${field}`);
      if (knobs[key]) {
        const d = knobs[key].default;
        const ok = Array.isArray(d) && Array.isArray(e.value) ? e.value.every((v) => d.includes(v)) : same(d, e.value);
        if (!ok) say(`${at} is ${JSON.stringify(e.value)}, the knob's default ${JSON.stringify(d)}`);
      } else if (key in exp && typeof exp[key] !== 'function' && !same(exp[key], e.value))
        say(`${at} is ${JSON.stringify(e.value)}, the experiment's ${key} ${JSON.stringify(exp[key])}`);
    }
  }
  for (const k of Object.keys(knobs)) if (!seen.has(k)) say(`knob ${k}: its default's origin is in no group`);
  return out;
}
