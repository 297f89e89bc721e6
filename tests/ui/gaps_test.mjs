// The smaller gaps of the web UI (issue 30, item 9), one check each, in a real
// browser against a fresh `hearth server` holding the fixture (fixture.mjs) and one
// deep stack (DEPTH frames): the table's default order and its place in the URL,
// the zoom kept across a reload, the flame orientation of a deep graph (page and
// the SVG export), one colour per function in the sandwich and the flame graph,
// dark mode, refresh and auto-refresh, the maxNodes control, the loading
// indicator, the toolbar on a bad regex and the graph above the fold at 1024×768.
// Prints "PASS name" / "FAIL name: why" per check; screenshots go to OUTDIR/gaps-*.png.
//
// Usage: node gaps_test.mjs URL OUTDIR   (the server's store must be empty)
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { launch, waitReady, reloadAfter, frames, clickFrame } from './browser.mjs';
import * as fx from './fixture.mjs';

const [URL_, OUT] = process.argv.slice(2);
const BASE = URL_.replace(/\/$/, '');
mkdirSync(OUT, { recursive: true });
const NOW = Math.floor(Date.now() / 1000);
const DEPTH = 300; // frames of the deep stack: 300 rows of 18 px, far taller than a window
const DEEP = 'deep{env="test"}';
const SHOP = `${fx.APP}{env="prod"}`;

let fails = 0; // FAIL lines printed (the wrapper counts them)
async function check(name, fn) {
  try {
    const note = await fn();
    console.log(`PASS ${name}${note ? ` (${note})` : ''}`);
  } catch (e) {
    fails++;
    console.log(`FAIL ${name}: ${String(e && e.message || e).split('\n').slice(0, 3).join(' | ')}`);
  }
}
function expect(cond, msg) {
  if (!cond) throw new Error(msg);
}
const urlParam = (page, k) => new URL(page.url()).searchParams.get(k);
const shot = (page, name) => page.screenshot({ path: join(OUT, `gaps-${name}.png`) });
async function waitFor(fn, what, timeout = 10000) {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - t0 > timeout) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
const rows = (page) => page.$$eval('#top-table tbody tr[data-name]', (trs) =>
  trs.map((tr) => ({ name: tr.dataset.name, self: Number(tr.dataset.self), total: Number(tr.dataset.total) })));
const sorted = (xs, sign) => xs.every((x, i) => i === 0 || sign * (xs[i - 1] - x) >= 0);
async function open(page, query = '') {
  await page.goto(`${BASE}/${query}`);
  await waitReady(page);
}

await fx.ingest(BASE, NOW);
{
  const stack = ['deep_main', ...Array.from({ length: DEPTH - 1 }, (_, i) => `level_${i + 1}`)].join(';');
  const q = new URLSearchParams({ name: DEEP, from: NOW - 600, until: NOW - 590 });
  const r = await fetch(`${BASE}/ingest?${q}`, { method: 'POST', body: `${stack} 50\n` });
  if (r.status !== 200) throw new Error(`ingest of the deep stack: ${r.status} ${await r.text()}`);
}
const FN = fx.perFunction(fx.samples());

const { ctx, close } = await launch({ width: 1440, height: 900 });
const page = await ctx.newPage();
const consoleErrors = [];
page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
page.on('pageerror', (e) => consoleErrors.push(`page error: ${e.message}`));
const shopQ = `?query=${encodeURIComponent(SHOP)}`;

