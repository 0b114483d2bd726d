/*
 * Command-line words to a request, checked before anything starts:
 *   <suite[/experiment]|experiment> [--quick[=N]] [--segments=N] [--no-metrics]
 *     [--stack-knob [experiment.]knob=value ...] [--stack-cpu service=N ...] [experiment.knob=value | knob=value ...]
 * --stack-knob gives the stack a knob's value the model is not told of; --stack-cpu caps a
 * service at N % of one core, unknown to the model: perturbations a run must fail on.
 * A bare knob applies to every experiment of the run that has a knob of that name. A flag whose
 * value is required takes it after `=` or after a space, as k6's flags do: --segments 2.
 */
import { QUICK_FACTOR, experiments, experimentNamed, suiteExperiments, suites, plan as makePlan, kindOfPlan } from '../../thresholds/plan.js';
import { resolveKnobs, scaleKnobs, parseFactor } from '../../thresholds/knobs.js';
import { MAX_SEGMENTS } from '../run/segments.mjs';
import { kinds } from '../../thresholds/kinds/index.js';
import { usePolicy } from '../policy/use.mjs';

/** The words parseRunArgs reads after the name, for the error on a word it cannot read. */
export const RUN_FORMS = ['--quick[=N]', '--segments=N', '--no-metrics', '--stack-knob knob=value', '--stack-cpu service=N', 'knob=value', 'experiment.knob=value'];

/**
 * A flag that needs a value, in either of k6's forms: `--flag=value` or `--flag value`.
 * Returns [value, how many words it took] when words[i] is that flag, else null; `what` names
 * the value in the error for a flag left without one at the end.
 */
export function flagValue(words, i, flag, what) {
  const w = words[i];
  if (w.startsWith(`${flag}=`)) return [w.slice(flag.length + 1), 1];
  if (w !== flag) return null;
  if (i + 1 >= words.length) throw new Error(`${flag} is missing its value: ${flag}=${what} or ${flag} ${what}`);
  return [words[i + 1], 2];
}

/**
 * `only`: the one experiment a run is of, outside the list (a team's policy, lab/policy/use.mjs):
 * the suite is then the name alone.
 */
/**
 * Flags that take a value, each at most once: `flags` maps a flag to [its key, what its value
 * is]. Returns the words without them, and {key: value} of those given.
 */
export function valueFlags(words, flags) {
  const rest = [];
  const values = {};
  for (let i = 0; i < words.length; i += 1) {
    const found = Object.entries(flags).map(([flag, [k, what]]) => [flag, k, flagValue(words, i, flag, what)]).find(([, , v]) => v);
    if (!found) {
      rest.push(words[i]);
      continue;
    }
    const [flag, k, [value, took]] = found;
    if (values[k] !== undefined) throw new Error(`${flag} is given twice`);
    values[k] = value;
    i += took - 1;
  }
  return { rest, values };
}

/** `--policy=FILE [--stack-policy=FILE2]` (lab/policy/use.mjs): the words without them, and the files they name ({policy, stackPolicy}). */
export function policyFlags(words) {
  const { rest, values: files } = valueFlags(words, { '--policy': ['policy', 'FILE'], '--stack-policy': ['stackPolicy', 'FILE'] });
  if (files.stackPolicy && !files.policy) throw new Error('--stack-policy=FILE2 runs FILE2 while the model reads --policy=FILE: give --policy too');
  return { rest, ...files };
}

/**
 * `up`'s and `keep`'s words with `--policy=FILE` read: the policy's experiment named first, as
 * any experiment is (`up <experiment> [--quick] [knobs]`). Other words as they are.
 */
export function stackWords(words, root) {
  const flags = policyFlags(words);
  if (!flags.policy) return words;
  if (flags.stackPolicy) throw new Error('--stack-policy perturbs a run: `up` serves the policy as written');
  return [usePolicy(flags, root).experiment.name, ...flags.rest];
}

