/*
 * Does a compare-proxies page show what its run measured? Opened in Debian's chromium from
 * file://: no console error or failed resource, every row of the result with its figures and its
 * pass or fail, every proxy's config; a screenshot saved beside the run's configs.
 */
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { CHROMIUM } from './check.mjs';

/** The problems of the page `file` against `result` (compare.json's): [] when it shows it all. */
export async function checkProxiesPage(file, result, screenshot, { executablePath = CHROMIUM } = {}) {
  const browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
  const problems = [];
  try {
    const tab = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    tab.on('console', (m) => m.type() === 'error' && problems.push(`console error: ${m.text()}`));
    tab.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    tab.on('requestfailed', (r) => problems.push(`failed resource: ${r.url()} (${r.failure()?.errorText})`));
    await tab.goto(pathToFileURL(file).href, { waitUntil: 'load' });
    const shown = await tab.evaluate(() => ({
      rows: [...document.querySelectorAll('#table tbody tr')].map((tr) =>
        [...tr.cells].map((c) => c.textContent.trim()),
      ),
      configs: [...document.querySelectorAll('#configs h3')].map((h) => h.textContent.trim()),
    }));
    result.rows.forEach((r, i) => {
      const want = [...r.cells.slice(0, -1), r.pass ? 'ok' : 'FAIL'];
      if (JSON.stringify(shown.rows[i]) !== JSON.stringify(want))
        problems.push(`row ${i + 1}: shows ${JSON.stringify(shown.rows[i])}, the run has ${JSON.stringify(want)}`);
    });
    if (shown.rows.length !== result.rows.length)
      problems.push(`${shown.rows.length} rows shown of ${result.rows.length}`);
    const titles = result.runs.map((r) => r.title);
    if (JSON.stringify(shown.configs) !== JSON.stringify(titles))
      problems.push(`configs shown: ${shown.configs.join(', ')}; the run's: ${titles.join(', ')}`);
    await tab.screenshot({ path: screenshot, fullPage: true });
  } finally {
    await browser.close();
  }
  return problems;
}
