/*
 * Command-line words to a request, checked before anything starts:
 *   <suite[/experiment]|experiment> [--quick[=N]] [--segments=N] [--no-metrics] [experiment.knob=value | knob=value ...]
 * A bare knob applies to every experiment of the run that has a knob of that name.
 */
import { QUICK_FACTOR, experiments, experimentNamed, suiteExperiments, suites, plan as makePlan } from '../../thresholds/plan.js';
import { resolveKnobs, scaleKnobs, parseFactor } from '../../thresholds/knobs.js';
import { MAX_SEGMENTS } from '../run/segments.mjs';

export function parseRunArgs(words, { target = 'suite' } = {}) {
  const [name, ...rest] = words;
  if (!name || name.startsWith('-') || name.includes('=')) {
    const valid = target === 'suite' ? Object.keys(suites).filter((s) => suites[s].length).join(', ') : Object.keys(experiments).join(', ');
    throw new Error(`name a ${target} first (${valid})`);
  }
  let names;
  if (target === 'suite') {
    // `spike/burst` runs one experiment of a suite.
    const [suite, only, ...extra] = name.split('/');
    if (extra.length) throw new Error(`'${name}': name a suite, or suite/experiment (like spike/burst)`);
    names = suiteExperiments(suite);
    if (only !== undefined) {
      if (!names.includes(only)) throw new Error(`suite '${suite}' has no experiment '${only}'; it has: ${names.join(', ')}`);
      names = [only];
    }
  } else {
    names = [experimentNamed(name).name];
  }
  let factor = 1;
  let metrics = true;
  let segments = 1;
  const overrides = Object.fromEntries(names.map((n) => [n, {}]));
  const given = new Set(); // each option and knob once: a second one would silently win
  const once = (key, word) => {
    if (given.has(key)) throw new Error(`'${word}': ${key} is given twice`);
    given.add(key);
  };
  for (const w of rest) {
    if (w === '--no-metrics') {
      once('--no-metrics', w);
      metrics = false;
      continue;
    }
    const seg = /^--segments=(.*)$/.exec(w);
    if (seg) {
      once('--segments', w);
      if (!/^[0-9]{1,2}$/.test(seg[1]) || Number(seg[1]) < 1 || Number(seg[1]) > MAX_SEGMENTS) throw new Error(`--segments takes a whole number of k6 processes 1..${MAX_SEGMENTS}, got '${seg[1]}'`);
      segments = Number(seg[1]);
      continue;
    }
    const quick = /^--quick(?:=(.*))?$/.exec(w);
    if (quick) {
      once('--quick', w);
      factor = quick[1] === undefined ? QUICK_FACTOR : parseFactor(quick[1]);
      continue;
    }
    const m = /^(?:([a-z0-9-]+)\.)?([a-z_]+)=(.*)$/.exec(w);
    if (!m) throw new Error(`cannot read '${w}': expected --quick[=N] or knob=value (experiment.knob=value)`);
    const [, exp, knob, value] = m;
    if (exp) {
      experimentNamed(exp);
      if (!names.includes(exp)) throw new Error(`experiment '${exp}' is not part of ${name} (${names.join(', ')})`);
      once(`${exp}.${knob}`, w);
      overrides[exp][knob] = value;
    } else {
      const owners = names.filter((n) => experiments[n].knobs[knob]);
      if (owners.length === 0) {
        const valid = names.flatMap((n) => Object.keys(experiments[n].knobs).map((k) => `${n}.${k}`));
        throw new Error(`unknown knob '${knob}'; valid: ${valid.join(', ')}`);
      }
      for (const o of owners) {
        once(`${o}.${knob}`, w);
        overrides[o][knob] = value;
      }
    }
  }
  // Build every plan now (knobs parsed and checked, the machine's limits applied), so a bad
  // value fails before any process starts.
  if (target === 'suite') {
    for (const n of names) {
      const p = makePlan({ experiment: n, suite: name.split('/')[0], factor, overrides: overrides[n] });
      if (segments > 1 && p.kind) throw new Error(`--segments: ${n} is a ${p.kind} plan; segments are judged for the limiter experiments (burst, envoy-vs-nginx) so far`);
    }
  } else {
    for (const n of names) {
      const exp = experiments[n];
      const applied = Math.min(factor, exp.maxQuick ?? Infinity);
      const scaled = scaleKnobs(exp, resolveKnobs(exp, overrides[n]), applied);
      if (exp.checkScaled) exp.checkScaled(scaled, applied);
    }
  }
  if (segments > 1 && !metrics) throw new Error('--segments needs the metrics stores (the whole run is judged from Prometheus too): drop --no-metrics');
  return { name: name.split('/')[0], experiments: names, factor, overrides, metrics, segments };
}
