/*
 * Knobs: every policy parameter of a stack, with the seed's value as default. A knob has a kind
 * that says how to parse and check it, and how --quick scales it (rates up, intervals down),
 * so that the model and the rendered config always see the same numbers.
 */
const kinds = {
  rate: { parse: posInt, scale: (v, f) => v * f, doc: 'a whole number of requests per second, > 0' },
  count: { parse: nonNegInt, scale: (v) => v, doc: 'a whole number, >= 0' },
  counts: {
    parse: (s) => String(s).split(',').map(nonNegInt),
    scale: (v) => v,
    doc: 'whole numbers >= 0, comma-separated',
  },
  // Whole microseconds: what the proxies' duration fields take, and so what the model must use.
  seconds: { parse: posNumber, scale: (v, f) => Math.round((v / f) * 1e6) / 1e6, doc: 'a duration in seconds, > 0' },
  status: { parse: httpStatus, scale: (v) => v, doc: 'an HTTP status from 400 to 599' },
  // A duration that may be 0 (the lab's own choice), scaled as seconds are.
  holdSeconds: {
    parse: (s) => (String(s) === '0' ? 0 : posNumber(s)),
    scale: (v, f) => Math.round((v / f) * 1e6) / 1e6,
    doc: 'a duration in seconds, >= 0',
  },
  // Whole numbers that are not rates or intervals of the policy: --quick leaves them alone.
  whole: { parse: posInt, scale: (v) => v, doc: 'a whole number > 0' },
  percent: {
    parse: (s) => {
      const n = nonNegInt(s);
      if (n > 100) throw new Error(`'${s}' is over 100`);
      return n;
    },
    scale: (v) => v,
    doc: 'a whole percentage 0..100',
  },
  // One of the values the knob lists (an implementation, a switch).
  choice: {
    parse: (s, spec) => {
      if (!spec.values.includes(s)) throw new Error(`'${s}' is not one of ${spec.values.join(', ')}`);
      return s;
    },
    scale: (v) => v,
    doc: 'one of the values listed',
  },
};
const kindDoc = (spec) => (spec.kind === 'choice' ? `one of ${spec.values.join(', ')}` : kinds[spec.kind].doc);

// Plain decimal numbers only: JavaScript's Number() would also take 1e1, 0x5 and ' 5 '.
const WHOLE = /^[0-9]{1,9}$/;
const DECIMAL = /^[0-9]{1,9}(\.[0-9]{1,6})?$/;

function posInt(s) {
  if (!WHOLE.test(String(s)) || Number(s) <= 0) throw new Error(`'${s}' is not a whole number > 0 (decimal digits)`);
  return Number(s);
}
function nonNegInt(s) {
  if (!WHOLE.test(String(s))) throw new Error(`'${s}' is not a whole number >= 0 (decimal digits)`);
  return Number(s);
}
function posNumber(s) {
  if (!DECIMAL.test(String(s)) || Number(s) <= 0) throw new Error(`'${s}' is not a number > 0 (decimal, like 0.5)`);
  return Number(s);
}
function httpStatus(s) {
  if (!WHOLE.test(String(s)) || Number(s) < 400 || Number(s) > 599)
    throw new Error(`'${s}' is not an HTTP status 400..599`);
  return Number(s);
}

/** Parses a whole factor >= 1 the same way (--quick, QUICK=). */
export const parseFactor = (s) => {
  if (!WHOLE.test(String(s)) || Number(s) < 1)
    throw new Error(`--quick takes a whole factor >= 1 (decimal digits), got '${s}'`);
  return Number(s);
};

/** Parses `name=value` overrides for one experiment; throws listing the valid knobs. */
export function resolveKnobs(experiment, overrides = {}) {
  const values = {};
  for (const [name, spec] of Object.entries(experiment.knobs)) values[name] = spec.default;
  for (const [name, raw] of Object.entries(overrides)) {
    const spec = experiment.knobs[name];
    if (!spec) {
      throw new Error(
        `unknown knob '${name}' for ${experiment.name}; valid: ${Object.keys(experiment.knobs).join(', ')}`,
      );
    }
    try {
      values[name] = kinds[spec.kind].parse(raw, spec);
      // The bounds a knob states: what this kind of machine can serve (max), or what keeps every
      // threshold able to fail (min), each with its reason.
      for (const v of [].concat(values[name])) {
        if (spec.max !== undefined && v > spec.max) throw new Error(`'${v}' is over ${spec.max}: ${spec.why}`);
        if (spec.min !== undefined && v < spec.min) throw new Error(`'${v}' is under ${spec.min}: ${spec.minWhy}`);
      }
    } catch (e) {
      throw new Error(`knob ${experiment.name}.${name}: ${e.message} (expected ${kindDoc(spec)})`, { cause: e });
    }
  }
  return values;
}

/** The knob values as the stack must run them when time is compressed by `factor`. */
export function scaleKnobs(experiment, values, factor) {
  const out = {};
  for (const [name, spec] of Object.entries(experiment.knobs)) out[name] = kinds[spec.kind].scale(values[name], factor);
  return out;
}

export function isDefault(experiment, values) {
  return Object.entries(experiment.knobs).every(([n, s]) => JSON.stringify(s.default) === JSON.stringify(values[n]));
}

export function describeKnobs(experiment) {
  return Object.entries(experiment.knobs).map(([n, s]) => ({
    name: n,
    default: s.default,
    kind: kindDoc(s),
    doc: s.doc,
    min: s.min,
    minWhy: s.minWhy,
    max: s.max,
    why: s.why,
  }));
}
