#!/usr/bin/env node
/*
 * `node test/lib/import-reads.mjs FILE...`: imports each module in turn and prints, as JSON, every
 * file the import itself touched through node:fs ([{module, call, path, at}]). Node's own
 * loading of packages (node_modules, through its CommonJS loader) is not counted: a module may
 * load modules, not read files (test/layers.test.mjs).
 */
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { pathToFileURL } from 'node:url';

const CALLS = ['readFileSync', 'readdirSync', 'existsSync', 'statSync', 'lstatSync', 'openSync', 'accessSync'];
const touched = [];
let importing = null;
for (const call of CALLS) {
  const original = fs[call];
  fs[call] = function watched(...args) {
    // The first frame of ours, outside node_modules: who asked.
    const at = new Error().stack
      .split('\n')
      .slice(2)
      .map((l) => l.trim())
      .find((l) => l.includes('file://') && !l.includes('/node_modules/') && !l.includes(import.meta.url));
    if (importing && at) touched.push({ module: importing, call, path: String(args[0]), at });
    return original.apply(this, args);
  };
}
syncBuiltinESMExports();

for (const file of process.argv.slice(2)) {
  importing = file;
  await import(pathToFileURL(file).href);
}
importing = null;
process.stdout.write(JSON.stringify(touched));
