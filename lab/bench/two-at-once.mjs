/*
 * Two servers loaded at the same time, a wrk -t1 on each (the same connections and document),
 * and each one's CPU per relayed request over the same seconds, from its process group in /proc:
 * a slow spell of the host falls on both, so their ratio moves less than two measurements made
 * one after the other (docs/journal/json-filter.md). The one started first gained 2.5 % in a copy of the
 * Node filter against itself, so the order is swapped every round.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { wrkAsync } from './tools.mjs';
import { groupTicks, TICKS_PER_S } from '../stack/cpu.mjs';

export const TWO_AT_ONCE = { rounds: 6, connections: 200, seconds: 8, warmS: 2 };

/** The document these loads post, written into `dir`: the k6 sample, asking to be relayed. Its path. */
export function relayDocument(root, dir) {
  const body = join(dir, 'relay.json');
  writeFileSync(
    body,
    JSON.stringify({ ...JSON.parse(readFileSync(join(root, 'k6', 'json-filter-sample.json'), 'utf8')), relay: true }),
  );
  return body;
}

/**
 * `pair`: [{name, url, group}, {name, url, group}], `group` a process group to read the CPU of.
 * Resolves to one row per round: {round, first, costUs: [a, b], relayed: [a, b], errors, ratio: a / b}.
 */
export async function twoAtOnce(env, pair, { rounds, connections, seconds, warmS, body, say = () => {} }) {
  const load = (s, order) =>
    Promise.all(
      order.map((x) =>
        wrkAsync(env, x.url, connections, s, { script: 'stacks/json-filter/wrk-post.lua', body, threads: 1 }),
      ),
    );
  const out = [];
  for (let round = 1; round <= rounds; round += 1) {
    // Odd rounds start the first of the pair first, even ones the second.
    const order = round % 2 ? pair : [pair[1], pair[0]];
    say(
      `two at once: ${pair[0].name} and ${pair[1].name}, round ${round} of ${rounds}, ${order[0].name} started first`,
    );
    await load(warmS, order);
    const groups = pair.map((x) => x.group);
    const before = groupTicks(groups);
    const loads = await load(seconds, order);
    const after = groupTicks(groups);
    const byName = Object.fromEntries(order.map((x, i) => [x.name, loads[i]]));
    const relayed = pair.map((x) => byName[x.name].requests - byName[x.name].non2xx);
    const costUs = pair.map((x, i) =>
      relayed[i] > 0 ? ((after[x.group] - before[x.group]) / TICKS_PER_S / relayed[i]) * 1e6 : null,
    );
    const errors = pair.reduce((a, x) => a + byName[x.name].non2xx + byName[x.name].socketErrors, 0);
    out.push({
      round,
      first: order[0].name,
      costUs,
      relayed,
      errors,
      ratio: costUs.includes(null) ? null : costUs[0] / costUs[1],
    });
  }
  return out;
}
