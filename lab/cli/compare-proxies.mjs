/*
 * `compare-proxies <suite> --policy=FILE [--quick[=N]] [--record]`: one team's limit in every
 * proxy the lab knows, side by side. The limit (R requests a second per client, B at once) is
 * read from the policy's first limited target; each proxy writes the config closest to it
 * (its module's fromLimit, which says where it cannot express the same). One load (the same
 * steps: R/2, 3R and 1.5R) runs against each, judged as any run is, and one table and one page
 * say what each let through, what its model predicted, and what the limit as stated (a token
 * bucket of B refilled at R, over the schedule k6 sent) would have.
 */
import { mkdirSync, readFileSync, writeFileSync, realpathSync, copyFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import test from './test.mjs';
import { readPolicy, policyTools } from '../policy/index.mjs';
import { proxies, proxyOf, proxyClaiming } from '../policy/proxies/index.mjs';
import { formatTable } from '../judge/table.mjs';
import { buildProxiesPage } from '../results/page-proxies.mjs';
import { checkProxiesPage } from '../results/check-proxies.mjs';
import { compareRows, COMPARE_HEAD } from '../results/proxies-table.mjs';

const USAGE = './labw compare-proxies <suite> --policy=FILE [--quick[=N]] [--record]';

/** The team's limit from its policy: {rate, atOnce, status, at, proxy}. */
export function teamLimit(policy) {
  const proxy = proxyOf(policy);
  const t = proxy.targets(policy).targets.find((x) => !x.exempt && x.rate > 0);
  if (!t) throw new Error(`compare-proxies: ${policy.file}: no limited route to take a rate from`);
  return { rate: t.rate, atOnce: proxy.atOnce(t), status: t.status ?? 429, at: t.at, proxy: proxy.name };
}

/** The same steps for every proxy: under its rate, three times it, and half as much again. */
export const compareRates = ({ rate }) => [
  Math.max(1, Math.round(rate / 2)),
  Math.round(3 * rate),
  Math.round(1.5 * rate),
];

/** Each proxy's config for `limit`, written into `dir`: [{proxy, file, says}]. */
function writeConfigs(limit, dir) {
  return proxies.map((p) => {
    const { file, text, says } = p.fromLimit(limit);
    const path = join(dir, p.name, file);
    mkdirSync(join(dir, p.name), { recursive: true });
    writeFileSync(path, text);
    if (proxyClaiming(text)?.name !== p.name)
      throw new Error(`compare-proxies: ${path} is not claimed as ${p.title}'s`);
    return { proxy: p.name, title: p.title, file: path, says };
  });
}

/** One proxy's run: its exit code, run id and outcomes. */
async function runOne(root, suite, cfg, flags, say) {
  const code = await test([suite, `--policy=${cfg.file}`, `--name=compare-${cfg.proxy}`, ...flags], { root, say });
  const dir = realpathSync(join(root, 'results', 'latest'));
  const outcomes = JSON.parse(readFileSync(join(dir, 'outcomes.json'), 'utf8'));
  const sends = JSON.parse(readFileSync(join(dir, `${suite}.compare-${cfg.proxy}.sends.json`), 'utf8'));
  return { ...cfg, code, runId: relative(join(root, 'results'), dir), outcomes, sends };
}

export default async function compareProxies(words, { root, say }) {
  const [suite, ...rest] = words.filter((w) => !w.startsWith('--'));
  const policyFlag = words.find((w) => w.startsWith('--policy='));
  const quick = words.filter((w) => /^--quick(=\d+)?$/.test(w));
  if (suite !== 'spike' || !policyFlag || rest.length) throw new Error(`usage: ${USAGE} (the suite: spike)`);
  const policy = readPolicy(policyFlag.slice('--policy='.length), policyTools(root));
  const limit = teamLimit(policy);
  const rates = compareRates(limit);
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  const dir = join(root, 'results', 'compare-proxies', stamp);
  const configs = writeConfigs(limit, dir);
  say(
    `compare-proxies: ${limit.rate} r/s per client, ${limit.atOnce} at once (${limit.at}), in ${configs.length} proxies; the same steps for each: ${rates.join(', ')} r/s, 10 s each`,
  );
  const runs = [];
  for (const cfg of configs) {
    say(`compare-proxies: ${cfg.title} (${relative(root, cfg.file)})`);
    runs.push(await runOne(root, suite, cfg, [...quick, `load_rates=${rates.join(',')}`], say));
  }
  const result = { stamp, suite, quick: quick[0] ?? null, policy: relative(root, policy.file), limit, rates, runs };
  const rows = compareRows(result);
  // What the page and the docs read: each run's config and words, not its sends and outcomes.
  const kept = runs.map(({ proxy, title, file, says, code, runId }) => ({
    proxy,
    title,
    file: relative(root, file),
    says,
    code,
    runId,
  }));
  const saved = { ...result, runs: kept, rows };
  writeFileSync(join(dir, 'compare.json'), `${JSON.stringify(saved, null, 1)}\n`);
  const pageFile = buildProxiesPage(root, saved);
  const problems = await checkProxiesPage(pageFile, saved, join(dir, 'page.png'));
  for (const p of problems) say(`compare-proxies: page: ${p}`);
  say(
    formatTable(
      rows.map((r) => r.cells),
      COMPARE_HEAD,
    ),
  );
  for (const c of configs) say(`${c.title}: ${c.says.join('; ')}`);
  if (words.includes('--record')) {
    const to = join(root, 'docs', 'runs', 'compare-proxies.json');
    copyFileSync(join(dir, 'compare.json'), to);
    say(`recorded: ${relative(root, to)} (./labw docs writes docs/compare-proxies.md from it)`);
  }
  say(
    `configs: ${relative(root, dir)}; page: ${relative(root, pageFile)} (its screenshot: ${relative(root, join(dir, 'page.png'))})`,
  );
  return rows.every((r) => r.pass) && !problems.length ? 0 : 1;
}
