/*
 * A team's policy on its run page: the file as the model read it, route by route (key, rate,
 * burst, delay or nodelay, status, and the file:line each came from), how each route's cases
 * met its buckets, and the configs the stack ran: the rendered one beside the original.
 * From <experiment>.policy.json in the run folder (lab/run/suite.mjs writes it).
 */
import { esc, table } from './layout.mjs';
import { casesWords } from '../policy/words.mjs';

const link = (run, path, text) => `<a href="../../../${esc(run.id)}/${esc(path)}">${esc(text)}</a>`;

/** What the lab read from where and changed to run the file, where it says any. */
const changesHtml = (changes) =>
  changes?.length
    ? `<h3>What the lab read and changed to run it</h3>${table(
        ['at', 'what'].map(esc),
        changes.map((c) => [esc(c.at), esc(c.what)]),
        { cls: 'compact prose' },
      )}`
    : '';

/**
 * The Policy section's HTML, or null for an experiment that is not a team's policy; `factor`: the
 * run's --quick, by which its pauses were shortened.
 */
export function policyHtml(run, asRead, factor = 1) {
  if (!asRead) return null;
  const configs = asRead.configs.map((c) => `${link(run, c.path, c.file)} (${esc(c.what)})`).join(' · ');
  const routes = table(
    ['route', 'class of client', 'at', 'target', 'cases', 'buckets'].map(esc),
    asRead.routes.map((r) =>
      [
        r.route,
        r.class ?? '-',
        r.at,
        r.target ?? '-',
        r.cases ?? casesWords(r, factor),
        (r.keys || []).map((k) => `${k.zone ?? k.bucket}: ${k.how}`).join('; '),
      ].map(esc),
    ),
    { cls: 'compact prose' },
  );
  return `<p>${esc(asRead.proxy)} policy <code>${esc(asRead.file)}</code>${asRead.stackFile ? ` · <strong class="perturbed">the stack ran ${esc(asRead.stackFile)}</strong>` : ''} · ${configs}</p>
${table(
  asRead.table.head.map(esc),
  asRead.table.rows.map((r) => r.map(esc)),
  { cls: 'compact prose' },
)}
<h3>How each route's cases met its buckets</h3>${routes}${changesHtml(asRead.changes)}`;
}
