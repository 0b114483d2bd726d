/*
 * `expect <suite> [--quick[=N]] [knobs]`: what the model expects of a suite, as JSON, nothing
 * started; with --sensitivity instead the smallest policy change each case catches; with
 * `--sensitivity --replay=<testid>` the smallest change a recorded run's replay catches; with
 * `--policy=FILE` (a team's nginx.conf or Envoy bootstrap) the policy as the model read it,
 * route by route, each figure with its file:line.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseRunArgs } from './args.mjs';
import { readRun } from '../results/runs.mjs';
import { replaySensitivity } from '../judge/replay-sensitivity.mjs';
import { table } from './markdown.mjs';
import { plansFor } from '../run/suite.mjs';
import { sensitivity } from '../../thresholds/sensitivity.js';
import { formatSensitivity } from './docs.mjs';
import { formatTable } from '../judge/table.mjs';
import { readPolicy, policyRows, policyTools } from '../policy/index.mjs';

/** `expect --policy=FILE`: what the model read of a team's policy. */
function showPolicy(words, root, say) {
  const given = words.filter((w) => w.startsWith('--policy='));
  if (given.length !== 1 || words.length !== 1) throw new Error(`usage: ./labw expect --policy=FILE (a team's nginx.conf or Envoy bootstrap); got '${words.join(' ')}'`);
  const policy = readPolicy(given[0].slice('--policy='.length), policyTools(root));
  const [head, rows] = policyRows(policy);
  say(`${policy.proxy} policy ${policy.file}, as the model read it (every cell shown; cases and a run of it are not planned yet):\n${formatTable(rows, head)}`);
  return 0;
}

/** The rows of replaySensitivity as a table: per limiter and number, the smallest change caught either way. */
function replayTable(rows) {
  const side = (r, x) => {
    if (!x) return 'none within 50 %';
    const by = r.value ? ` (${x.value > r.value ? '+' : ''}${+(((x.value - r.value) / r.value) * 100).toFixed(1)} %)` : '';
    return `${+x.value.toFixed(3)}${by}: ${x.failed[0]}`;
  };
  return table(['limiter', 'number', 'value', 'smallest lower caught', 'smallest higher caught'], rows.map((r) => [`${r.experiment}/${r.target}`, r.field, String(r.value), side(r, r.down), side(r, r.up)]));
}

/** The recorded run a --replay names: results/<testid>, else docs/runs/<testid>. */
function recordedRun(root, id) {
  const where = ['results', join('docs', 'runs')].map((d) => join(root, d)).find((d) => existsSync(join(d, id)));
  if (!where) throw new Error(`--replay=${id}: no run of that testid in results/ or docs/runs/`);
  return readRun(where, id, { panels: false });
}

export default async function expect(words, { say, root }) {
  if (words.some((w) => w.startsWith('--policy='))) return showPolicy(words, root, say);
  const replay = words.filter((w) => w.startsWith('--replay='));
  if (replay.length) {
    if (replay.length > 1 || !words.includes('--sensitivity')) throw new Error('--replay=<testid> goes once, with --sensitivity');
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
