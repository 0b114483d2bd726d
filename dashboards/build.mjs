/*
 * `just dashboards`: writes every dashboard of src/boards.mjs (its own boards and one per
 * experiment, from src/<experiment>.mjs) to dashboards/<name>.json, where
 * Grafana's provisioning (provisioning/) finds them. The JSON is committed; a unit test fails
 * when it differs from what the sources generate.
 */
import { writeFileSync, readFileSync, existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { boards } from './src/boards.mjs';

const here = dirname(fileURLToPath(import.meta.url));

/** {file: text} for every board. */
export function generated() {
  return Object.fromEntries(
    boards().map((b) => [join(here, `${b.uid.replace(/^lab-/, '')}.json`), `${JSON.stringify(b, null, 2)}\n`]),
  );
}

/** Writes the boards (or, with check, only lists the files that differ). */
export function buildDashboards({ check = false } = {}) {
  const stale = [];
  for (const [file, text] of Object.entries(generated())) {
    if (existsSync(file) && readFileSync(file, 'utf8') === text) continue;
    stale.push(file);
    if (!check) writeFileSync(file, text);
  }
  return stale;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const stale = buildDashboards({ check: process.argv.includes('--check') });
  console.log(
    stale.length
      ? `${process.argv.includes('--check') ? 'stale' : 'wrote'}: ${stale.join(', ')}`
      : 'dashboards are up to date',
  );
  process.exitCode = process.argv.includes('--check') && stale.length ? 1 : 0;
}
