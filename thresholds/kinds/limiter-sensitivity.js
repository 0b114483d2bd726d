/*
 * What a limiter plan's thresholds catch: per case and per knob, the smallest change in each
 * direction that moves the model's whole predicted range (every jitter trial) out of the
 * thresholds built for the unchanged policy, by a widening walk and bisection per knob.
 */
import { scaleKnobs } from '../knobs.js';
import { refusedAs } from '../models/limiter-replay.js';

// How far a knob is moved in search of a change that is caught: up to twice its value (at
// least 10 steps), down to its smallest valid value.
const SEARCH_UP = (k) => Math.max(k.value, 10 * k.step);

const outside = (p, r) => p.max < r.lo || p.min > r.hi;

/** Does a case's prediction under another policy fall out of its thresholds? Which measure? */
function caughtBy(c, s) {
  const e = c.expected;
  if (outside(s.ok, e.ok)) return 'ok';
  if (outside(refusedAs(s, c.limitedStatus), e.limited)) return 'limited';
  // Another of its limits' refusals, by their own status (a limit_conn's 503 beside a limit_req's 429).
  const also = Object.keys(e.also ?? {}).find((st) => outside(refusedAs(s, Number(st)), e.also[st]));
  if (also) return `refused ${also}`;
  if (e.maxMs && outside(s.maxDelayMs, e.maxMs)) return 'max wait';
  return null;
}

/** The knobs a search can move, one value each (a list knob gives one entry per element). */
function movable(exp, knobs) {
  const out = [];
  for (const [name, spec] of Object.entries(exp.knobs)) {
    // A knob of the load (a policy's load_rates) is not the policy's: what a run sees of it is the plan.
    if (spec.load) continue;
    if (spec.kind === 'counts')
      knobs[name].forEach((v, i) => out.push({ name, index: i, label: `${name}[${v}]`, value: v, step: 1, min: 0 }));
    else if (spec.kind === 'rate' || spec.kind === 'count')
      out.push({ name, label: name, value: knobs[name], step: 1, min: spec.min ?? (spec.kind === 'rate' ? 1 : 0) });
    else if (spec.kind === 'seconds') out.push({ name, label: name, value: knobs[name], step: 0.001, min: 0.001 });
  }
  return out;
}

function withValue(knobs, k, v) {
  if (k.index === undefined) return { ...knobs, [k.name]: v };
  const list = [...knobs[k.name]];
  list[k.index] = v;
  return { ...knobs, [k.name]: list };
}

/**
 * The cases that fail for sure when knob k is moved to v, [{i (case index), by (measure)}]; null for
 * no valid policy.
 */
const failuresUnder = (exp, base, predict) => {
  const baseTargets = exp.targets(base.policy);
  return (k, v) => {
    let knobs;
    try {
      knobs = withValue(base.knobs, k, v);
    } catch {
      return null; // not a valid policy: the search stops there
    }
    const policy = { ...scaleKnobs(exp, knobs, base.factor), ...exp.derived?.(knobs) };
    try {
      exp.checkScaled?.(policy, base.factor);
    } catch {
      return null;
    }
    // Same targets, same schedule: only the policies the stack runs differ.
    const targets = exp.targets(policy).map((t, i) => ({ ...t, id: baseTargets[i].id }));
    const changed = targets.filter((t, i) => JSON.stringify(t.policy) !== JSON.stringify(baseTargets[i].policy));
    const predictions = predict(changed, base.cases, exp.name);
    return base.cases.flatMap((c, i) => {
      const s = predictions.get(c);
      const by = s && caughtBy(c, s);
      return by ? [{ i, by }] : [];
    });
  };
};

/**
 * One knob moved one way (`dir`): per case index, the smallest change caught, {delta, by}. It
 * walks outwards in growing steps; a case first caught at n (not at the step before) is
 * narrowed down by bisection, assuming a bigger change of the same sign is caught too.
 */
function searchOneWay(k, dir, failures, caseCount) {
  const found = new Map();
  const limit = Math.round((dir === 'up' ? SEARCH_UP(k) : k.value - k.min) / k.step); // in steps
  const memo = new Map();
  const at = (n) => {
    if (!memo.has(n)) memo.set(n, failures(k, k.value + (dir === 'up' ? n : -n) * k.step));
    return memo.get(n);
  };
  const catches = (n, i) => at(n)?.find((f) => f.i === i);
  let prev = 0;
  for (let n = 1; n <= limit; n = n < 8 ? n + 1 : Math.min(limit, Math.max(n + 1, Math.round(n * 1.25)))) {
    const fails = at(n);
    if (fails === null) break;
    for (const { i } of fails) {
      if (found.has(i)) continue;
      let [lo, hi] = [prev, n];
      while (hi - lo > 1) {
        const mid = Math.floor((lo + hi) / 2);
        if (catches(mid, i)) hi = mid;
        else lo = mid;
      }
      found.set(i, { delta: Number((hi * k.step).toPrecision(6)), by: catches(hi, i).by });
    }
    if (found.size === caseCount || n >= limit) break;
    prev = n;
  }
  return found;
}

/** A switch (nodelay or delay): is each other way caught by some case? */
function switchCaught(name, spec, base, failures) {
  const tried = spec.values
    .filter((v) => v !== base.knobs[name])
    .map((v) => ({ value: v, fails: failures({ name, label: name }, v) ?? [] }));
  return {
    switch: tried.map((x) => ({ value: x.value, by: x.fails[0]?.by ?? null, cases: x.fails.length })),
    cases: new Set(tried.flatMap((x) => x.fails.map((f) => f.i))).size,
  };
}

