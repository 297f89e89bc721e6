// The diff as a new user meets it (issue 30, item 7), in a real browser against a
// fresh `hearth server` holding the fixture (fixture.mjs: windows A 40 min ago and
// B 10 min ago, nothing before) and one pprof with an inlined function:
//  - the default diff on a store with nothing in the hour before compares the
//    halves of the selected range, and says so, with no error banner;
//  - a side with no samples is explained in words, not drawn all red;
//  - the two ranges are set by brushing the timeline (Before, then After; Shift
//    sets After), drawn there in two colours and kept in the URL;
//  - a side-by-side view (two flame graphs, one colour per function on both and as
//    in the flame graph) and the combined view, switched and kept in the URL;
//  - one name per function in every view: an inlined function is "f" in the top
//    table, the diff table, the selection and the URL, its frames "f_[i]" included.
// Prints "PASS name" / "FAIL name: why" per check; screenshots go to OUTDIR/diffux-*.png.
//
// Usage: node diffux_test.mjs URL OUTDIR   (the server's store must be empty)
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { launch, waitReady, reloadAfter, frames, clickFrame } from './browser.mjs';
import * as fx from './fixture.mjs';
import { fBytes, fInt, fPacked, gzip } from './pprof.mjs';

const [URL_, OUT] = process.argv.slice(2);
const BASE = URL_.replace(/\/$/, '');
mkdirSync(OUT, { recursive: true });
const NOW = Math.floor(Date.now() / 1000);
const W = fx.windows(NOW);
const SHOP = `${fx.APP}{env="prod"}`;
const INL = 'inl{env="test"}';

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
const shot = (page, name) => page.screenshot({ path: join(OUT, `diffux-${name}.png`), fullPage: true });
async function waitFor(fn, what, timeout = 10000) {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - t0 > timeout) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
const visibleError = (page) => page.evaluate(() => {
  const e = document.getElementById('error');
  return e.hidden || !e.textContent.trim() ? null : e.textContent.trim();
});
const tableRows = (page, sel) => page.$$eval(`${sel} tbody tr[data-name]`, (trs) => trs.map((tr) => ({
  name: tr.dataset.name, left: Number(tr.dataset.left), right: Number(tr.dataset.right),
  self: Number(tr.dataset.self), selected: tr.getAttribute('aria-selected') === 'true',
})));
const shown = (page, sel) => page.$eval(sel, (e) => !e.hidden && e.offsetParent !== null);
const diffRows = (page) => waitFor(async () => {
  const r = await tableRows(page, '#diff-table');
  return r.length ? r : null;
}, 'diff rows');
async function open(page, query) {
  await page.goto(`${BASE}/${query}`);
  await waitReady(page);
}

// ---- a pprof with an inlined function, written by hand (pprof.mjs) ----
/* f inlined into g at one address (a location of two lines, f first: pprof puts
 * the inlined callee before its caller), f called from main at another. */
function inlinedPprof(nFg, nF) {
  const strs = ['', 'samples', 'count', 'main', 'g', 'f'];
  const s = (x) => strs.indexOf(x);
  const fn = (id, name) => fBytes(5, [...fInt(1, id), ...fInt(2, s(name))]);
  const line = (fid) => fBytes(4, fInt(1, fid));
  const loc = (id, addr, lines) => fBytes(4, [...fInt(1, id), ...fInt(3, addr), ...lines.flatMap(line)]);
  const sample = (locs, v) => fBytes(2, [...fPacked(1, locs), ...fPacked(2, [v])]);
  const msg = [
    ...fBytes(1, [...fInt(1, s('samples')), ...fInt(2, s('count'))]),
    ...sample([2, 1], nFg), ...sample([3, 1], nF),
    ...loc(1, 0x1000, [1]), ...loc(2, 0x2000, [3, 2]), ...loc(3, 0x3000, [3]),
    ...fn(1, 'main'), ...fn(2, 'g'), ...fn(3, 'f'),
    ...strs.flatMap((x) => fBytes(6, [...Buffer.from(x)])),
  ];
  return gzip(Buffer.from(msg));
}
const INL_SAMPLES = { A: [3, 2], B: [9, 2] }; // [f inlined into g, f called by main]

async function ingestInlined() {
  for (const win of ['A', 'B']) {
    const q = new URLSearchParams({ name: INL, format: 'pprof', from: W[win].from, until: W[win].until });
    const r = await fetch(`${BASE}/ingest?${q}`, { method: 'POST', body: inlinedPprof(...INL_SAMPLES[win]) });
    if (r.status !== 200) throw new Error(`ingest of the inlined pprof ${win}: ${r.status} ${await r.text()}`);
  }
}

