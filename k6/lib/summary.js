/*
 * handleSummary output: k6's own summary JSON (the runner reads the measured figures from it),
 * a JUnit XML report with one test case per threshold, for CI systems that show those, and on
 * stdout every threshold with the value it was judged on, as k6's own summary lists them (a
 * handleSummary replaces that summary, and k6 ships no text formatter without a network import).
 */
import { keepsOnly } from '../../thresholds/kinds/judged.js';
import { escapeHtml as esc } from './escape.js';

// A keep-only expression (a shown count's, a spread's trend) judges nothing: the reports leave it out.
const judging = (m) => Object.entries(m.thresholds || {}).filter(([expr]) => !keepsOnly(expr));

export function junit(data, suiteName) {
  const cases = [];
  for (const [metric, m] of Object.entries(data.metrics)) {
    for (const [expr, t] of judging(m)) {
      const body = t.ok
        ? ''
        : `<failure message="${esc(`${metric} ${expr} failed`)}">${esc(JSON.stringify(m.values))}</failure>`;
      cases.push(`  <testcase classname="${esc(suiteName)}" name="${esc(`${metric} ${expr}`)}">${body}</testcase>`);
    }
  }
  const failures = cases.filter((c) => c.includes('<failure')).length;
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="${esc(suiteName)}" tests="${cases.length}" failures="${failures}">\n${cases.join('\n')}\n</testsuite>\n`;
}

const shown = (v) => (typeof v === 'number' && !Number.isInteger(v) ? v.toFixed(3) : String(v));

/** k6's THRESHOLDS block: per metric, each expression with a mark and the value it tested. */
export function thresholdsText(data) {
  const lines = [];
  let passed = 0;
  let failed = 0;
  for (const [metric, m] of Object.entries(data.metrics).sort(([a], [b]) => a.localeCompare(b))) {
    const entries = judging(m);
    if (!entries.length) continue;
    lines.push(`    ${metric}`);
    for (const [expr, t] of entries) {
      const stat = expr.match(/^([a-z]+(?:\([0-9.]+\))?)/)?.[1];
      const value = stat && m.values[stat] !== undefined ? ` ${stat}=${shown(m.values[stat])}` : '';
      lines.push(`    ${t.ok ? '✓' : '✗'} '${expr}'${value}`);
      if (t.ok) passed++;
      else failed++;
    }
  }
  return { text: lines.join('\n'), passed, failed };
}

export function summaryFiles(data, plan, dir) {
  // A capped plan runs one k6 per cap level (its phase), each with a summary of its own.
  // With execution segments (the runner's --segments), each process writes its own.
  const name = `${plan.suite}.${plan.experiment}${plan.phase ? `.${plan.phase}` : ''}${typeof __ENV !== 'undefined' && __ENV.LAB_SEGMENT !== undefined ? `.seg${__ENV.LAB_SEGMENT}` : ''}`;
  const t = thresholdsText(data);
  return {
    [`${dir}/${name}.summary.json`]: JSON.stringify(data, null, 1),
    [`${dir}/${name}.junit.xml`]: junit(data, name),
    stdout: `\n  THRESHOLDS\n\n${t.text}\n\n${name}: ${plan.cases.length} cases, thresholds ${t.passed} passed, ${t.failed} failed; summary in ${dir}/${name}.summary.json\n`,
  };
}
