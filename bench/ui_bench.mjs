// bench/ui's measuring half (bench/ui starts the server): generates a profile
// whose merged tree has more than 100,000 nodes, ingests it, opens the UI with
// maxNodes=100000 and reads the app's performance measures:
//   hearth:flame-render  tree JSON parsed -> first flame graph drawn (≤ 300 ms)
//   hearth:flame-zoom    click -> zoomed redraw (≤ 50 ms), at several depths
// plus, for context, hearth:flame-ready (JSON parsed -> the whole tree, table
// and search ready: the first draw may come from a quick tree of the visible
// frames only) and the tree request's fetch + parse time.
// Usage: node bench/ui_bench.mjs URL [--nodes N] [--loads N] [--zooms N] [--ingest-only]
//   (--ingest-only: load the profile into the server at URL and stop, to look at it)
import os from 'node:os';
import { launch, waitReady, frames, clickFrame } from '../tests/ui/browser.mjs';

const [URL_, ...rest] = process.argv.slice(2);
const opt = (k, d) => { const i = rest.indexOf(k); return i >= 0 ? Number(rest[i + 1]) : d; };
const NODES = opt('--nodes', 130000), LOADS = opt('--loads', 5), ZOOMS = opt('--zooms', 8);
const MAX_NODES = 100000;

// Deterministic PRNG (mulberry32), so every run measures the same profile.
let seed = 42;
const rnd = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

// A random call tree of n nodes, sibling names unique (so the merged tree has
// exactly n nodes below the root), with C++-, Go- and C-style names so the
// colouring by package has work to do. Returns folded lines, one per node
// with self samples (every leaf has some).
function generate(n) {
  const pkgs = Array.from({ length: 300 }, (_, i) => i % 3 === 0 ? `net/pkg${i}` : i % 3 === 1 ? `ns${i}` : `lib${i}`);
  const fname = (k) => {
    const p = pkgs[k % pkgs.length];
    return p.startsWith('net/') ? `${p}.Func${k}` : p.startsWith('ns') ? `${p}::method${k}` : `${p}_fn${k}`;
  };
  const parent = new Int32Array(n), name = new Int32Array(n), kids = new Int32Array(n);
  const used = new Map(); // parent -> Set of name ids
  parent[0] = -1;
  for (let i = 1; i < n; i++) {
    // mostly extend recent nodes (deep stacks), sometimes branch anywhere
    const p = rnd() < 0.3 ? Math.floor(rnd() * i) : Math.max(0, i - 1 - Math.floor(rnd() * 40));
    let s = used.get(p);
    if (!s) used.set(p, (s = new Set()));
    let k;
    do k = Math.floor(rnd() * 20000); while (s.has(k));
    s.add(k);
    parent[i] = p;
    name[i] = k;
    kids[p]++;
  }
  const lines = [];
  let depthSum = 0, maxDepth = 0, samples = 0;
  for (let i = 1; i < n; i++) {
    const self = kids[i] === 0 ? 1 + Math.floor(rnd() * rnd() * 200) : (rnd() < 0.2 ? 1 + Math.floor(rnd() * 50) : 0);
    if (!self) continue;
    const path = [];
    for (let j = i; j > 0; j = parent[j]) path.push(fname(name[j]));
    path.push('main');
    path.reverse();
    depthSum += path.length;
    maxDepth = Math.max(maxDepth, path.length);
    samples += self;
    lines.push(`${path.join(';')} ${self}`);
  }
  return { lines, meanDepth: depthSum / lines.length, maxDepth, samples };
}

async function ingest(lines) {
  const now = Math.floor(Date.now() / 1000);
  const chunk = 20000;
  for (let i = 0; i < lines.length; i += chunk) {
    const body = lines.slice(i, i + chunk).join('\n') + '\n';
    const q = new URLSearchParams({ name: 'bench{app="ui"}', from: now - 120, until: now - 110 });
    const r = await fetch(`${URL_}/ingest?${q}`, { method: 'POST', body });
    if (r.status !== 200) throw new Error(`ingest: ${r.status} ${await r.text()}`);
  }
}

const countNodes = (t) => { let n = 0; const st = [t]; while (st.length) { const x = st.pop(); n++; if (x.children) st.push(...x.children); } return n; };
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };

