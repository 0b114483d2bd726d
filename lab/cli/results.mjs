/*
 * `results [build|serve|compare|baseline|check]`: the results site built from results/ into
 * results/site/, served on 127.0.0.1, a compare page, the baseline of a suite, and the browser
 * checks of a run's pages (CI). Every testid is checked before it names a path.
 *   results                              build the whole site
 *   results serve [--port=N]             serve results/site/ (default port 18900) until Ctrl-C
 *   results compare <run> [<baseline>]   build the compare page, print its path
 *   results baseline <run>               mark a run as its suite's baseline
 *   results check [testid]               build a run's pages and check them in chromium
 */
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { join, relative } from 'node:path';
import sirv from 'sirv';
import { flagValue } from './args.mjs';
import { formatTable } from '../judge/table.mjs';
import { sayTruth } from './truth-table.mjs';
import { buildSite, buildCompare, markBaseline, siteIndex } from '../results/build.mjs';
import { runNamed } from '../results/runs.mjs';

export const DEFAULT_PORT = 18900;
const USAGE = './labw results [serve [--port=N] | compare <run> [<baseline>] | baseline <run> | check [testid]]';

function build(root, say) {
  const t = Date.now();
  const { pages, skipped } = buildSite(root);
  say(
    `results site: ${relative(root, siteIndex(root))} (${pages.length} pages in ${((Date.now() - t) / 1000).toFixed(1)} s)`,
  );
  if (skipped.length) say(`not listed (no run.json yet: a run under way, or not a test run): ${skipped.join(', ')}`);
  return 0;
}

/** Serves the site on 127.0.0.1 until SIGINT or SIGTERM; a port in use is an error naming it. */
export async function serve(site, port, say) {
  const server = createServer(sirv(site, { dev: true, etag: true }));
  await new Promise((resolve, reject) => {
    server.once('error', (e) =>
      reject(
        e.code === 'EADDRINUSE' ? new Error(`port ${port} on 127.0.0.1 is in use: give another with --port=N`) : e,
      ),
    );
    server.listen(port, '127.0.0.1', resolve);
  });
  say(`serving ${site} on http://127.0.0.1:${port}/ (Ctrl-C stops)`);
  await new Promise((resolve) => {
    const stop = () => {
      server.close(resolve);
      server.closeAllConnections(); // a browser's keep-alive connections would hold it open
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  say('stopped');
  return 0;
}

function portOf(words) {
  if (!words.length) return DEFAULT_PORT;
  const [value, used] = flagValue(words, 0, '--port', 'N') || [];
  if (!used || used !== words.length)
    throw new Error(`usage: ./labw results serve [--port=N]; got '${words.join(' ')}'`);
  const port = Number(value);
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new Error(`--port must be a port number (1-65535), got '${value}'`);
  return port;
}

async function check(root, words, say) {
  if (words.length > 1) throw new Error(`usage: ./labw results check [testid]; got '${words.join(' ')}'`);
  const results = join(root, 'results');
  const id = runNamed(results, words[0]);
  const { CHROMIUM, expectations, checkPages } = await import('../results/check.mjs');
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is not installed: './labw setup' installs Debian's chromium`);
  buildSite(root, { only: id });
  const checked = await checkPages(expectations(results, id));
  say(
    formatTable(
      checked.map((p) => [
        p.name,
        p.problems.length ? `FAIL (${p.problems.length})` : 'ok',
        p.screenshot ? relative(root, p.screenshot) : '-',
      ]),
      ['page', 'checks', 'screenshot'],
    ),
  );
  for (const p of checked.filter((x) => x.problems.length))
    say(`\nFAIL ${relative(root, p.file)}:\n  ${p.problems.join('\n  ')}`);
  sayTruth(
    checked.flatMap((p) => p.truth || []),
    say,
    `the run pages as chromium drew them, against run ${id}'s own figures`,
  );
  const failed = checked.filter((p) => p.problems.length).length;
  say(`\npages of run ${id}: ${checked.length - failed} passed, ${failed} failed`);
  return failed ? 1 : 0;
}

export default async function results(words, { root, say }) {
  const [sub, ...rest] = words;
  const dir = join(root, 'results');
  switch (sub) {
    case undefined:
    case 'build':
      if (rest.length) throw new Error(`usage: ${USAGE}`);
      return build(root, say);
    case 'serve': {
      const port = portOf(rest);
      if (!existsSync(siteIndex(root))) build(root, say);
      return serve(join(dir, 'site'), port, say);
    }
    case 'compare': {
      if (rest.length < 1 || rest.length > 2) throw new Error(`usage: ./labw results compare <run> [<baseline>]`);
      const a = runNamed(dir, rest[0]);
      const b = rest[1] === undefined ? null : runNamed(dir, rest[1]);
      const file = buildCompare(root, a, b);
      if (!file)
        throw new Error(
          `run ${a} has no baseline: no run of its suite before it, and none marked (./labw results baseline <testid>); or name one`,
        );
      say(relative(root, file));
      return 0;
    }
    case 'baseline': {
      if (rest.length !== 1) throw new Error('usage: ./labw results baseline <run>');
      const id = runNamed(dir, rest[0]);
      say(`baseline of suite ${markBaseline(dir, id)}: ${id} (results/baselines.json)`);
      return 0;
    }
    case 'check':
      return check(root, rest, say);
    default:
      throw new Error(`usage: ${USAGE}; unknown '${sub}'`);
  }
}