/**
 * sensitivity({experiment, suite, factor, overrides}) -> {cases: [{id, knobs: {label: {down, up, by}}}],
 * knobs: {label: {down, up, cases}}, unseen: [labels]}; `down`/`up` are the smallest changes
 * (knob units, seed timing) that some threshold catches for sure, or null within the search.
 */
export function limiterSensitivity(exp, base, predict) {
  const perCase = base.cases.map((c) => ({ id: c.id, knobs: {} }));
  const summary = {};
  const failures = failuresUnder(exp, base, predict);
  for (const k of movable(exp, base.knobs)) {
    const found = {
      down: searchOneWay(k, 'down', failures, base.cases.length),
      up: searchOneWay(k, 'up', failures, base.cases.length),
    };
    base.cases.forEach((c, i) => {
      perCase[i].knobs[k.label] = { down: found.down.get(i) ?? null, up: found.up.get(i) ?? null };
    });
    const best = (m) => [...m.values()].reduce((a, b) => (a === null || b.delta < a.delta ? b : a), null);
    summary[k.label] = {
      down: best(found.down),
      up: best(found.up),
      cases: new Set([...found.down.keys(), ...found.up.keys()]).size,
      atMin: k.value === k.min,
    };
  }
  for (const [name, spec] of Object.entries(exp.knobs)) {
    if (spec.kind === 'choice') summary[name] = switchCaught(name, spec, base, failures);
    // A status the proxy answers with instead of the limited one shows as an unexpected status
    // in every case that expects a limited answer for sure.
    if (spec.kind === 'status') {
      const seeing = base.cases.filter((c) => c.expected.limited.lo > 0 || c.expected.limited.min > 0);
      summary[name] = { any: seeing.length > 0, cases: seeing.length };
    }
  }
  const unseen = Object.entries(summary)
    .filter(([, s]) => s.cases === 0)
    .map(([k]) => k);
  const partly = Object.entries(summary)
    .filter(([, s]) => s.cases > 0 && ((s.down === null && !s.atMin) || s.up === null) && s.any === undefined)
    .map(([k]) => k);
  return {
    experiment: exp.name,
    suite: base.suite,
    factor: base.factor,
    kind: 'limiter',
    cases: perCase,
    knobs: summary,
    unseen,
    oneSided: partly,
  };
}

// How long the diagnosis of one failed case may search (a case of many thousand requests replays slowly).
const EXPLAIN_BUDGET_MS = 20_000;

/**
 * Which policy explains what a case measured: for each knob on its own, the values whose
 * predicted range (`predict`'s: the plan's trials, or the replay of what k6 sent) holds the
 * measured 200 and limited counts, searched outward from the plan's value step by step, then in
 * growing steps, down to its least and up to 16 times it, and every value next to a fit that
 * fits too. `measured` is {ok, limited}; returns {found: [{knob, lo, hi, planned}] (nearest
 * first), searched: ['knob lo..hi', ...], on: 'replay' or 'plan'}.
 */
export function limiterExplain(exp, plan, c, measured, predict, replayed = false, budgetMs = EXPLAIN_BUDGET_MS) {
  const deadline = Date.now() + budgetMs;
  const baseTargets = exp.targets(plan.policy);
  const holds = (r, v) => v >= r.min && v <= r.max;
  const found = [];
  const searched = [];
  for (const k of movable(exp, plan.knobs)) {
    const lo = k.min;
    const hi = Math.max(k.value * 16, k.value + 40 * k.step);
    const fits = (v) => {
      if (v < lo || v > hi || Date.now() > deadline) return false;
      let policy;
      try {
        const knobs = withValue(plan.knobs, k, v);
        policy = { ...scaleKnobs(exp, knobs, plan.factor), ...exp.derived?.(knobs) };
        exp.checkScaled?.(policy, plan.factor);
      } catch {
        return false;
      }
      const target = exp
        .targets(policy)
        .map((t, i) => ({ ...t, id: baseTargets[i].id }))
        .find((t) => t.id === c.target);
      if (JSON.stringify(target.policy) === JSON.stringify(baseTargets.find((t) => t.id === c.target).policy))
        return false;
      // A case that follows another on its bucket is predicted after it (predict's lead).
      const cases = plan.cases.filter((x) => x === c || x.id === c.follows);
      const s = predict([target], cases, exp.name, plan.segments ?? 1).get(c);
      return holds(s.ok, measured.ok) && holds(refusedAs(s, c.limitedStatus), measured.limited);
    };
    const tried = [];
    for (
      let d = k.step;
      k.value - d >= lo || k.value + d <= hi;
      d = d < 20 * k.step ? d + k.step : Math.round((d * 1.1) / k.step) * k.step
    )
      tried.push(k.value - d, k.value + d);
    const first = tried.find((v) => fits(v));
    const reach = Date.now() > deadline ? ' (stopped: the search ran out of its time)' : '';
    searched.push(`${k.label} ${Number(lo.toPrecision(6))}..${Number(hi.toPrecision(6))}${reach}`);
    if (first === undefined) continue;
    // Its neighbours that fit too: the range of values the counts cannot tell apart.
    let [a, b] = [first, first];
    while (fits(a - k.step)) a -= k.step;
    while (fits(b + k.step)) b += k.step;
    const round = (x) => Number(x.toPrecision(6));
    found.push({ knob: k.label, lo: round(a), hi: round(b), planned: k.value });
  }
  const off = (f) => Math.min(Math.abs(f.lo - f.planned), Math.abs(f.hi - f.planned)) / f.planned;
  return { found: found.sort((a, b) => off(a) - off(b)), searched, on: replayed ? 'replay' : 'plan' };
}
