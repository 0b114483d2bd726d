/*
 * Command-line words to a request, checked before anything starts:
 *   <suite[/experiment]|experiment> [--quick[=N]] [experiment.knob=value | knob=value ...]
 * A bare knob applies to every experiment of the run that has a knob of that name.
 */
import { QUICK_FACTOR, experiments, experimentNamed, suiteExperiments } from '../thresholds/plan.js';
import { resolveKnobs, scaleKnobs } from '../thresholds/knobs.js';

export function parseRunArgs(words, { target = 'suite' } = {}) {
  const [name, ...rest] = words;
  if (!name || name.startsWith('-') || name.includes('=')) {
    const valid = target === 'suite' ? 'smoke, spike, soak' : Object.keys(experiments).join(', ');
    throw new Error(`name a ${target} first (${valid})`);
  }
  let names;
  if (target === 'suite') {
    // `spike/burst` runs one experiment of a suite.
    const [suite, only] = name.split('/');
    names = suiteExperiments(suite);
    if (only !== undefined) {
      if (!names.includes(only)) throw new Error(`suite '${suite}' has no experiment '${only}'; it has: ${names.join(', ')}`);
      names = [only];
    }
  } else {
    names = [experimentNamed(name).name];
  }
  let factor = 1;
  const overrides = Object.fromEntries(names.map((n) => [n, {}]));
  for (const w of rest) {
    const quick = /^--quick(?:=(.*))?$/.exec(w);
    if (quick) {
      factor = quick[1] === undefined ? QUICK_FACTOR : Number(quick[1]);
      if (!Number.isInteger(factor) || factor < 1) throw new Error(`--quick takes a whole factor >= 1, got '${quick[1]}'`);
      continue;
    }
    const m = /^(?:([a-z0-9-]+)\.)?([a-z_]+)=(.*)$/.exec(w);
    if (!m) throw new Error(`cannot read '${w}': expected --quick[=N] or knob=value (experiment.knob=value)`);
    const [, exp, knob, value] = m;
    if (exp) {
      experimentNamed(exp);
      if (!names.includes(exp)) throw new Error(`experiment '${exp}' is not part of ${name} (${names.join(', ')})`);
      overrides[exp][knob] = value;
    } else {
      const owners = names.filter((n) => experiments[n].knobs[knob]);
      if (owners.length === 0) {
        const valid = names.flatMap((n) => Object.keys(experiments[n].knobs).map((k) => `${n}.${k}`));
        throw new Error(`unknown knob '${knob}'; valid: ${valid.join(', ')}`);
      }
      for (const o of owners) overrides[o][knob] = value;
    }
  }
  // Parse and check every knob now, so a bad value fails before any process starts.
  for (const n of names) {
    const exp = experiments[n];
    const applied = Math.min(factor, exp.maxQuick ?? Infinity);
    const scaled = scaleKnobs(exp, resolveKnobs(exp, overrides[n]), applied);
    if (exp.checkScaled) exp.checkScaled(scaled, applied);
  }
  return { name: name.split('/')[0], experiments: names, factor, overrides };
}
