/*
 * One standalone k6 script for one k6 process of a plan: k6 modules only. Its options first,
 * written out (options.mjs, k6-code.mjs); the services' URLs from the environment; the plan's
 * cases as data; then what every VU does, bundled by esbuild from the lab's own k6 code
 * (k6/lib/plan-run.js and the kind's executor), so the script runs what `./labw test` runs.
 */
import { buildSync } from 'esbuild';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { kindOfPlan } from '../../thresholds/plan.js';
import { exportOptions } from './options.mjs';
import { optionsCode } from './k6-code.mjs';

/** The environment variable that names a service's URL: burst-nginx -> BURST_NGINX_URL. */
export const urlVariable = (service) => `${service.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_URL`;

/** Every service a plan's VUs reach: its cases', its accounting's, its roles'. */
export function planServices(plan) {
  return [
    ...new Set([
      ...plan.cases.map((c) => c.service),
      ...(plan.accounting ? [plan.accounting.service] : []),
      ...Object.values(plan.roles ?? {}).flat(),
    ]),
  ];
}

/** What the VUs read of the plan: its cases without what only the lab judges them by. */
function vuPlan(plan, leadPeriods, sample) {
  const cases = plan.cases.map(({ expected, seed, model, ...c }) => ({
    ...c,
    ...(model?.maxDelayMs ? { model: { maxDelayMs: model.maxDelayMs } } : {}),
    ...(leadPeriods[c.id] !== undefined ? { leadPeriods: leadPeriods[c.id] } : {}),
  }));
  const keep = ['experiment', 'suite', 'kind', 'factor', 'phase', 'accounting', 'roles', 'relayPercent'];
  return {
    ...Object.fromEntries(keep.filter((k) => plan[k] !== undefined).map((k) => [k, plan[k]])),
    ...(sample ? { sample } : {}),
    cases,
  };
}

/** The plan as data, one case per line. */
function planCode({ cases, ...top }) {
  const head = Object.entries(top)
    .map(([k, v]) => `  ${k}: ${JSON.stringify(v)},\n`)
    .join('');
  return `{\n${head}  cases: [\n${cases.map((c) => `    ${JSON.stringify(c)},\n`).join('')}  ],\n}`;
}

/** The kind's executor and plan-run.js, bundled with their imports but k6's: `{imports, code}`. */
function bundledRun(root, kindName) {
  const lib = join(root, 'k6', 'lib');
  if (!existsSync(join(lib, 'kinds', `${kindName}.js`)))
    throw new Error(`no executor k6/lib/kinds/${kindName}.js for plans of kind ${kindName}`);
  const entry = `import executor from './kinds/${kindName}.js';\nimport { planRun } from './plan-run.js';\nexport const labRun = (plan, urls, scenarios) => planRun(plan, urls, executor, scenarios);\n`;
  const out = buildSync({
    stdin: { contents: entry, resolveDir: lib, sourcefile: 'export-entry.js' },
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    write: false,
    external: ['k6', 'k6/*'],
    legalComments: 'inline',
    logLevel: 'silent',
  });
  const text = out.outputFiles[0].text;
  const lines = text.split('\n').filter((l) => /^import .* from "k6(\/[a-z/-]+)?";$/.test(l));
  const code = text
    .split('\n')
    .filter((l) => !lines.includes(l))
    .join('\n')
    .replace(/\nexport \{\n {2}labRun\n\};\n?$/, '\n');
  if (code.includes('export {') || !code.includes('labRun'))
    throw new Error('esbuild bundled the executor in a shape the export does not know (an export left, or no labRun)');
  return { imports: mergedImports(lines), code: code.trim() };
}

/**
 * One import per k6 module: esbuild keeps each bundled module's own (renaming a name two of them
 * import alike: http, http2), and JavaScript allows one default and any names per statement.
 */
function mergedImports(lines) {
  const byModule = new Map();
  for (const l of lines) {
    const [, def, named, mod] = /^import (?:([\w$]+)|\{ (.*) \}) from "([^"]+)";$/.exec(l) ?? [];
    if (!mod) throw new Error(`an import the export cannot merge: ${l}`);
    const m = byModule.get(mod) ?? byModule.set(mod, { defaults: [], named: [] }).get(mod);
    if (def) m.defaults.push(def);
    else m.named.push(...named.split(', '));
  }
  return [...byModule].map(
    ([
      mod,
      {
        defaults: [first, ...others],
        named,
      },
    ]) => {
      const names = [...new Set([...others.map((d) => `default as ${d}`), ...named])];
      return `import ${[first, names.length ? `{ ${names.join(', ')} }` : null].filter(Boolean).join(', ')} from "${mod}";`;
    },
  );
}

/**
 * The script's text. `plan`: one k6 process's part (k6Plan); `ports`: per service, the port it
 * listens on in the lab's stack; `about`: the header's lines (what it tests, how it was made).
 */
export function exportScript(root, plan, { ports, about }) {
  const services = planServices(plan);
  for (const s of services) if (!ports[s]) throw new Error(`no port for service ${s} in the lab's topology`);
  const placeholders = Object.fromEntries(services.map((s) => [s, `\${SERVICE_URLS[${JSON.stringify(s)}]}`]));
  const options = exportOptions(plan, placeholders);
  const sample = plan.sampleBody ? JSON.parse(readFileSync(join(root, 'k6', plan.sampleBody), 'utf8')) : null;
  const { imports, code } = bundledRun(root, kindOfPlan(plan).name);
  const urls = services
    .map((s) => `  ${JSON.stringify(s)}: __ENV.${urlVariable(s)} || \`\${BASE_URL}:${ports[s]}\`,`)
    .join('\n');
  return `${about.map((l) => `// ${l}`.trimEnd()).join('\n')}
${imports.join('\n')}

${optionsCode(options)}
// Where each service answers: BASE_URL (scheme and host) with the lab's ports, or each its own
// URL (${services.map(urlVariable).join(', ')}).
const BASE_URL = (__ENV.BASE_URL || 'http://127.0.0.1').replace(/\\/+$/, '');
const SERVICE_URLS = {
${urls}
};

// The cases, as every VU reads them: a case is a scenario of the same name.
const PLAN = ${planCode(vuPlan(plan, options.leadPeriods, sample))};

// What every VU does, bundled from the lab's k6/lib/plan-run.js and k6/lib/kinds/${kindOfPlan(plan).name}.js.
${code}

const run = labRun(PLAN, SERVICE_URLS, options.scenarios);
export const setup = run.setup;
export const warm = run.warm;
export const hit = run.hit;
export const teardown = run.teardown;
`;
}
