/*
 * Flame graphs from `perf record -g` (Debian's linux-perf), for the profiles in docs/journal/json-filter.md:
 *   node lab/bench/flamegraph.mjs <perf.data> <out.png> [--title T] [--min-share 0.002]
 * `perf script` prints each sample's stack, leaf first; the stacks are folded (root first, one
 * count per distinct stack), laid out as nested boxes whose width is the share of samples, drawn
 * as SVG and photographed by Debian's chromium as PNG. JIT frames are named when the runtime
 * wrote a perf map (node --perf-basic-prof, erl +JPperf true).
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { CHROMIUM } from '../results/check.mjs';
import { escapeHtml as escape } from '../lib.mjs';

/** A frame's name from a `perf script` stack line: `\t<addr> <symbol>+0x1f (<dso>)`. */
function frameName(line) {
  const m = /^\s*[0-9a-f]+\s+(.*?)\s+\(([^)]*)\)\s*$/.exec(line);
  if (!m) return null;
  const sym = m[1].replace(/\+0x[0-9a-f]+$/, '');
  const dso = m[2].split('/').pop();
  if (sym === '[unknown]') return `[${dso || 'unknown'}]`;
  return dso === '[kernel.kallsyms]' ? `${sym} [k]` : sym;
}

/** `perf script` text -> Map("root;...;leaf" -> samples). The thread's name is the root. */
export function fold(text) {
  const folded = new Map();
  for (const block of text.split(/\n\s*\n/)) {
    const lines = block.split('\n').filter((l) => l.trim() !== '');
    if (lines.length === 0) continue;
    const comm = lines[0].trim().split(/\s+/)[0];
    const frames = lines.slice(1).map(frameName).filter(Boolean).reverse();
    const key = [comm, ...frames].join(';');
    folded.set(key, (folded.get(key) || 0) + 1);
  }
  return folded;
}

/**
 * Folded stacks -> boxes {name, depth, x, width, samples}, x and width as shares of all samples
 * (siblings sorted by name in code-point order, as flame graphs are: the x axis is not time). Boxes under
 * `minShare` are left out, with everything above them kept; frames deeper than `maxDepth` are cut
 * (a runtime without frame pointers in its JIT code can unwind into long chains of nonsense).
 */
export function layout(folded, { minShare = 0, maxDepth = 64 } = {}) {
  const root = { name: 'all', samples: 0, children: new Map() };
  for (const [stack, n] of folded) {
    root.samples += n;
    let node = root;
    for (const name of stack.split(';').slice(0, maxDepth)) {
      if (!node.children.has(name)) node.children.set(name, { name, samples: 0, children: new Map() });
      node = node.children.get(name);
      node.samples += n;
    }
  }
  const boxes = [];
  const walk = (node, depth, x) => {
    const width = root.samples ? node.samples / root.samples : 0;
    if (width < minShare) return;
    boxes.push({ name: node.name, depth, x, width, samples: node.samples });
    let cx = x;
    for (const child of [...node.children.values()].sort((a, b) => (a.name < b.name ? -1 : 1))) {
      walk(child, depth + 1, cx);
      cx += root.samples ? child.samples / root.samples : 0;
    }
  };
  walk(root, 0, 0);
  return boxes;
}

/** A colour per frame kind: kernel (blue, marked [k]), JIT-compiled code (yellow), the rest (red-orange). */
function colour(name) {
  let h = 0;
  for (const c of name) h = (h * 31 + c.charCodeAt(0)) % 997;
  const shade = 40 + (h % 40);
  if (/^(JS:|\$|#)/.test(name) || name.includes('.erl')) return `hsl(40, 90%, ${shade}%)`;
  if (name.endsWith(' [k]')) return `hsl(200, 60%, ${shade}%)`;
  return `hsl(${8 + (h % 20)}, 85%, ${shade}%)`;
}

/** Boxes -> an SVG flame graph, root at the bottom, `width` px wide. */
export function svg(boxes, { title = '', width = 1600, rowPx = 17 } = {}) {
  const depth = Math.max(0, ...boxes.map((b) => b.depth)) + 1;
  const top = 34;
  const height = top + depth * rowPx + 8;
  const total = boxes.find((b) => b.depth === 0)?.samples || 0;
  const rows = boxes.map((b) => {
    const x = b.x * width;
    const w = b.width * width;
    const y = top + (depth - 1 - b.depth) * rowPx;
    const label = w > 40 ? escape(b.name.slice(0, Math.floor((w - 6) / 7))) : '';
    const tip = `${escape(b.name)}: ${b.samples} samples, ${(b.width * 100).toFixed(1)} %`;
    return (
      `<g><title>${tip}</title><rect x="${x.toFixed(1)}" y="${y}" width="${Math.max(w - 0.5, 0.5).toFixed(1)}" height="${rowPx - 1}" fill="${colour(b.name)}"/>` +
      (label ? `<text x="${(x + 3).toFixed(1)}" y="${y + rowPx - 5}">${label}</text>` : '') +
      '</g>'
    );
  });
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="monospace" font-size="11">` +
    `<rect width="100%" height="100%" fill="#fdfdf6"/>` +
    `<text x="${width / 2}" y="20" text-anchor="middle" font-size="15">${escape(title)} (${total} samples)</text>${rows.join('')}</svg>`
  );
}

/** Writes <out>.svg and photographs it into <out> (PNG) with chromium. */
export async function render(svgText, out, { executablePath = CHROMIUM } = {}) {
  const file = out.replace(/\.png$/, '.svg');
  writeFileSync(file, svgText);
  const [, w, h] = /width="(\d+)" height="(\d+)"/.exec(svgText).map(Number);
  const browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
  try {
    const tab = await browser.newPage({ viewport: { width: w, height: h } });
    await tab.setContent(`<!doctype html><html><body style="margin:0">${svgText}</body></html>`);
    await tab.screenshot({ path: out, clip: { x: 0, y: 0, width: w, height: h } });
  } finally {
    await browser.close();
  }
  return file;
}

if (import.meta.url === pathToFileURL(process.argv[1] || '').href) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { title: { type: 'string', default: '' }, 'min-share': { type: 'string', default: '0.002' } },
  });
  const [data, out] = positionals;
  const minShare = Number(values['min-share']);
  if (!data || !out?.endsWith('.png') || !(minShare >= 0 && minShare < 1)) {
    console.error('usage: flamegraph.mjs <perf.data> <out.png> [--title T] [--min-share 0..1]');
    process.exit(2);
  }
  const text = execFileSync('perf', ['script', '-i', data], {
    encoding: 'utf8',
    maxBuffer: 1 << 30,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const file = await render(svg(layout(fold(text), { minShare }), { title: values.title }), out);
  console.log(`${out} (and ${file})`);
}
