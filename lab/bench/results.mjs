/*
 * `bench results`: how long the results site takes to build, and how heavy its pages are, at the
 * sizes the lab makes: the runs in results/ replayed under new testids into a scratch results
 * folder until it holds 50 (--quick: 10), then the whole site built from it. Prints the build
 * time, the site's size, and the weight of the heaviest pages (a breakpoint run's is the largest).
 */
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { tmpdir } from 'node:os';
import { buildSite, pageWeight } from '../results/build.mjs';
import { listRuns } from '../results/runs.mjs';
import { testidName } from '../lib/run-names.mjs';
import { formatTable } from '../judge/table.mjs';

const mib = (n) => `${(n / 1048576).toFixed(2)} MiB`;

/** Every file under a folder. */
const filesUnder = (dir) =>
  readdirSync(dir, { recursive: true })
    .map((f) => join(dir, f))
    .filter((f) => statSync(f).isFile());

/** A copy of run `id` under `results` as a new testid (the same run, seconds later). */
function replay(from, results, id, n) {
  const stamp = id.slice(0, 15);
  const newId = `${stamp}-${String(n).padStart(3, '0')}-1-${testidName(id)}`;
  const dir = join(results, newId);
  cpSync(join(from, id), dir, { recursive: true, filter: (f) => !f.includes(`${id}/site`) });
  const runJson = join(dir, 'run.json');
  const raw = JSON.parse(readFileSync(runJson, 'utf8'));
  writeFileSync(runJson, JSON.stringify({ ...raw, testid: newId }));
  return newId;
}

export default async function benchResults(root, request, { say = console.log } = {}) {
  const want = request.factor > 1 ? 10 : 50;
  const from = join(root, 'results');
  const { runs } = listRuns(from);
  if (!runs.length) throw new Error('bench results needs runs in results/: run ./labw test smoke first');
  const scratch = mkdtempSync(join(tmpdir(), 'lab-bench-results-'));
  try {
    const results = join(scratch, 'results');
    for (let i = 0; i < want; i += 1) replay(from, results, runs[i % runs.length], i);
    say(`${want} runs (replayed from ${runs.length} in results/), building the site`);
    const t = process.hrtime.bigint();
    const { site, pages } = buildSite(root, { results });
    const seconds = Number(process.hrtime.bigint() - t) / 1e9;
    const html = pages.filter((p) => p.endsWith('.html'));
    const weights = html.map((p) => ({ page: relative(site, p), bytes: pageWeight(p) }));
    weights.sort((a, b) => b.bytes - a.bytes);
    const total = filesUnder(site).reduce((n, f) => n + statSync(f).size, 0);
    say(`\nbuilt ${html.length} pages in ${seconds.toFixed(2)} s; the site: ${mib(total)}`);
    say(
      formatTable(
        weights.slice(0, 8).map((w) => [w.page, mib(w.bytes)]),
        ['heaviest pages (HTML, data and assets)', 'weight'],
      ),
    );
    return 0;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
