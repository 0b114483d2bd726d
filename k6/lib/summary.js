/*
 * handleSummary output: k6's own summary JSON (the runner reads the measured figures from it)
 * and a JUnit XML report with one test case per threshold, for CI systems that show those.
 */
const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

export function junit(data, suiteName) {
  const cases = [];
  for (const [metric, m] of Object.entries(data.metrics)) {
    for (const [expr, t] of Object.entries(m.thresholds || {})) {
      const body = t.ok ? '' : `<failure message="${esc(`${metric} ${expr} failed`)}">${esc(JSON.stringify(m.values))}</failure>`;
      cases.push(`  <testcase classname="${esc(suiteName)}" name="${esc(`${metric} ${expr}`)}">${body}</testcase>`);
    }
  }
  const failures = cases.filter((c) => c.includes('<failure')).length;
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="${esc(suiteName)}" tests="${cases.length}" failures="${failures}">\n${cases.join('\n')}\n</testsuite>\n`;
}

export function summaryFiles(data, plan, dir) {
  const name = `${plan.suite}.${plan.experiment}`;
  return {
    [`${dir}/${name}.summary.json`]: JSON.stringify(data, null, 1),
    [`${dir}/${name}.junit.xml`]: junit(data, name),
    stdout: `${name}: ${plan.cases.length} cases done, summary in ${dir}/${name}.summary.json\n`,
  };
}