const t0 = Date.now();
const gen = generate(NODES + 1);
await ingest(gen.lines);
const sel = new URLSearchParams({ query: 'bench{app="ui"}', from: 'now-10m', until: 'now' });
const full = await (await fetch(`${URL_}/api/profile?format=tree&maxNodes=262144&${sel}`)).json();
const fullNodes = countNodes(full.tree) - 1; // without the root "total"
const capped = await fetch(`${URL_}/api/profile?format=tree&maxNodes=${MAX_NODES}&${sel}`);
const cappedText = await capped.text();
const cappedNodes = countNodes(JSON.parse(cappedText).tree);
console.log(`profile: ${fmt(gen.lines.length)} stacks, ${fmt(gen.samples)} samples, mean depth ${gen.meanDepth.toFixed(1)}, max depth ${gen.maxDepth}; ` +
  `merged tree ${fmt(fullNodes)} nodes; the UI asks for maxNodes=${MAX_NODES} and gets ${fmt(cappedNodes)} nodes ` +
  `(${(cappedText.length / 1048576).toFixed(1)} MiB JSON); generated and ingested in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

function fmt(n) { return n.toLocaleString('en-US'); }
if (rest.includes('--ingest-only')) process.exit(0);

const { ctx, close } = await launch();
const render = [], ready = [], fetchParse = [], serverMs = [], zoom = [], zoomDepths = [];
const errors = [];
try {
  const page = await ctx.newPage();
  page.on('pageerror', (e) => errors.push(e.message));
  const ui = `${URL_}/?${new URLSearchParams({ query: 'bench{app="ui"}', from: 'now-10m', until: 'now', maxNodes: MAX_NODES })}`;
  for (let i = 0; i < LOADS; i++) {
    await page.goto(i ? 'about:blank' : ui);
    if (i) await page.goto(ui);
    await waitReady(page, 120000);
    const m = await page.evaluate(() => {
      const r = performance.getEntriesByName('hearth:flame-render');
      const full = performance.getEntriesByName('hearth:flame-ready');
      const parsed = performance.getEntriesByName('hearth:tree-parsed');
      const res = performance.getEntriesByType('resource').filter((e) => e.name.includes('/api/profile') && e.name.includes('format=tree'));
      const last = res[res.length - 1];
      return {
        render: r.length ? r[r.length - 1].duration : null,
        ready: full.length ? full[full.length - 1].duration : null,
        fetchParse: last && parsed.length ? parsed[parsed.length - 1].startTime - last.startTime : null,
        server: last ? last.responseStart - last.requestStart : null,
      };
    });
    if (m.render == null) throw new Error('the app recorded no hearth:flame-render measure');
    render.push(m.render);
    if (m.ready != null) ready.push(m.ready);
    if (m.fetchParse != null) fetchParse.push(m.fetchParse);
    if (m.server != null) serverMs.push(m.server);
  }
  // Zooms: into the widest frame at depths spread over the drawn graph, from the top each time.
  const fs = await frames(page);
  const maxD = Math.max(...fs.map((f) => f.depth));
  for (let k = 0; k < ZOOMS; k++) {
    const d = Math.max(1, Math.round(1 + k * (Math.min(maxD, 40) - 1) / Math.max(1, ZOOMS - 1)));
    if (k) {
      await page.click('#reset-zoom');
      await page.waitForTimeout(50);
    }
    const cur = await frames(page);
    const cand = cur.filter((f) => f.depth === d && f.w >= 4).sort((a, b) => b.w - a.w)[0];
    if (!cand) continue;
    const before = await page.evaluate(() => performance.getEntriesByName('hearth:flame-zoom').length);
    await clickFrame(page, '#flame canvas', cand);
    const dur = await page.waitForFunction((n) => {
      const e = performance.getEntriesByName('hearth:flame-zoom');
      return e.length > n && { d: e[e.length - 1].duration };
    }, before, { timeout: 10000 }).then((h) => h.jsonValue());
    zoom.push(dur.d);
    zoomDepths.push(d);
  }
} finally {
  await close();
}

const row = (what, v, target) => {
  const verdict = target == null ? '' : v <= target ? 'PASS' : 'MISS';
  console.log(`${what.padEnd(52)} ${v.toFixed(1).padStart(9)} ms   ${target == null ? '' : `target ≤ ${target} ms`.padEnd(16)} ${verdict}`);
};
console.log(`machine: ${os.cpus().length} CPUs, load average ${os.loadavg().map((v) => v.toFixed(1)).join(' ')} (other work skews the figures)`);
console.log(`\n${'measure'.padEnd(52)} ${'value'.padStart(12)}   target           verdict`);
row(`flame-render, first load`, render[0], 300);
row(`flame-render, median of ${render.length} loads`, median(render), 300);
row(`flame-render, max of ${render.length} loads`, Math.max(...render), 300);
if (zoom.length) {
  row(`flame-zoom, median of ${zoom.length} depths`, median(zoom), 50);
  row(`flame-zoom, max of ${zoom.length}`, Math.max(...zoom), 50);
}
if (ready.length) row('flame-ready (full tree, table, search), median', median(ready), null);
if (fetchParse.length) row('tree JSON fetch + parse, median (context)', median(fetchParse), null);
if (serverMs.length) row('  of which server time to first byte', median(serverMs), null);
console.log(`\nflame-render per load (ms): ${render.map((v) => v.toFixed(1)).join(', ')}`);
console.log(`flame-zoom per depth (ms): ${zoom.map((v, i) => `d${zoomDepths[i]} ${v.toFixed(1)}`).join(', ')}`);
if (errors.length) console.log(`page errors: ${errors.slice(0, 3).join(' || ')}`);
