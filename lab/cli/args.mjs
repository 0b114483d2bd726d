/*
 * Command-line words to a request, checked before anything starts:
 *   <suite[/experiment]|experiment> [--quick[=N]] [--segments=N] [--no-metrics]
 *     [--stack-knob [experiment.]knob=value ...] [--stack-cpu service=N ...] [experiment.knob=value | knob=value ...]
 * --stack-knob gives the stack a knob's value the model is not told of; --stack-cpu caps a
 * service at N % of one core, unknown to the model: perturbations a run must fail on.
 * A bare knob applies to every experiment of the run that has a knob of that name. A flag whose
 * value is required takes it after `=` or after a space, as k6's flags do: --segments 2.
 */
import {
  QUICK_FACTOR,
  experiments,
  experimentNamed,
  suiteExperiments,
  suites,
  plan as makePlan,
  kindOfPlan,
} from '../../thresholds/plan.js';
import { resolveKnobs, scaleKnobs, parseFactor } from '../../thresholds/knobs.js';
import { MAX_SEGMENTS } from '../run/segments.mjs';
import { kinds } from '../../thresholds/kinds/index.js';
import { usePolicy } from '../policy/use.mjs';
import { includeDir } from '../policy/nginx/tree.mjs';

/** The words parseRunArgs reads after the name, for the error on a word it cannot read. */
export const RUN_FORMS = [
  '--quick[=N]',
  '--segments=N',
  '--no-metrics',
  '--stack-knob knob=value',
  '--stack-cpu service=N',
  'knob=value',
  'experiment.knob=value',
];

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
    const found = Object.entries(flags)
      .map(([flag, [k, what]]) => [flag, k, flagValue(words, i, flag, what)])
      .find(([, , v]) => v);
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

/**
 * `--policy=FILE [--stack-policy=FILE2] [--name=NAME]` (lab/policy/use.mjs): the words without them,
 * and the files they name and the name given ({policy, stackPolicy, name}).
 */