try {
  await check('table_sorts_by_self_and_keeps_sort_in_url', async () => {
    await open(page, shopQ);
    expect(await page.getAttribute('th[data-sort="self"]', 'aria-sort') === 'descending', 'self is not the default order');
    let r = await rows(page);
    expect(r.length === FN.size && sorted(r.map((x) => x.self), 1), `not self, largest first: ${r.map((x) => x.self)}`);
    expect(r[0].name === 'hash', `first row ${r[0].name}, want hash (largest self)`);
    await page.click('th[data-sort="total"]');
    await waitFor(() => urlParam(page, 'sort') === '-total', 'sort=-total in the URL');
    await page.click('th[data-sort="total"]');
    await waitFor(() => urlParam(page, 'sort') === 'total', 'sort=total in the URL');
    await page.reload();
    await waitReady(page);
    expect(await page.getAttribute('th[data-sort="total"]', 'aria-sort') === 'ascending', 'total ascending lost on reload');
    r = await rows(page);
    expect(sorted(r.map((x) => x.total), -1), `after reload not total ascending: ${r.map((x) => x.total)}`);
    await shot(page, 'sort-in-url');
    return page.url().slice(BASE.length);
  });

  await check('zoom_kept_across_reload', async () => {
    await open(page, shopQ);
    const compute = (await frames(page)).find((f) => f.name === 'compute');
    await clickFrame(page, '#flame canvas', compute);
    await waitFor(() => urlParam(page, 'zoom') === 'main;compute', 'zoom=main;compute in the URL');
    await page.reload();
    await waitReady(page);
    const crumbs = await page.$$eval('#breadcrumbs button', (bs) => bs.map((b) => b.textContent.trim()));
    expect(crumbs.join('>') === 'all>main>compute', `breadcrumbs after reload: ${crumbs.join(' > ')}`);
    const w = (await page.locator('#flame canvas').boundingBox()).width;
    const c = (await frames(page)).find((f) => f.name === 'compute');
    expect(c && Math.abs(c.w - w) <= 2, `compute ${c && c.w} px wide after reload, canvas ${w}`);
    expect(!(await frames(page)).some((f) => f.name === 'read_input'), 'read_input drawn: not zoomed');
    await shot(page, 'zoom-reloaded');
    await page.click('#reset-zoom');
    await waitFor(() => urlParam(page, 'zoom') === null, 'zoom gone from the URL after reset');
  });

  await check('flame_orientation_deep_graph_keeps_roots_in_sight', async () => {
    await open(page, `?query=${encodeURIComponent(DEEP)}&orient=flame&from=now-1h`);
    const fs = await frames(page);
    const root = fs.find((f) => f.depth === 0);
    const deepest = Math.max(...fs.map((f) => f.depth));
    expect(deepest >= DEPTH - 1, `deepest frame at depth ${deepest}, want ${DEPTH - 1}`);
    const g = await page.evaluate(() => {
      const el = document.getElementById('flame');
      return { page: document.documentElement.scrollHeight, win: innerHeight, box: el.clientHeight,
        canvas: el.querySelector('canvas').offsetHeight, top: el.scrollTop };
    });
    expect(g.canvas > 3 * g.win, `the deep graph is only ${g.canvas} px tall`);
    expect(g.box <= g.win, `flame box ${g.box} px, window ${g.win}`);
    expect(g.page < 2 * g.win, `page ${g.page} px tall for a ${g.win} px window`);
    expect(root.y >= g.top && root.y + root.h <= g.top + g.box, `root row at ${root.y}, box shows ${g.top}..${g.top + g.box}`);
    await page.locator('#flame').scrollIntoViewIfNeeded();
    const rb = await page.evaluate((y) => {
      const r = document.querySelector('#flame canvas').getBoundingClientRect();
      return r.top + y;
    }, root.y);
    expect(rb >= 0 && rb + root.h <= g.win, `root row at window y ${rb}`);
    await shot(page, 'flame-orient-deep');
    return `graph ${g.canvas} px in a ${g.box} px box, page ${g.page} px`;
  });

  await check('svg_export_of_deep_graph_opens_at_roots', async () => {
    const q = new URLSearchParams({ format: 'svg', query: DEEP, from: 'now-1h' });
    const r = await fetch(`${BASE}/api/profile?${q}`);
    const svg = await r.text();
    expect(r.status === 200 && svg.includes('data-name="deep_main"'), `svg ${r.status}`);
    const file = resolve(join(OUT, 'gaps-deep.svg'));
    writeFileSync(file, svg);
    const p = await ctx.newPage();
    try {
      await p.goto(`file://${file}`);
      const b = await waitFor(() => p.evaluate(() => {
        const g = document.querySelector('g.f[data-d="0"] rect').getBoundingClientRect();
        return g.bottom <= innerHeight && g.top >= 0 ? { top: g.top, h: document.documentElement.getBoundingClientRect().height } : null;
      }), 'the SVG root "all" inside the window');
      await p.screenshot({ path: join(OUT, 'gaps-svg-deep.png') });
      return `root at y ${b.top.toFixed(0)} of a ${b.h.toFixed(0)} px SVG`;
    } finally {
      await p.close();
    }
  });

  await check('sandwich_colours_match_flame_graph', async () => {
    // Real profiles name each frame's module (the fixture's folded text has none):
    // give every frame one, as a live server would, so colours come from modules.
    await page.route('**/api/profile?*', async (route) => {
      const res = await route.fetch();
      const u = new URL(route.request().url());
      if (u.searchParams.get('format') !== 'tree') return route.fulfill({ response: res });
      const d = await res.json();
      const todo = [d.tree];
      while (todo.length) {
        const n = todo.pop();
        if (!n) continue;
        n.module = n.name.endsWith('_[k]') ? '[kernel]' : n.name === 'memcpy' ? 'libc.so.6' : '/usr/bin/shop';
        todo.push(...(n.children || []));
      }
      return route.fulfill({ response: res, json: d });
    });
    await open(page, `${shopQ}&focus=memcpy&view=sandwich`);
    const flameFill = await page.$$eval('#flame-frames li', (ls) => Object.fromEntries(ls.map((l) => [l.dataset.name, l.dataset.fill])));
    const sw = [...await frames(page, '#sandwich-callers ul'), ...await frames(page, '#sandwich-callees ul')];
    const fills = await page.$$eval('#sandwich-callers li, #sandwich-callees li', (ls) => ls.map((l) => [l.dataset.name, l.dataset.fill]));
    expect(sw.length >= 4, `sandwich frames: ${sw.map((f) => f.name)}`);
    const bad = fills.filter(([n, f]) => !f || f !== flameFill[n]);
    expect(bad.length === 0, `colours differ: ${bad.map(([n, f]) => `${n} ${f} vs ${flameFill[n]}`).join('; ')}`);
    const swatch = await page.$eval('#top-table tr[data-name="memcpy"] .swatch', (s) => getComputedStyle(s).backgroundColor);
    await shot(page, 'sandwich-colours');
    await page.unroute('**/api/profile?*');
    return `${fills.length} frames, memcpy ${flameFill.memcpy} (table swatch ${swatch})`;
  });

  await check('dark_mode_follows_system_and_toggle', async () => {
    const lum = (rgb) => {
      const [r, g, b] = rgb.match(/\d+/g).map(Number);
      return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
    };
    const colours = () => page.evaluate(() => {
      const c = document.querySelector('#flame canvas');
      const px = c.getContext('2d').getImageData(c.width - 1, Math.round(17.5 * devicePixelRatio), 1, 1).data;
      return { body: getComputedStyle(document.documentElement).backgroundColor, panel: getComputedStyle(document.querySelector('.panel')).backgroundColor,
        canvas: `rgb(${px[0]}, ${px[1]}, ${px[2]})`, theme: document.documentElement.dataset.theme || '' };
    });
    await page.emulateMedia({ colorScheme: 'dark' });
    await open(page, shopQ);
    let c = await colours();
    expect(lum(c.body) < 0.2 && lum(c.panel) < 0.2 && lum(c.canvas) < 0.2, `system dark: ${JSON.stringify(c)}`);
    await shot(page, 'dark');
    await page.selectOption('#theme', 'light');
    c = await waitFor(async () => { const x = await colours(); return lum(x.canvas) > 0.8 ? x : null; }, 'light canvas');
    expect(lum(c.body) > 0.8 && c.theme === 'light', `toggle light under a dark system: ${JSON.stringify(c)}`);
    await page.reload();
    await waitReady(page);
    c = await colours();
    expect(lum(c.body) > 0.8 && await page.inputValue('#theme') === 'light', `light lost on reload: ${JSON.stringify(c)}`);
    await page.emulateMedia({ colorScheme: 'light' });
    await page.selectOption('#theme', 'dark');
    c = await waitFor(async () => { const x = await colours(); return lum(x.canvas) < 0.2 ? x : null; }, 'dark canvas');
    expect(lum(c.body) < 0.2, `toggle dark under a light system: ${JSON.stringify(c)}`);
    await page.selectOption('#theme', '');
    c = await waitFor(async () => { const x = await colours(); return lum(x.canvas) > 0.8 ? x : null; }, 'system (light) again');
    return `system dark, light and dark chosen, system (light) again: ${c.body}`;
  });

  await check('refresh_button_and_auto_refresh', async () => {
    await open(page, shopQ);
    const profileReq = (timeout) => page.waitForRequest((r) => r.url().includes('/api/profile?') &&
      new URL(r.url()).searchParams.get('format') === 'tree', { timeout });
    let req = profileReq(5000);
    await page.click('#refresh');
    await req;
    await waitReady(page);
    await page.selectOption('#auto-refresh', '10s');
    await waitFor(() => urlParam(page, 'refresh') === '10s', 'refresh=10s in the URL');
    // Two reloads with no action, the second at least 10 s after the first.
    req = profileReq(25000);
    await req;
    const t1 = Date.now();
    req = profileReq(25000);
    await req;
    const gap = (Date.now() - t1) / 1000;
    expect(gap >= 9, `auto-refresh after ${gap.toFixed(1)} s, want 10`);
    await page.reload();
    await waitReady(page);
    expect(await page.inputValue('#auto-refresh') === '10s', 'auto-refresh choice lost on reload');
    await page.selectOption('#auto-refresh', '');
    await waitFor(() => urlParam(page, 'refresh') === null, 'refresh off in the URL');
    await shot(page, 'refresh');
    return `ticks ${gap.toFixed(1)} s apart`;
  });

  await check('max_nodes_control', async () => {
    await open(page, shopQ);
    expect(await page.inputValue('#max-nodes') === '20000', `default ${await page.inputValue('#max-nodes')}`);
    const req = page.waitForRequest((r) => r.url().includes('/api/profile?') &&
      new URL(r.url()).searchParams.get('maxNodes') === '5000', { timeout: 5000 });
    await reloadAfter(page, () => page.selectOption('#max-nodes', '5000'));
    await req;
    expect(urlParam(page, 'maxNodes') === '5000', `URL maxNodes=${urlParam(page, 'maxNodes')}`);
    await open(page, `${shopQ}&maxNodes=3`);
    expect(await page.inputValue('#max-nodes') === '3', `select shows ${await page.inputValue('#max-nodes')} for maxNodes=3`);
    const names = (await frames(page)).map((f) => f.name);
    expect(names.join() === 'all,main,compute', `frames with maxNodes=3: ${names}`);
    await shot(page, 'max-nodes');
  });

  await check('loading_indicator_not_grey_box', async () => {
    let release;
    const held = new Promise((r) => { release = r; });
    await page.route('**/api/profile?*', async (route) => {
      await held;
      await route.continue();
    });
    await page.goto(`${BASE}/${shopQ}`);
    const s = await waitFor(() => page.evaluate(() => {
      const l = document.querySelector('#view-flame .loading');
      const st = getComputedStyle(l);
      const r = l.getBoundingClientRect();
      return st.display === 'flex' && Number(st.opacity) > 0.9 && r.height > 100
        ? { canvasHidden: document.querySelector('#flame canvas').hidden, text: l.textContent.trim(), h: r.height } : null;
    }), 'the loading indicator');
    expect(s.canvasHidden, 'the undrawn canvas is shown');
    await shot(page, 'loading');
    release();
    await waitReady(page);
    await page.unroute('**/api/profile?*');
    const after = await page.evaluate(() => ({ display: getComputedStyle(document.querySelector('#view-flame .loading')).display,
      canvas: !document.querySelector('#flame canvas').hidden }));
    expect(after.display === 'none' && after.canvas, `after loading: ${JSON.stringify(after)}`);
    return `${s.text}, ${s.h.toFixed(0)} px`;
  });

  for (const [w, h] of [[1440, 900], [1024, 768]]) {
    await check(`toolbar_one_row_on_bad_regex_${w}x${h}`, async () => {
      await page.setViewportSize({ width: w, height: h });
      await open(page, shopQ);
      const box = () => page.evaluate(() => {
        const tb = document.querySelector('nav.toolbar');
        const tops = [...tb.children].filter((c) => c.offsetParent).map((c) => c.getBoundingClientRect());
        return { h: tb.getBoundingClientRect().height, rows: new Set(tops.map((r) => Math.round(r.top + r.height / 2))).size,
          right: Math.max(...tops.map((r) => r.right)), width: tb.getBoundingClientRect().right };
      });
      const before = await box();
      await page.fill('#search', '/foo(bar[/');
      await page.press('#search', 'Enter');
      await waitFor(() => page.evaluate(() => document.getElementById('search-share').classList.contains('bad')), 'the regex error');
      const after = await box();
      const msg = await page.evaluate(() => [document.getElementById('search-share').title, document.getElementById('search').getAttribute('aria-invalid')]);
      expect(msg[0].length > 0 && msg[1] === 'true', `error title '${msg[0]}', aria-invalid ${msg[1]}`);
      expect(before.rows === 1 && after.rows === 1 && Math.abs(after.h - before.h) < 1,
        `toolbar ${before.h}px/${before.rows} row(s) before, ${after.h}px/${after.rows} after`);
      expect(after.right <= after.width + 1, `toolbar overflows: ${after.right} > ${after.width}`);
      await shot(page, `bad-regex-${w}`);
      await page.fill('#search', '');
      await page.press('#search', 'Enter');
      return `${after.h}px, message '${msg[0]}'`;
    });
  }

  await check('flame_graph_above_fold_at_1024x768', async () => {
    await page.setViewportSize({ width: 1024, height: 768 });
    await open(page, shopQ);
    const c = await page.locator('#flame canvas').boundingBox();
    const t = await page.locator('#top-table').boundingBox();
    expect(c && c.y + c.height <= 768, `flame graph at y ${c && c.y}..${c && c.y + c.height} in a 768 px window`);
    await shot(page, 'fold-1024');
    return `graph y ${c.y.toFixed(0)}..${(c.y + c.height).toFixed(0)}, table at ${t.y.toFixed(0)}`;
  });

  await check('no_console_or_page_errors', async () => {
    expect(consoleErrors.length === 0, consoleErrors.slice(0, 5).join(' || '));
  });
} finally {
  await close();
}
process.exit(0); // test_ui_gaps.sh counts the FAIL lines