/* Drags across the timeline from unix second t0 to t1 (Shift held when shift). */
async function brush(page, t0, t1, shift = false) {
  const d = await page.$eval('#timeline', (e) => ({ from: Number(e.dataset.from), until: Number(e.dataset.until) }));
  const box = await page.locator('#timeline canvas').boundingBox();
  const x = (t) => box.x + ((t - d.from) / (d.until - d.from)) * box.width;
  const y = box.y + box.height / 2;
  await page.mouse.move(x(t0), y);
  if (shift) await page.keyboard.down('Shift');
  await page.mouse.down();
  await page.mouse.move(x(t1), y, { steps: 6 });
  await page.mouse.up();
  if (shift) await page.keyboard.up('Shift');
}

await fx.ingest(BASE, NOW);
await ingestInlined();
const L = fx.samples(['A']);
const R = fx.samples(['B']);
const LF = fx.perFunction(L);
const RF = fx.perFunction(R);

const { ctx, close } = await launch({ width: 1440, height: 900 });
const page = await ctx.newPage();
const consoleErrors = [];
page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
page.on('pageerror', (e) => consoleErrors.push(`page error: ${e.message}`));
const shopQ = `?query=${encodeURIComponent(SHOP)}`;

try {
  await check('default_diff_on_new_install_compares_halves', async () => {
    // Nothing before the last hour: the default "hour before" side is empty.
    await open(page, `${shopQ}&view=diff`);
    const rows = await diffRows(page);
    for (const [k, v] of [['lfrom', 'now-1h'], ['luntil', 'now-30m'], ['rfrom', 'now-30m'], ['runtil', 'now']])
      expect(urlParam(page, k) === v, `URL ${k}=${urlParam(page, k)}, want ${v}`);
    const note = await page.$eval('#diff-fallback', (e) => (e.hidden ? '' : e.textContent));
    expect(/first half/.test(note) && /Nothing was recorded/.test(note), `#diff-fallback '${note}'`);
    expect(await visibleError(page) === null, `error banner: ${await visibleError(page)}`);
    expect(!(await shown(page, '#diff-empty')), 'the empty-side message is shown');
    const h = rows.find((r) => r.name === 'hash');
    expect(h && h.left === LF.get('hash').self && h.right === RF.get('hash').self,
      `hash ${JSON.stringify(h)}, want ${LF.get('hash').self} → ${RF.get('hash').self} (A vs B)`);
    await shot(page, 'default-halves');
    return note.slice(0, 90);
  });

  await check('empty_side_explained_in_words', async () => {
    const q = new URLSearchParams({ query: SHOP, view: 'diff', lquery: SHOP, rquery: SHOP,
      lfrom: 'now-3h', luntil: 'now-2h', rfrom: 'now-1h', runtil: 'now' });
    await open(page, `?${q}`);
    const el = await waitFor(() => page.$eval('#diff-empty', (e) => !e.hidden && { reason: e.dataset.reason, text: e.textContent }),
      'the empty-side message');
    expect(el.reason === 'before-empty', `reason ${el.reason}`);
    expect(/before side .* holds no samples/.test(el.text) && /nothing to compare/.test(el.text), `message '${el.text}'`);
    expect(await visibleError(page) === null, `error banner: ${await visibleError(page)}`);
    expect(!(await shown(page, '#diff-flame')) && !(await shown(page, '#diff-split')), 'a diff graph is drawn');
    expect((await tableRows(page, '#diff-table')).length === 0, 'the diff table lists functions');
    expect(!(await shown(page, '#diff-fallback')), 'the halves note is shown for sides the user picked');
    await shot(page, 'empty-side');
    return el.text.slice(0, 100);
  });

  await check('two_ranges_brushed_on_timeline', async () => {
    await open(page, `${shopQ}&view=diff`);
    await diffRows(page);
    expect(await page.getAttribute('button[data-brush="left"]', 'aria-pressed') === 'true', 'Before not the first brush side');
    await reloadAfter(page, () => brush(page, W.A.from - 300, W.A.until + 300));
    expect(await page.getAttribute('button[data-brush="right"]', 'aria-pressed') === 'true', 'After not next after Before');
    await reloadAfter(page, () => brush(page, W.B.from - 200, W.B.until + 200));
    const n = (k) => Number(urlParam(page, k));
    expect(n('lfrom') <= W.A.from && n('luntil') >= W.A.until && n('luntil') < W.B.from,
      `before ${n('lfrom')}..${n('luntil')} does not hold A ${W.A.from}..${W.A.until} alone`);
    expect(n('rfrom') <= W.B.from && n('runtil') >= W.B.until && n('rfrom') > W.A.until,
      `after ${n('rfrom')}..${n('runtil')} does not hold B ${W.B.from}..${W.B.until} alone`);
    const rows = await diffRows(page);
    const h = rows.find((r) => r.name === 'hash');
    expect(h && h.left === LF.get('hash').self && h.right === RF.get('hash').self, `hash ${JSON.stringify(h)}`);
    const marks = await page.$eval('#timeline', (e) => JSON.parse(e.dataset.marks || '[]'));
    expect(marks.length === 2 && marks[0].color !== marks[1].color &&
      marks[0].from === n('lfrom') && marks[1].until === n('runtil'), `timeline marks ${JSON.stringify(marks)}`);
    expect(await visibleError(page) === null, `error banner: ${await visibleError(page)}`);
    await shot(page, 'brushed');
    // Shift-drag sets After whatever side is next; the URL keeps both across a reload.
    const lfrom = urlParam(page, 'lfrom');
    await reloadAfter(page, () => brush(page, W.B.from - 100, W.B.until + 100, true));
    expect(urlParam(page, 'lfrom') === lfrom && n('rfrom') > W.B.from - 200, `shift-drag: lfrom ${urlParam(page, 'lfrom')}, rfrom ${n('rfrom')}`);
    const url = page.url();
    await page.reload();
    await waitReady(page);
    // The box shows the URL's unix seconds as a local date (as the main range's boxes do).
    const boxSec = await page.evaluate((v) => {
      const m = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/.exec(v);
      return m ? new Date(+m[1], m[2] - 1, +m[3], +m[4], +m[5], +m[6]).getTime() / 1000 : NaN;
    }, await page.inputValue('#rfrom'));
    expect(page.url() === url && boxSec === n('rfrom'),
      `the ranges did not survive a reload: #rfrom '${await page.inputValue('#rfrom')}', URL rfrom ${urlParam(page, 'rfrom')}`);
    // Outside the diff view a drag still zooms the main range.
    await page.click('button[data-view="flame"]');
    await reloadAfter(page, () => brush(page, W.A.from - 60, W.A.until + 60));
    expect(n('from') <= W.A.from && n('until') >= W.A.until && urlParam(page, 'lfrom') === lfrom,
      `flame view drag: from ${urlParam(page, 'from')}, lfrom ${urlParam(page, 'lfrom')}`);
    return `before ${urlParam(page, 'lfrom')}..${urlParam(page, 'luntil')}, after ${urlParam(page, 'rfrom')}..${urlParam(page, 'runtil')}`;
  });

  await check('side_by_side_and_combined_views', async () => {
    const q = new URLSearchParams({ query: SHOP, view: 'diff', lquery: SHOP, rquery: SHOP,
      lfrom: W.A.from - 5, luntil: W.A.until + 5, rfrom: W.B.from - 5, runtil: W.B.until + 5 });
    await open(page, `?${q}`);
    await diffRows(page);
    expect(await shown(page, '#diff-flame') && !(await shown(page, '#diff-split')), 'combined is not the default');
    await page.click('button[data-diffmode="split"]');
    await waitFor(() => urlParam(page, 'diffMode') === 'split', 'diffMode=split in the URL');
    expect(!(await shown(page, '#diff-flame')) && await shown(page, '#diff-split'), 'split view not shown');
    const path = ['main', 'compute', 'hash'];
    const lf = await frames(page, '#diff-left ul.flame-frames');
    const rf = await frames(page, '#diff-right ul.flame-frames');
    const fill = (list, name) => page.$eval(`${list} li[data-name="${name}"]`, (li) => li.dataset.fill);
    const lh = lf.find((f) => f.name === 'hash');
    const rh = rf.find((f) => f.name === 'hash');
    expect(lh && lh.total === fx.pathTotal(L, path) && rh && rh.total === fx.pathTotal(R, path),
      `hash ${lh && lh.total} | ${rh && rh.total}, want ${fx.pathTotal(L, path)} | ${fx.pathTotal(R, path)}`);
    expect(lf[0].total === fx.sum(L) && rf[0].total === fx.sum(R), `roots ${lf[0].total} | ${rf[0].total}`);
    const colours = [];
    for (const name of ['hash', 'read_input', 'render']) {
      const a = await fill('#diff-left', name);
      const b = await fill('#diff-right', name);
      expect(a && a === b, `${name}: ${a} before, ${b} after`);
      colours.push(a);
    }
    expect(new Set(colours).size > 1 || colours.length === 1, 'every function one colour');
    await shot(page, 'side-by-side');
    // Selecting a function outlines it on both sides.
    await clickFrame(page, '#diff-left canvas', lh);
    await waitFor(() => urlParam(page, 'focus') === 'hash', 'focus=hash');
    const hl = async (list) => (await frames(page, list)).filter((f) => f.highlight).map((f) => f.name);
    expect((await hl('#diff-right ul.flame-frames')).includes('hash'), 'hash not outlined after');
    await page.reload();
    await waitReady(page);
    expect(await shown(page, '#diff-split'), 'split view lost on reload');
    // The same colour as in the flame graph.
    const splitFill = await fill('#diff-left', 'hash');
    await page.click('button[data-diffmode="combined"]');
    await waitFor(() => urlParam(page, 'diffMode') === null, 'diffMode gone from the URL');
    expect(await shown(page, '#diff-flame') && !(await shown(page, '#diff-split')), 'combined view not back');
    await page.click('button[data-view="flame"]');
    await waitReady(page);
    const flameFill = await fill('#flame-frames', 'hash');
    expect(flameFill === splitFill, `hash ${flameFill} in the flame graph, ${splitFill} side by side`);
    return `hash ${lh.total} → ${rh.total}, colours ${colours.join(' ')}`;
  });

  await check('one_name_for_an_inlined_function', async () => {
    const inl = `?query=${encodeURIComponent(INL)}`;
    await open(page, inl);
    const top = await tableRows(page, '#top-table');
    const names = top.map((r) => r.name).sort();
    expect(names.join() === 'f,g,main', `top rows ${names}`);
    const fs = await frames(page);
    const fi = fs.find((f) => f.name === 'f_[i]');
    expect(fi && fi.inlined && fs.some((f) => f.name === 'f' && !f.inlined), `frames ${fs.map((f) => f.name)}`);
    await clickFrame(page, '#flame canvas', fi);
    await waitFor(() => urlParam(page, 'focus') === 'f', `focus=f in the URL (${urlParam(page, 'focus')})`);
    const sel = (await tableRows(page, '#top-table')).filter((r) => r.selected).map((r) => r.name);
    expect(sel.join() === 'f', `selected top rows ${sel}`);
    const crumbs = await page.$$eval('#breadcrumbs button', (bs) => bs.map((b) => b.textContent.trim()));
    expect(crumbs.join('>') === 'all>main>g>f', `breadcrumbs ${crumbs.join(' > ')}`);
    await page.click('#reset-zoom');
    // Out of the zoom, both frames of f are outlined: inlined into g, and called by main.
    const lit = (await frames(page)).filter((f) => f.highlight).map((f) => f.name).sort();
    expect(lit.join() === 'f,f_[i]', `outlined frames ${lit}`);
    const self = (r) => r.self;
    const fRow = top.find((r) => r.name === 'f');
    const want = INL_SAMPLES.A[0] + INL_SAMPLES.A[1] + INL_SAMPLES.B[0] + INL_SAMPLES.B[1];
    expect(fRow && self(fRow) === want, `top row f self ${fRow && fRow.self}, want ${want}`);
    await shot(page, 'inlined-flame');
    // The diff names it the same way, and keeps the selection.
    const q = new URLSearchParams({ query: INL, view: 'diff', lquery: INL, rquery: INL, focus: 'f',
      lfrom: W.A.from - 5, luntil: W.A.until + 5, rfrom: W.B.from - 5, runtil: W.B.until + 5 });
    await open(page, `?${q}`);
    const rows = await diffRows(page);
    const dn = rows.map((r) => r.name).sort();
    expect(dn.every((n) => names.includes(n)) && dn.includes('f'), `diff rows ${dn}, top rows ${names}`);
    const f = rows.find((r) => r.name === 'f');
    expect(f.left === INL_SAMPLES.A[0] + INL_SAMPLES.A[1] && f.right === INL_SAMPLES.B[0] + INL_SAMPLES.B[1] && f.selected,
      `diff row f ${JSON.stringify(f)}`);
    const dlit = (await frames(page, '#diff-flame ul.flame-frames')).filter((x) => x.highlight).map((x) => x.name).sort();
    expect(dlit.join() === 'f,f_[i]', `outlined diff frames ${dlit}`);
    await shot(page, 'inlined-diff');
    return `top ${names.join(' ')}, diff ${dn.join(' ')}`;
  });

  await check('no_console_errors', async () => {
    expect(consoleErrors.length === 0, consoleErrors.slice(0, 3).join(' | '));
  });
} finally {
  await close();
}
process.exit(0); // test_ui_diffux.sh counts the FAIL lines
