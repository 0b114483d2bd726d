/*
 * What a run was, for every page that shows it: the --quick factor each experiment really ran
 * at (an experiment may cap it), the what-if knobs the model was told, the perturbations it was
 * not (--stack-knob, --stack-cpu, --k6-cpu), and segments. Two runs of an experiment are
 * comparable when all of these agree; a perturbed run is never anyone's default baseline.
 */

const words = (perExperiment, prefix, only) =>
  Object.entries(perExperiment || {})
    .filter(([e]) => !only || e === only)
    .flatMap(([e, ks]) =>
      Object.entries(ks || {}).map(([k, v]) => `${prefix}${e}.${k}=${Array.isArray(v) ? v.join(',') : v}`),
    );

/** The what-if knobs (the model told of them), as `experiment.knob=value`; of one experiment with `only`. */
export const knobWords = (info, only = null) => words(info.knobs, '', only);

/** The perturbations the model was not told of, as the flags that made them; of one experiment's stack with `only`. */
export function perturbationWords(info, only = null) {
  const p = info.perturbed;
  if (!p) return [];
  return [
    ...words(p.knobs, '--stack-knob ', only),
    ...Object.entries(p.cpu || {}).map(([s, n]) => `--stack-cpu ${s}=${n}`),
    ...(p.k6Cpu ? [`--k6-cpu ${p.k6Cpu}`] : []),
    ...(p.policy ? [`--stack-policy=${p.policy}`] : []),
  ];
}

/** The factor an experiment ran at: its own (capped) where run.json has it, else the run's. */
export const factorOf = (info, experiment) => info.factors?.[experiment] ?? info.factor;

/** The --quick a run was asked for, and where an experiment capped it, what each really ran at. */
export function quickWords(info) {
  const asked = info.factor > 1 ? `x${info.factor}` : 'no';
  const capped = Object.entries(info.factors || {}).filter(([, f]) => f !== info.factor);
  return capped.length ? `${asked} (${capped.map(([e, f]) => `${e} capped at x${f}`).join(', ')})` : asked;
}

/** What the run was, in a few words: `defaults`, `what-if …`, `PERTURBED …`. */
export function runWhat(info, only = null) {
  const knobs = knobWords(info, only);
  const perturbed = perturbationWords(info, only);
  const parts = [];
  if (perturbed.length) parts.push(`PERTURBED ${perturbed.join(' ')}`);
  if (knobs.length) parts.push(`what-if ${knobs.join(' ')}`);
  if ((info.segments || 1) > 1) parts.push(`${info.segments} segments`);
  return parts.length ? parts.join(' · ') : 'defaults';
}

/** Runs of an experiment with the same key are comparable: factor, knobs, perturbations, segments. */
export const comparableKey = (info, experiment) =>
  JSON.stringify([
    factorOf(info, experiment),
    knobWords(info, experiment),
    perturbationWords(info, experiment),
    info.segments || 1,
  ]);

/** The heading of a group of comparable runs. */
export const groupTitle = (info, experiment) => {
  const f = factorOf(info, experiment);
  return `${f > 1 ? `--quick=${f}` : 'seed timing'} · ${runWhat(info, experiment)}`;
};

/** A run with neither what-if knobs nor perturbations: what a default baseline must be. */
export const isPlain = (info) => knobWords(info).length === 0 && perturbationWords(info).length === 0;

/** What makes two runs of one experiment not comparable, in words; [] when nothing does. */
export function differences(a, b, experiment) {
  const out = [];
  if (factorOf(a, experiment) !== factorOf(b, experiment))
    out.push(`--quick x${factorOf(a, experiment)} against x${factorOf(b, experiment)}`);
  const ka = knobWords(a, experiment).join(' ') || 'default knobs';
  const kb = knobWords(b, experiment).join(' ') || 'default knobs';
  if (ka !== kb) out.push(`knobs ${ka} against ${kb}`);
  const pa = perturbationWords(a, experiment).join(' ') || 'no perturbation';
  const pb = perturbationWords(b, experiment).join(' ') || 'no perturbation';
  if (pa !== pb) out.push(`${pa} against ${pb}`);
  return out;
}