export function parseRunArgs(words, { target = 'suite', only = null } = {}) {
  const [name, ...rest] = words;
  if (!name || name.startsWith('-') || name.includes('=')) {
    const valid = target === 'suite' ? Object.keys(suites).filter((s) => suites[s].length).join(', ') : Object.keys(experiments).join(', ');
    throw new Error(`name a ${target} first (${valid})`);
  }
  let names;
  if (only) {
    if (name.includes('/')) throw new Error(`'${name}': with --policy, name the suite alone (smoke, spike or soak)`);
    if (!experimentNamed(only).suites[name]) throw new Error(`a policy has no '${name}' cases; it has: ${Object.keys(experimentNamed(only).suites).join(', ')}`);
    names = [only];
  } else if (target === 'suite') {
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
  // A perturbed stack the model is not told of: knobs only the stack gets, and services slowed
  // by a CPU cap (% of one core). The run must fail on it; test/perturbed.test.mjs keeps such runs.
  const untold = Object.fromEntries(names.map((n) => [n, {}]));
  const slowed = {};
  let k6Cpu = null; // k6 itself capped (% of one core): a load generator that cannot keep time
  const given = new Set(); // each option and knob once: a second one would silently win
  const once = (key, word) => {
    if (given.has(key)) throw new Error(`'${word}': ${key} is given twice`);
    given.add(key);
  };
  // knob=value or experiment.knob=value, into `into` (the model's knobs, or the stack's alone).
  const setKnob = (w, into, flag) => {
    const m = /^(?:([a-z0-9-]+)\.)?([a-z_]+)=(.*)$/.exec(w);
    if (!m) throw new Error(`cannot read '${flag}${w}': expected ${flag ? 'knob=value or experiment.knob=value' : `${RUN_FORMS.slice(0, -1).join(', ')} or ${RUN_FORMS.at(-1)}`}`);
    const [, exp, knob, value] = m;
    if (exp) {
      experimentNamed(exp);
      if (!names.includes(exp)) throw new Error(`experiment '${exp}' is not part of ${name} (${names.join(', ')})`);
      once(`${flag}${exp}.${knob}`, w);
      into[exp][knob] = value;
      return;
    }
    const owners = names.filter((n) => experiments[n].knobs[knob]);
    if (owners.length === 0) {
      const valid = names.flatMap((n) => Object.keys(experiments[n].knobs).map((k) => `${n}.${k}`));
      throw new Error(`unknown knob '${knob}'; valid: ${valid.join(', ')}`);
    }
    for (const o of owners) {
      once(`${flag}${o}.${knob}`, w);
      into[o][knob] = value;
    }
  };
  for (let i = 0; i < rest.length; i += 1) {
    const w = rest[i];
    if (w === '--no-metrics') {
      once('--no-metrics', w);
      metrics = false;
      continue;
    }
    const seg = flagValue(rest, i, '--segments', 'N');
    if (seg) {
      const [value, took] = seg;
      once('--segments', rest.slice(i, i + took).join(' '));
      i += took - 1;
      if (!/^[0-9]{1,2}$/.test(value) || Number(value) < 1 || Number(value) > MAX_SEGMENTS) throw new Error(`--segments takes a whole number of k6 processes 1..${MAX_SEGMENTS}, got '${value}'`);
      segments = Number(value);
      continue;
    }
    const quick = /^--quick(?:=(.*))?$/.exec(w);
    if (quick) {
      once('--quick', w);
      factor = quick[1] === undefined ? QUICK_FACTOR : parseFactor(quick[1]);
      continue;
    }
    const stackKnob = flagValue(rest, i, '--stack-knob', 'knob=value');
    if (stackKnob) {
      i += stackKnob[1] - 1;
      setKnob(stackKnob[0], untold, '--stack-knob ');
      continue;
    }
    const stackCpu = flagValue(rest, i, '--stack-cpu', 'service=N');
    if (stackCpu) {
      i += stackCpu[1] - 1;
      const c = /^([a-z0-9-]{1,60})=([0-9]{1,3})$/.exec(stackCpu[0]);
      if (!c || Number(c[2]) < 1 || Number(c[2]) > 200) throw new Error(`--stack-cpu takes service=N, N the service's CPU cap in % of one core (1..200), like --stack-cpu json-filter-node=25; got '${stackCpu[0]}'`);
      once(`--stack-cpu ${c[1]}`, stackCpu[0]);
      slowed[c[1]] = Number(c[2]);
      continue;
    }
    const k6CpuFlag = flagValue(rest, i, '--k6-cpu', 'N');
    if (k6CpuFlag) {
      i += k6CpuFlag[1] - 1;
      if (!/^[0-9]{1,3}$/.test(k6CpuFlag[0]) || Number(k6CpuFlag[0]) < 1 || Number(k6CpuFlag[0]) > 400) throw new Error(`--k6-cpu takes N, k6's CPU cap in % of one core (1..400), like --k6-cpu 20; got '${k6CpuFlag[0]}'`);
      once('--k6-cpu', k6CpuFlag[0]);
      k6Cpu = Number(k6CpuFlag[0]);
      continue;
    }
    setKnob(w, overrides, '');
  }
  // Build every plan now (knobs parsed and checked, the machine's limits applied), so a bad
  // value fails before any process starts.
  if (target === 'suite') {
    for (const n of names) {
      const p = makePlan({ experiment: n, suite: name.split('/')[0], factor, overrides: overrides[n], untold: untold[n] });
      const kind = kindOfPlan(p);
      if (segments > 1 && !kind.segments) {
        const able = Object.values(kinds).filter((k) => k.segments);
        const names = Object.values(experiments).filter((e) => able.includes(kinds[e.kind])).map((e) => e.name);
        throw new Error(`--segments: ${n} is a ${kind.name} plan; segments are judged for the ${able.map((k) => k.name).join(', ')} experiments (${names.join(', ')}) so far`);
      }
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
  const perturbed = k6Cpu !== null || Object.keys(slowed).length > 0 || names.some((n) => Object.keys(untold[n]).length > 0);
  if (perturbed && target !== 'suite') throw new Error('--stack-knob, --stack-cpu and --k6-cpu perturb a test run: use them with `just test`');
  return { name: name.split('/')[0], experiments: names, factor, overrides, metrics, segments, ...(perturbed ? { untold, slowed } : {}), ...(k6Cpu !== null ? { k6Cpu } : {}) };
}
