/*
 * The chart truth check's table, for the commands that run it (`panels` for the boards,
 * `results check` for the pages): per chart its series agreeing, disagreeing and with no figure
 * (and why), then each disagreement in words. Returns how many series disagreed.
 */
import { formatTable } from '../judge/table.mjs';
import { truthSummary, disagreement } from '../judge/chart-truth.mjs';

export function sayTruth(rows, say, what) {
  const summary = truthSummary(rows);
  const table = summary.map((s) => [
    s.where,
    s.chart,
    String(s.agree),
    String(s.disagree),
    String(s.none),
    s.reasons.join('; ') || '-',
    s.disagree ? 'FAIL' : s.agree ? 'ok' : 'shown',
  ]);
  say(
    `\nchart truth, ${what}:\n${formatTable(table, ['board / page', 'chart', 'agree', 'disagree', 'no figure', 'why no figure, or a note', 'pass'])}`,
  );
  const bad = rows.filter((r) => r.verdict === 'DISAGREE');
  for (const r of bad) say(`FAIL ${disagreement(r)}`);
  say(
    `chart truth: ${rows.filter((r) => r.verdict === 'agree').length} series agree, ${bad.length} disagree, ${rows.filter((r) => r.verdict === 'no figure').length} with no figure to compare, in ${summary.length} charts`,
  );
  return bad.length;
}
