/*
 * `expect <suite> [--quick[=N]] [knobs]`: what the model expects of a suite, as JSON, nothing
 * started; with --sensitivity instead the smallest policy change each case catches; with
 * `--sensitivity --replay=<testid>` the smallest change a recorded run's replay catches; with
 * `--policy=FILE` (a team's nginx.conf or Envoy bootstrap) the policy as the model read it,
 * route by route, each figure with its file:line.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseRunArgs, policyFlags } from './args.mjs';
import { readRun } from '../results/runs.mjs';
import { replaySensitivity } from '../results/replay-sensitivity.mjs';
import { table } from '../lib.mjs';
import { plansFor } from '../run/suite.mjs';
import { sensitivity } from '../../thresholds/sensitivity.js';
import { formatSensitivity } from './docs.mjs';
import { formatTable } from '../judge/table.mjs';
import { policyRows } from '../policy/index.mjs';
import { usePolicy } from '../policy/use.mjs';
import { casesWords } from '../policy/words.mjs';
import { plan as makePlan } from '../../thresholds/plan.js';

/** A policy plan's cases as a table: the load, and the ranges each is judged by. */
function caseRows(plan) {
  const range = (r) => (r ? (r.lo === r.hi ? String(r.lo) : `${r.lo}..${r.hi}`) : '-');
  const wait = (c) =>
    c.expected.maxMs ? `${(c.expected.maxMs.lo / 1000).toFixed(2)}..${(c.expected.maxMs.hi / 1000).toFixed(2)} s` : '-';
  // Where its other limits refuse with another status, each range says its status.
  const limited = (c) =>
    c.expected.also
      ? [[c.limitedStatus, c.expected.limited], ...Object.entries(c.expected.also)]
          .map(([st, r]) => `${range(r)} (${st})`)
          .join(', ')
      : range(c.expected.limited);
  return plan.cases.map((c) => [
    c.id,
    `${c.rate} r/s`,
    `${+(c.durationMs / 1000).toFixed(3)} s`,
    `+${+(c.startMs / 1000).toFixed(3)} s`,
    String(c.requests),
    range(c.expected.ok),
    limited(c),
    wait(c),
  ]);
}

/**
 * `expect [<suite> [--quick[=N]] [knobs] [--sensitivity]] --policy=FILE`: what the model read of
 * a team's policy, route by route; with a suite, the cases it chooses and what each must give.
 */
function showPolicy(words, root, say) {
  const sens = words.includes('--sensitivity');
  const flags = policyFlags(words.filter((w) => w !== '--sensitivity'));
  if (flags.stackPolicy || (sens && !flags.rest.length))
    throw new Error(
      `usage: ./labw expect [smoke|spike|soak [--quick[=N]] [knob=value ...] [--sensitivity]] --policy=FILE (a team's nginx.conf or Envoy bootstrap); got '${words.join(' ')}'`,
    );
  const { experiment, routes, policy } = usePolicy(flags, root);
  const [head, rows] = policyRows(policy);
  say(
    `${policy.proxy} policy ${policy.file}, named ${experiment.name} after ${experiment.namedFrom} (--name=NAME gives another), as the model read it (every cell shown, not judged):\n${formatTable(rows, head)}`,
  );
  const changes = experiment.asRead.changes ?? [];
  if (changes.length)
    say(
      `\nwhat the lab reads from where, and changes to run it:\n${formatTable(
        changes.map((c) => [c.at, c.what]),
        ['at', 'what'],
      )}`,
    );
  if (!flags.rest.length) return 0;
  const request = parseRunArgs(flags.rest, { only: experiment.name });
  say(
    `\nhow each route's cases meet its buckets:\n${formatTable(
      routes.map((r) => [
        r.route,
        r.class ?? '-',
        r.at,
        r.target ?? '-',
        casesWords(r, request.factor),
        (r.keys || []).map((k) => `${k.zone ?? k.bucket}: ${k.how}`).join('; '),
      ]),
      ['route', 'class of client', 'at', 'target', 'cases', 'buckets'],
    )}`,
  );
  if (sens) {
    // Every number read from the file is a knob: the smallest change of each that a case catches.
    say(`\n${formatSensitivity(sensitivity({ experiment: experiment.name, suite: request.name }), { perCase: true })}`);
    say(
      `\nthe knobs: ${Object.entries(experiment.knobs)
        .map(([k, v]) => `${k}=${v.default} (${v.doc})`)
        .join('; ')}`,
    );
    return 0;
  }
  const plan = makePlan({
    experiment: experiment.name,
    suite: request.name,
    factor: request.factor,
    overrides: request.overrides[experiment.name],
  });
  say(
    `\n${request.name} cases of ${experiment.name}${plan.factor > 1 ? ` at --quick x${plan.factor}` : ''} (expected ranges with the tolerance; nothing is run yet):\n${formatTable(caseRows(plan), ['case', 'rate', 'for', 'starts', 'requests', '200', 'limited', 'longest wait'])}`,
  );
  return 0;
}

/** The rows of replaySensitivity as a table: per limiter and number, the smallest change caught either way. */
function replayTable(rows) {
  const side = (r, x) => {
    if (!x) return 'none within 50 %';
    const by = r.value
      ? ` (${x.value > r.value ? '+' : ''}${+(((x.value - r.value) / r.value) * 100).toFixed(1)} %)`
      : '';
    return `${+x.value.toFixed(3)}${by}: ${x.failed[0]}`;
  };
  return table(
    ['limiter', 'number', 'value', 'smallest lower caught', 'smallest higher caught'],
    rows.map((r) => [`${r.experiment}/${r.target}`, r.field, String(r.value), side(r, r.down), side(r, r.up)]),
  );
}

/** The recorded run a --replay names: results/<testid>, else docs/runs/<testid>. */
function recordedRun(root, id) {
  const where = ['results', join('docs', 'runs')].map((d) => join(root, d)).find((d) => existsSync(join(d, id)));
  if (!where) throw new Error(`--replay=${id}: no run of that testid in results/ or docs/runs/`);
  return readRun(where, id, { panels: false });
}

export default async function expect(words, { say, root }) {
  if (words.some((w) => w === '--policy' || w.startsWith('--policy='))) return showPolicy(words, root, say);
  const replay = words.filter((w) => w.startsWith('--replay='));
  if (replay.length) {
    if (replay.length > 1 || !words.includes('--sensitivity'))
      throw new Error('--replay=<testid> goes once, with --sensitivity');
    say(replayTable(replaySensitivity(recordedRun(root, replay[0].slice('--replay='.length)))));
    return 0;
  }
  const sens = words.filter((w) => w === '--sensitivity').length;
  if (sens > 1) throw new Error('--sensitivity given twice');
  const req = parseRunArgs(words.filter((w) => w !== '--sensitivity'));
  if (!sens) {
    console.log(JSON.stringify(plansFor(req), null, 1));
    return 0;
  }
  for (const experiment of req.experiments) {
    const s = sensitivity({ experiment, suite: req.name, factor: req.factor, overrides: req.overrides[experiment] });
    say(`${formatSensitivity(s, { perCase: true })}\n`);
  }
  return 0;
}