export function policyFlags(words) {
  // --include-dir=FROM=DIR may be given once per folder the config includes from.
  const includeDirs = [];
  const others = [];
  for (let i = 0; i < words.length; i += 1) {
    const got = flagValue(words, i, '--include-dir', 'FROM=DIR');
    if (!got) others.push(words[i]);
    else {
      includeDirs.push(includeDir(got[0]));
      i += got[1] - 1;
    }
  }
  const { rest, values: files } = valueFlags(others, {
    '--policy': ['policy', 'FILE'],
    '--stack-policy': ['stackPolicy', 'FILE'],
    '--name': ['name', 'NAME'],
  });
  if (files.name && !files.policy) throw new Error('--name=NAME names a policy: give --policy=FILE too');
  if (files.stackPolicy && !files.policy)
    throw new Error('--stack-policy=FILE2 runs FILE2 while the model reads --policy=FILE: give --policy too');
  if (includeDirs.length && !files.policy)
    throw new Error('--include-dir=FROM=DIR reads a policy: give --policy=FILE too');
  return { rest, ...files, includeDirs };
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

/**
 * The experiments a run's first word names: a suite's, one of it (`spike/burst`), an experiment, or a
 * policy's (`only`).
 */
function runNames(name, target, only) {
  if (!name || name.startsWith('-') || name.includes('=')) {
    const valid =
      target === 'suite'
        ? Object.keys(suites)
            .filter((s) => suites[s].length)
            .join(', ')
        : Object.keys(experiments).join(', ');
    throw new Error(`name a ${target} first (${valid})`);
  }
  if (only) {
    if (name.includes('/')) throw new Error(`'${name}': with --policy, name the suite alone (smoke, spike or soak)`);
    if (!experimentNamed(only).suites[name])
      throw new Error(
        `a policy has no '${name}' cases; it has: ${Object.keys(experimentNamed(only).suites).join(', ')}`,
      );
    return [only];
  }
  if (target !== 'suite') return [experimentNamed(name).name];
  // `spike/burst` runs one experiment of a suite.
  const [suite, one, ...extra] = name.split('/');
  if (extra.length) throw new Error(`'${name}': name a suite, or suite/experiment (like spike/burst)`);
  const names = suiteExperiments(suite);
  if (one === undefined) return names;
  if (!names.includes(one)) throw new Error(`suite '${suite}' has no experiment '${one}'; it has: ${names.join(', ')}`);
  return [one];
}

/**
 * The run's options, each given once (a second one would silently win): `knob=value` or
 * `experiment.knob=value` into the model's knobs (`overrides`) or, after --stack-knob, the
 * stack's alone (`untold`: a perturbed stack the model is not told of; test/perturbed.test.mjs
 * keeps such runs); --stack-cpu services slowed by a CPU cap, --k6-cpu k6 itself capped (a load
 * generator that cannot keep time), --quick, --segments, --no-metrics.
 */
class RunOptions {
  constructor(name, names) {
    Object.assign(this, {
      name,
      names,
      factor: 1,
      metrics: true,
      segments: 1,
      slowed: {},
      k6Cpu: null,
      given: new Set(),
    });
    this.overrides = Object.fromEntries(names.map((n) => [n, {}]));
    this.untold = Object.fromEntries(names.map((n) => [n, {}]));
  }

  once(key, word) {
    if (this.given.has(key)) throw new Error(`'${word}': ${key} is given twice`);
    this.given.add(key);
  }

  setKnob(w, into, flag) {
    const { names, name } = this;
    const m = /^(?:([a-z0-9-]+)\.)?([a-z_]+)=(.*)$/.exec(w);
    if (!m)
      throw new Error(
        `cannot read '${flag}${w}': expected ${flag ? 'knob=value or experiment.knob=value' : `${RUN_FORMS.slice(0, -1).join(', ')} or ${RUN_FORMS.at(-1)}`}`,
      );
    const [, exp, knob, value] = m;
    if (exp) {
      experimentNamed(exp);
      if (!names.includes(exp)) throw new Error(`experiment '${exp}' is not part of ${name} (${names.join(', ')})`);
      this.once(`${flag}${exp}.${knob}`, w);
      into[exp][knob] = value;
      return;
    }
    const owners = names.filter((n) => experiments[n].knobs[knob]);
    if (owners.length === 0) {
      const valid = names.flatMap((n) => Object.keys(experiments[n].knobs).map((k) => `${n}.${k}`));
      throw new Error(`unknown knob '${knob}'; valid: ${valid.join(', ')}`);
    }
    for (const o of owners) {
      this.once(`${flag}${o}.${knob}`, w);
      into[o][knob] = value;
    }
  }

  /** Reads the option at words[i]; returns how many words it took. */
  read(words, i) {
    const w = words[i];
    if (w === '--no-metrics') {
      this.once('--no-metrics', w);
      this.metrics = false;
      return 1;
    }
    const quick = /^--quick(?:=(.*))?$/.exec(w);
    if (quick) {
      this.once('--quick', w);
      this.factor = quick[1] === undefined ? QUICK_FACTOR : parseFactor(quick[1]);
      return 1;
    }
    for (const [flag, what, take] of this.valueFlags()) {
      const found = flagValue(words, i, flag, what);
      if (found) {
        take(found[0], words.slice(i, i + found[1]).join(' '));
        return found[1];
      }
    }
    this.setKnob(w, this.overrides, '');
    return 1;
  }

  /** The flags that take a value: [flag, what its value is, what to do with it]. */
  valueFlags() {
    return [
      [
        '--segments',
        'N',
        (value, word) => {
          this.once('--segments', word);
          if (!/^[0-9]{1,2}$/.test(value) || Number(value) < 1 || Number(value) > MAX_SEGMENTS)
            throw new Error(`--segments takes a whole number of k6 processes 1..${MAX_SEGMENTS}, got '${value}'`);
          this.segments = Number(value);
        },
      ],
      ['--stack-knob', 'knob=value', (value) => this.setKnob(value, this.untold, '--stack-knob ')],
      [
        '--stack-cpu',
        'service=N',
        (value) => {
          const c = /^([a-z0-9-]{1,60})=([0-9]{1,3})$/.exec(value);
          if (!c || Number(c[2]) < 1 || Number(c[2]) > 200)
            throw new Error(
              `--stack-cpu takes service=N, N the service's CPU cap in % of one core (1..200), like --stack-cpu json-filter-node=25; got '${value}'`,
            );
          this.once(`--stack-cpu ${c[1]}`, value);
          this.slowed[c[1]] = Number(c[2]);
        },
      ],
      [
        '--k6-cpu',
        'N',
        (value) => {
          if (!/^[0-9]{1,3}$/.test(value) || Number(value) < 1 || Number(value) > 400)
            throw new Error(
              `--k6-cpu takes N, k6's CPU cap in % of one core (1..400), like --k6-cpu 20; got '${value}'`,
            );
          this.once('--k6-cpu', value);
          this.k6Cpu = Number(value);
        },
      ],
    ];
  }

  get perturbed() {
    return (
      this.k6Cpu !== null ||
      Object.keys(this.slowed).length > 0 ||
      this.names.some((n) => Object.keys(this.untold[n]).length > 0)
    );
  }
}

/**
 * Every plan built now (knobs parsed and checked, the machine's limits applied), so that a bad
 * value fails before any process starts.
 */
function checkPlans(o, target) {
  for (const n of o.names) {
    if (target !== 'suite') {
      const exp = experiments[n];
      const applied = Math.min(o.factor, exp.maxQuick ?? Infinity);
      const scaled = scaleKnobs(exp, resolveKnobs(exp, o.overrides[n]), applied);
      if (exp.checkScaled) exp.checkScaled(scaled, applied);
      continue;
    }
    const kind = kindOfPlan(
      makePlan({
        experiment: n,
        suite: o.name.split('/')[0],
        factor: o.factor,
        overrides: o.overrides[n],
        untold: o.untold[n],
      }),
    );
    if (o.segments > 1 && !kind.segments) {
      const able = Object.values(kinds).filter((k) => k.segments);
      const names = Object.values(experiments)
        .filter((e) => able.includes(kinds[e.kind]))
        .map((e) => e.name);
      throw new Error(
        `--segments: ${n} is a ${kind.name} plan; segments are judged for the ${able.map((k) => k.name).join(', ')} experiments (${names.join(', ')}) so far`,
      );
    }
  }
  if (o.segments > 1 && !o.metrics)
    throw new Error(
      '--segments needs the metrics stores (the whole run is judged from Prometheus too): drop --no-metrics',
    );
  if (o.perturbed && target !== 'suite')
    throw new Error('--stack-knob, --stack-cpu and --k6-cpu perturb a test run: use them with `just test`');
}

export function parseRunArgs(words, { target = 'suite', only = null } = {}) {
  const [name, ...rest] = words;
  const o = new RunOptions(name, runNames(name, target, only));
  for (let i = 0; i < rest.length; i += o.read(rest, i));
  checkPlans(o, target);
  const { names, factor, overrides, metrics, segments, untold, slowed, k6Cpu } = o;
  return {
    name: name.split('/')[0],
    experiments: names,
    factor,
    overrides,
    metrics,
    segments,
    ...(o.perturbed ? { untold, slowed } : {}),
    ...(k6Cpu !== null ? { k6Cpu } : {}),
  };
}
