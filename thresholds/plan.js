/*
 * The plan of a run: for one experiment and suite, the cases k6 will run (when, how fast, where)
 * and, for each, what the model says must happen, widened by the stated tolerance. Nothing
 * expected comes from anywhere else: each plan kind (thresholds/kinds/) makes the plans of its
 * experiments.
 */
import { experiments, list } from './experiments/index.js';
import { kindOf, kindNamed } from './kinds/index.js';
import { resolveKnobs, scaleKnobs, isDefault } from './knobs.js';

export { experiments };
export const QUICK_FACTOR = 5;

/**
 * What this kind of machine (2 cores, k6 beside the stack) can be asked to do, checked on every
 * plan before anything starts:
 * - an arrival rate: twice what k6 sends here at best cannot be faithful (docs/knobs.md);
 * - VUs in flight: the open-files limit is 20000 and cannot be raised, and every VU holds a
 *   connection (an fd in k6, two in a proxy); k6 itself falls behind its schedule well before;
 * - --quick: a 60 s step must stay at least 0.6 s, or scenario start-up is what gets measured.
 */
export const LIMITS = { maxRate: 20_000, maxVus: 5000, maxQuick: 100 };

function checkLimits(p) {
  for (const c of p.cases) {
    const rate = c.rate ?? Math.max(...(c.steps || [0]));
    // k6 takes an arrival rate as whole iterations per time unit (1 s here).
    if (c.rate !== undefined && !Number.isInteger(c.rate))
      throw new Error(
        `${p.experiment} ${c.id} would ask ${c.rate} r/s: k6's arrival rates are whole requests per second`,
      );
    if (rate > LIMITS.maxRate)
      throw new Error(
        `${p.experiment} ${c.id} would ask ${rate} r/s: this kind of machine sends at most ${LIMITS.maxRate} (k6 beside the stack on 2 cores)`,
      );
    if ((c.vus || 0) > LIMITS.maxVus)
      throw new Error(
        `${p.experiment} ${c.id} would hold ${c.vus} VUs at once: at most ${LIMITS.maxVus} here (the open-files limit is 20000)`,
      );
  }
  return p;
}
// Real time (not scaled by --quick) for k6's warm-up before the first case.
const LEAD_IN_MS = 2000;

/** Suites are k6 test types; each holds the experiments that define it, in the list's order. */
export const SUITES = ['smoke', 'spike', 'soak', 'stress', 'load', 'breakpoint'];
// Read when asked, not at import: a team's policy in the list (one `./labw new` made) has its
// suites once the lab has read its file (lab/policy/declared.mjs); k6 never asks.
export const suites = {};
for (const s of SUITES)
  Object.defineProperty(suites, s, {
    enumerable: true,
    get: () => list.filter((e) => e.suites?.[s]).map((e) => e.name),
  });

export function experimentNamed(name) {
  const e = experiments[name];
  if (!e) throw new Error(`unknown experiment '${name}'; valid: ${Object.keys(experiments).join(', ')}`);
  return e;
}

/** The compose profile (docker-compose.yml) that runs an experiment's stack: its own, or one it shares. */
export const stackOf = (name) => experimentNamed(name).stack ?? name;

/**
 * The kind (thresholds/kinds/) of a plan, as it says (a team's policy is known only to the
 * process that read its file: k6 and later readers of the run have its plan), or of an
 * experiment, by its declaration.
 */
export const kindOfPlan = ({ kind, experiment, name }) => kindNamed(kind ?? experimentNamed(experiment ?? name).kind);

export function suiteExperiments(suite) {
  const list = suites[suite];
  if (!list)
    throw new Error(
      `unknown suite '${suite}'; valid: ${Object.keys(suites)
        .filter((s) => suites[s].length)
        .join(', ')}`,
    );
  if (list.length === 0)
    throw new Error(
      `suite '${suite}' has no experiments yet; runnable: ${Object.keys(suites)
        .filter((s) => suites[s].length)
        .join(', ')}`,
    );
  return list;
}

/**
 * The targets as a stack serves them: each with the id of every case, of any suite, that
 * reaches it (an Envoy route per case, for instance), so one stack serves every suite.
 */
