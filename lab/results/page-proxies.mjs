/*
 * The page of a compare-proxies run: one team's limit written in each proxy, one load against
 * each, and per step what each let through beside its model and the limit as stated; then each
 * proxy's config as the lab wrote it and where it cannot say the same thing.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { esc, mark, table, page, section } from './layout.mjs';
import { writePage, buildAssets } from './build.mjs';
import { COMPARE_HEAD } from './proxies-table.mjs';

export const proxiesPath = (stamp) => `compare-proxies/${stamp}.html`;

/** The table, each run's cells escaped, its pass marked, its step linked to the run's page. */
function resultTable(result) {
  const rows = result.rows.map((r) => [
    esc(r.cells[0]),
    r.runId ? `<a href="../runs/${esc(r.runId)}/index.html">${esc(r.cells[1])}</a>` : esc(r.cells[1]),
    ...r.cells.slice(2, -1).map(esc),
    mark(r.pass),
  ]);
  return table(COMPARE_HEAD.map(esc), rows, { attrs: (_, i) => ` data-row="${i}"` });
}

/** Where each proxy parted from the limit as stated, step by step, in words. */
function differences(result) {
  const items = result.runs.map((run) => {
    const mine = result.rows.filter((r) => r.proxy === run.proxy && r.stated !== undefined);
    const steps = mine.map(
      (r) =>
        `${r.cells[0]}: ${r.ok} let through, ${r.stated} as stated (${r.ok - r.stated >= 0 ? '+' : ''}${r.ok - r.stated})`,
    );
    return `<li><b>${esc(run.title)}</b>: ${esc(run.says.join('; '))}.<br><span class="muted">${esc(steps.join('; '))}</span></li>`;
  });
  return `<ul class="differences">${items.join('\n')}</ul>`;
}

/** Each proxy's config as written for the run. */
function configs(root, result) {
  return result.runs
    .map(
      (run) => `<h3>${esc(run.title)}</h3><pre class="config">${esc(readFileSync(join(root, run.file), 'utf8'))}</pre>`,
    )
    .join('\n');
}

/** The page's HTML. */
export function proxiesPage(root, result) {
  const { limit } = result;
  const intro = `${limit.rate} requests a second per client, ${limit.atOnce} at once, ${limit.status} above: the limit of ${esc(result.policy)} (${esc(limit.at)}), a ${esc(limit.proxy)} policy. The same steps for each proxy (${result.rates.join(', ')} r/s${result.quick ? `, ${esc(result.quick)}` : ''}). Each case is judged by that proxy's own model, replayed over the requests k6 sent; "as stated" is a token bucket of ${limit.atOnce} refilled at the stated rate over the same requests, shown and not judged.`;
  const body = [
    `<p>${intro}</p>`,
    section('table', 'What each proxy let through', resultTable(result)),
    section('differences', 'Where and why they differ', differences(result)),
    section('configs', 'The configs the lab wrote', configs(root, result)),
  ].join('\n');
  return page({
    title: `The same limit in ${result.runs.length} proxies`,
    depth: 1,
    crumbs: ['compare proxies', esc(result.stamp)],
    tabs: [
      ['table', 'Table'],
      ['differences', 'Differences'],
      ['configs', 'Configs'],
    ],
    body,
  });
}

/** Writes the page into the results site; returns its file. */
export function buildProxiesPage(root, result) {
  const site = join(root, 'results', 'site');
  buildAssets(site);
  return writePage(site, { path: proxiesPath(result.stamp), html: proxiesPage(root, result), data: null });
}