export function stackTargets(name, knobs, policy) {
  const exp = experimentNamed(name);
  const ids = {};
  for (const suite of Object.keys(exp.suites)) {
    for (const [t, id] of kindOf(exp).caseTargets(exp, suite, knobs)) (ids[t] ||= new Set()).add(id);
  }
  return exp.targets(policy).map((t) => ({ ...t, cases: [...(ids[t.id] || [])].map((id) => ({ id })) }));
}

const withKind = (exp, p) => ({ experiment: p.experiment, kind: exp.kind, ...p });

/**
 * plan({experiment, suite, factor, overrides, segments, untold}) -> {experiment, suite, factor, knobs,
 * policy, cases, ...}
 * The runner prints it (`just expect`), k6 turns it into scenarios and thresholds, and the
 * results table compares against it.
 * `factor` > 1 is --quick: arrival rates and policy rates times factor, durations and
 * refill intervals divided by it, so the expected counts stay those of the seed timing.
 * `untold`: knobs the stack runs with and the model is not told (`--stack-knob`, a perturbed
 * policy that must fail the run): the plan keeps the model's `policy` and adds `stackPolicy`.
 */
export function plan({ experiment: name, suite, factor: requested = 1, overrides = {}, segments = 1, untold = {} }) {
  const exp = experimentNamed(name);
  if (!exp.suites[suite])
    throw new Error(`experiment '${name}' has no '${suite}' cases; it has: ${Object.keys(exp.suites).join(', ')}`);
  if (!Number.isInteger(requested) || requested < 1 || requested > LIMITS.maxQuick)
    throw new Error(
      `--quick takes a whole factor 1..${LIMITS.maxQuick}, got ${requested}: a 60 s step must stay at least 0.6 s`,
    );
  // An experiment may cap the factor at what its load generator can still send faithfully.
  const factor = Math.min(requested, exp.maxQuick ?? Infinity);
  const knobs = resolveKnobs(exp, overrides);
  const policy = { ...scaleKnobs(exp, knobs, factor), ...exp.derived?.(knobs) };
  if (exp.checkScaled) exp.checkScaled(policy, factor);
  const seedComparable = isDefault(exp, knobs);
  const planned = withKind(
    exp,
    checkLimits(
      kindOf(exp).plan({
        exp,
        suite,
        factor,
        requested,
        knobs,
        policy,
        leadInMs: LEAD_IN_MS,
        seedComparable,
        segments,
      }),
    ),
  );
  if (Object.keys(untold).length === 0) return planned;
  const stackKnobs = resolveKnobs(exp, { ...overrides, ...untold });
  const stackPolicy = { ...scaleKnobs(exp, stackKnobs, factor), ...exp.derived?.(stackKnobs) };
  if (exp.checkScaled) exp.checkScaled(stackPolicy, factor);
  return { ...planned, stackPolicy, untold };
}

/**
 * What the model says a case does over time, where its kind can say (limiter: passed and limited
 * so far per second, as bands), or null: the results pages draw it under the measured curve.
 */
export function caseCourse(plan, caseId) {
  const kind = kindOfPlan(plan);
  const c = plan.cases.find((x) => x.id === caseId);
  return kind.course && c ? kind.course(experimentOfPlan(plan), plan, c) : null;
}

/**
 * The experiment a plan is of, to judge it again: the list's, or for a team's policy read by
 * another process only its name (its plan carries what its targets do: targetPolicies).
 */
export const experimentOfPlan = (plan) => experiments[plan.experiment] ?? { name: plan.experiment };

/**
 * Which policy explains what a case measured, where its kind can search (limiter: a knob's value
 * whose predicted counts hold the measured ones), e.g. [{knob: 'rate', value: 16, planned: 15}].
 */
export function explainCase(plan, caseId, measured, replayInput = null) {
  const kind = kindOfPlan(plan);
  const c = plan.cases.find((x) => x.id === caseId);
  return kind.explain && c ? kind.explain(experimentNamed(plan.experiment), plan, c, measured, replayInput) : null;
}
