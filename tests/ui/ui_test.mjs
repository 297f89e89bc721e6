// The web UI in a real browser against a real `hearth server` holding the
// fixture (fixture.mjs): what a user sees and does, checked through the DOM
// contract (ids, data-* attributes, the #flame-frames accessibility list),
// never by reading pixels. Prints "PASS name" / "FAIL name: why" per check;
// exits 0 (test_ui.sh counts the lines). Screenshots go to OUTDIR.
//
// Usage: node ui_test.mjs URL OUTDIR SERVER_PID
//   The server must be fresh (empty store): the fixture is ingested here. At the
//   end the server is stopped (SERVER_PID) to check the "unreachable" message.
import { gunzipSync } from 'node:zlib';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { launch, waitReady, reloadAfter, frames, clickFrame } from './browser.mjs';
import * as fx from './fixture.mjs';

const [URL_, OUT, SERVER_PID] = process.argv.slice(2);
const BASE = URL_.replace(/\/$/, '');
mkdirSync(OUT, { recursive: true });
const NOW = Math.floor(Date.now() / 1000);
const W = fx.windows(NOW);

let fails = 0;
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
const fmtN = (n) => n.toLocaleString('en-US');
const pct1 = (part, whole) => (100 * part / whole).toFixed(1);
const urlParam = (page, k) => new URL(page.url()).searchParams.get(k);
const shot = (page, name) => page.screenshot({ path: join(OUT, `${name}.png`) });
const visibleError = (page) => page.evaluate(() => {
  const e = document.getElementById('error');
  return e && !e.hidden ? e.textContent.trim() : null;
});
async function waitFor(fn, what, timeout = 10000) {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - t0 > timeout) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
const byName = (fs, n) => fs.filter((f) => f.name === n);
const tableRows = (page, sel = '#top-table') => page.$$eval(`${sel} tbody tr[data-name]`, (trs) =>
  trs.map((tr) => ({
    name: tr.dataset.name, self: Number(tr.dataset.self), total: Number(tr.dataset.total),
    left: Number(tr.dataset.left), right: Number(tr.dataset.right), delta: Number(tr.dataset.delta),
    verdict: tr.dataset.verdict, change: Number(tr.dataset.change),
    match: tr.dataset.match === '1', selected: tr.getAttribute('aria-selected') === 'true',
    cells: [...tr.cells].map((c) => c.textContent.trim()),
  })));

await fx.ingest(BASE, NOW);
const ALL = fx.samples();
const TOTAL = fx.sum(ALL);
const FN = fx.perFunction(ALL);

const { ctx, close } = await launch();
const page = await ctx.newPage();
const consoleErrors = [];
let expectNetErrors = false; // a 400 or a refused connection logs "Failed to load resource"
page.on('console', (m) => {
  if (m.type() !== 'error') return;
  if (expectNetErrors && /Failed to load resource|ERR_CONNECTION_REFUSED|Failed to fetch/.test(m.text())) return;
  consoleErrors.push(m.text());
});
page.on('pageerror', (e) => consoleErrors.push(`page error: ${e.message}`));

try {
  await check('page_loads', async () => {
    await page.goto(`${BASE}/`);
    await waitReady(page);
    expect(await visibleError(page) === null, `error shown: ${await visibleError(page)}`);
    return await page.title();
  });

  await check('status_and_error_roles', async () => {
    const r = await page.evaluate(() => [document.getElementById('status').getAttribute('role'),
      document.getElementById('error').getAttribute('role')]);
    expect(r[0] === 'status' && r[1] === 'alert', `roles ${r}`);
  });

  await check('status_shows_total_samples', async () => {
    const s = await page.textContent('#status');
    expect(s.includes(fmtN(TOTAL)) && /samples/.test(s), `#status '${s}', want ${fmtN(TOTAL)} samples`);
    return s.trim();
  });

  await check('flame_shows_fixture_functions', async () => {
    const fs = await frames(page);
    const names = new Set(fs.map((f) => f.name));
    const missing = [...FN.keys()].filter((n) => !names.has(n));
    expect(missing.length === 0, `missing ${missing.join(', ')} in ${[...names].join(', ')}`);
    const main = byName(fs, 'main')[0];
    expect(main.total === TOTAL, `main data-total ${main.total}, want ${TOTAL}`);
    const hash = byName(fs, 'hash')[0];
    const want = fx.pathTotal(ALL, ['main', 'compute', 'hash']);
    expect(hash.total === want && hash.self === FN.get('hash').self,
      `hash total/self ${hash.total}/${hash.self}, want ${want}/${FN.get('hash').self}`);
    expect(fs.every((f) => f.text === f.name), 'li text differs from data-name');
    return `${fs.length} frames`;
  });

  await check('flame_marks_inlined_frames', async () => {
    const fs = await frames(page);
    const inl = fs.filter((f) => f.inlined).map((f) => f.name);
    expect(inl.length === 1 && inl[0] === 'blend_[i]', `inlined frames: ${inl.join(', ')}`);
  });

  await check('flame_frame_geometry', async () => {
    // children sit inside their parent horizontally, one row deeper
    const fs = await frames(page);
    const canvas = await page.locator('#flame canvas').boundingBox();
    const root = fs.find((f) => f.depth === 0);
    expect(root && Math.abs(root.w - canvas.width) <= 2, `root width ${root && root.w} vs canvas ${canvas.width}`);
    const compute = byName(fs, 'compute')[0], hash = byName(fs, 'hash')[0];
    expect(hash.x >= compute.x - 0.5 && hash.x + hash.w <= compute.x + compute.w + 0.5 &&
      hash.depth === compute.depth + 1, 'hash is not drawn inside compute');
    const ratio = hash.w / compute.w, want = hash.total / compute.total;
    expect(Math.abs(ratio - want) < 0.02, `hash/compute width ${ratio.toFixed(3)}, want ${want.toFixed(3)}`);
  });

  // Text showing part/whole as a percentage somewhere, at whatever precision (≥ 1 decimal).
  const hasPctIn = (text, part, whole) => [...text.matchAll(/(\d+(?:\.\d+)?)\s*%/g)]
    .some((m) => Math.abs(Number(m[1]) - 100 * part / whole) <= 0.051);
  // A cell showing part/TOTAL as a percentage, at whatever precision (≥ 1 decimal).
  const hasPct = (cells, part) => cells.some((c) => {
    const m = /^(\d+(?:\.\d+)?)\s*%$/.exec(c);
    return m && Math.abs(Number(m[1]) - 100 * part / TOTAL) <= 0.051;
  });
  await check('top_table_values', async () => {
    const rows = await tableRows(page);
    const bad = [];
    for (const [n, v] of FN) {
      const r = rows.find((x) => x.name === n);
      if (!r) bad.push(`${n} missing`);
      else if (r.self !== v.self || r.total !== v.total) bad.push(`${n} ${r.self}/${r.total} want ${v.self}/${v.total}`);
      else if (r.cells.length < 5 || !hasPct(r.cells, v.total) || !hasPct(r.cells, v.self))
        bad.push(`${n} cells ${r.cells.join('|')} lack self% ${pct1(v.self, TOTAL)} or total% ${pct1(v.total, TOTAL)}`);
    }
    expect(bad.length === 0, bad.join('; '));
    // By self, largest first: what each function costs itself (gaps_test.mjs: in the URL).
    const th = await page.getAttribute('th[data-sort="self"]', 'aria-sort');
    expect(th === 'descending', `default sort: self aria-sort=${th}`);
    const selfs = rows.map((r) => r.self);
    expect(selfs.every((t, i) => i === 0 || selfs[i - 1] >= t), `default order not self desc: ${selfs}`);
    return `${rows.length} rows`;
  });
  await shot(page, 'flame-table');

  await check('tooltip_on_hover', async () => {
    const f = byName(await frames(page), 'hash')[0];
    const box = await page.locator('#flame canvas').boundingBox();
    await page.mouse.move(box.x + f.x + f.w / 2, box.y + f.y + f.h / 2);
    const t = await waitFor(() => page.evaluate(() => {
      const e = document.getElementById('tooltip');
      return e && !e.hidden && e.textContent;
    }), '#tooltip');
    expect(t.includes('hash') && t.includes(fmtN(f.self)) && t.includes(fmtN(f.total)) &&
      hasPctIn(t, f.total, TOTAL) && !/inlined/i.test(t), `tooltip '${t}' (want total% ${pct1(f.total, TOTAL)})`);
    const parent = byName(await frames(page), 'compute')[0];
    expect(hasPctIn(t, f.total, parent.total), `tooltip '${t}' lacks % of parent ${pct1(f.total, parent.total)}`);
    await page.mouse.move(1, 1);
    const b = byName(await frames(page), 'blend_[i]')[0];
    await page.mouse.move(box.x + b.x + b.w / 2, box.y + b.y + b.h / 2);
    const ti = await waitFor(() => page.evaluate(() => {
      const e = document.getElementById('tooltip');
      return e && !e.hidden && e.textContent.includes('blend') && e.textContent;
    }), '#tooltip of blend_[i]');
    expect(/inlined/i.test(ti), `tooltip of an inlined frame: '${ti}'`);
    await page.mouse.move(1, 1);
    return t.replace(/\s+/g, ' ').slice(0, 120);
  });

  await check('click_zooms_into_frame', async () => {
    const before = byName(await frames(page), 'compute')[0];
    const canvasW = (await page.locator('#flame canvas').boundingBox()).width;
    await clickFrame(page, '#flame canvas', before);
    const after = await waitFor(async () => {
      const c = byName(await frames(page), 'compute')[0];
      return c && c.w > before.w + 1 ? c : null;
    }, 'compute to widen');
    expect(Math.abs(after.w - canvasW) <= 2, `zoomed width ${after.w}, canvas ${canvasW}`);
    const crumbs = await page.$$eval('#breadcrumbs button', (bs) => bs.map((b) => b.textContent.trim()));
    expect(crumbs[crumbs.length - 1] === 'compute' && crumbs.length >= 2, `breadcrumbs ${crumbs.join(' > ')}`);
    // frames outside the zoomed subtree are gone (or no wider than nothing)
    const names = new Set((await frames(page)).map((f) => f.name));
    expect(!names.has('read_input'), 'read_input still drawn after zooming into compute');
    await shot(page, 'zoomed');
    const m = await page.evaluate(() => ['hearth:flame-render', 'hearth:flame-zoom']
      .map((n) => performance.getEntriesByName(n).length));
    expect(m[0] > 0 && m[1] > 0, `performance measures flame-render/flame-zoom: ${m}`);
    return crumbs.join(' > ');
  });

  await check('reset_zoom', async () => {
    await page.click('#reset-zoom');
    const c = await waitFor(async () => {
      const fs = await frames(page);
      return fs.some((f) => f.name === 'read_input') ? byName(fs, 'compute')[0] : null;
    }, 'full graph after reset');
    const crumbs = await page.$$eval('#breadcrumbs button', (bs) => bs.map((b) => b.textContent.trim()));
    expect(crumbs.length <= 1, `breadcrumbs after reset: ${crumbs.join(' > ')}`);
    const share = c.total / TOTAL, canvasW = (await page.locator('#flame canvas').boundingBox()).width;
    expect(Math.abs(c.w / canvasW - share) < 0.02, `compute width ${c.w}/${canvasW}, share ${share}`);
  });

  await check('search_substring_share', async () => {
    await page.fill('#search', 'MEMCPY'); // case-insensitive
    await page.press('#search', 'Enter');
    const n = fx.matched(ALL, (f) => f.toLowerCase().includes('memcpy'));
    const want = `Matched: ${pct1(n, TOTAL)}% of total (${fmtN(n)} samples)`;
    const got = await waitFor(async () => {
      const t = (await page.textContent('#search-share')).trim();
      return t.includes(want) ? t : null;
    }, `#search-share '${want}'`).catch(async (e) => {
      throw new Error(`${e.message}; shows '${(await page.textContent('#search-share')).trim()}'`);
    });
    const fs = await frames(page);
    const m = fs.filter((f) => f.match).map((f) => f.name);
    expect(m.length === 2 && m.every((x) => x === 'memcpy'), `matched frames: ${m.join(', ')}`);
    const rows = (await tableRows(page)).filter((r) => r.match).map((r) => r.name);
    expect(rows.length === 1 && rows[0] === 'memcpy', `matched rows: ${rows.join(', ')}`);
    expect(urlParam(page, 'search') === 'MEMCPY', `URL search=${urlParam(page, 'search')}`);
    await shot(page, 'search');
    return got;
  });

  await check('search_regex_counts_each_sample_once', async () => {
    const re = /^(hash|memcpy|compute)$/;
    await page.fill('#search', `/${re.source}/`);
    await page.press('#search', 'Enter');
    const n = fx.matched(ALL, (f) => re.test(f));
    const want = `Matched: ${pct1(n, TOTAL)}% of total (${fmtN(n)} samples)`;
    await waitFor(async () => (await page.textContent('#search-share')).includes(want), `'${want}'`)
      .catch(async (e) => { throw new Error(`${e.message}; shows '${await page.textContent('#search-share')}'`); });
    const m = new Set((await frames(page)).filter((f) => f.match).map((f) => f.name));
    expect([...m].sort().join() === 'compute,hash,memcpy', `matched frames ${[...m]}`);
    await page.fill('#search', '');
    await page.press('#search', 'Enter');
    await waitFor(async () => !(await frames(page)).some((f) => f.match), 'search cleared');
    return want;
  });

  for (const col of ['name', 'self', 'total']) {
    await check(`table_sort_${col}`, async () => {
      const seen = [];
      for (let k = 0; k < 2; k++) {
        await page.click(`th[data-sort="${col}"]`);
        const dir = await waitFor(() => page.getAttribute(`th[data-sort="${col}"]`, 'aria-sort'), 'aria-sort');
        expect(dir === 'ascending' || dir === 'descending', `aria-sort=${dir}`);
        const rows = await tableRows(page);
        const cmp = col === 'name' ? (a, b) => a.name.localeCompare(b.name) : (a, b) => a[col] - b[col];
        const sign = dir === 'ascending' ? 1 : -1;
        const bad = rows.findIndex((r, i) => i > 0 && sign * cmp(rows[i - 1], r) > 0);
        expect(bad < 0, `${dir}: row ${bad} out of order: ${rows.map((r) => `${r.name}:${r[col] ?? ''}`).join(' ')}`);
        expect(rows.length === FN.size, `${rows.length} rows, want ${FN.size}`);
        const others = await page.$$eval('th[data-sort]', (ths, c) => ths.filter((t) => t.dataset.sort !== c &&
          ['ascending', 'descending'].includes(t.getAttribute('aria-sort'))).length, col);
        expect(others === 0, 'another column still claims aria-sort');
        seen.push(dir);
      }
      expect(seen[0] !== seen[1], `two clicks gave ${seen.join(', ')}`);
      return seen.join(' then ');
    });
  }

  await check('table_filter', async () => {
    await page.fill('#top-filter', 'mem');
    const names = await waitFor(async () => {
      const r = (await tableRows(page)).map((x) => x.name);
      return r.length === 1 ? r : null;
    }, 'one row after filtering');
    expect(names[0] === 'memcpy', `rows ${names}`);
    await page.fill('#top-filter', '');
    await waitFor(async () => (await tableRows(page)).length === FN.size, 'all rows back');
  });

  await check('row_click_highlights_frames', async () => {
    await page.click('#top-table tbody tr[data-name="memcpy"]');
    await waitFor(async () => (await frames(page)).some((f) => f.highlight), 'a highlighted frame');
    const fs = await frames(page);
    const hl = fs.filter((f) => f.highlight);
    expect(hl.length === byName(fs, 'memcpy').length && hl.every((f) => f.name === 'memcpy'),
      `highlighted: ${hl.map((f) => f.name).join(', ')}`);
    expect(urlParam(page, 'focus') === 'memcpy', `URL focus=${urlParam(page, 'focus')}`);
    return `${hl.length} frames`;
  });

  await check('frame_click_selects_row', async () => {
    const sort = byName(await frames(page), 'sort')[0];
    await clickFrame(page, '#flame canvas', sort);
    await waitFor(() => page.getAttribute('#top-table tr[data-name="sort"]', 'aria-selected')
      .then((v) => v === 'true'), 'row sort aria-selected');
    const sel = (await tableRows(page)).filter((r) => r.selected).map((r) => r.name);
    expect(sel.length === 1 && sel[0] === 'sort', `selected rows ${sel}`);
    const inView = await page.$eval('#top-table tr[data-name="sort"]', (tr) => {
      const r = tr.getBoundingClientRect(), p = tr.closest('.table-scroll') || document.documentElement;
      const pr = p.getBoundingClientRect();
      return r.bottom > pr.top && r.top < pr.bottom;
    });
    expect(inView, 'selected row is scrolled out of view');
    await page.click('#reset-zoom').catch(() => {});
  });

  const SW = fx.sandwich(ALL, 'hash');
  await check('sandwich_callers_and_callees', async () => {
    await page.click('#top-table tbody tr[data-name="hash"]');
    await page.click('button[data-view="sandwich"]');
    await waitFor(async () => (await page.textContent('#sandwich-fn')).trim() === 'hash', '#sandwich-fn hash');
    await waitFor(async () => (await frames(page, '#sandwich-callers ul.flame-frames')).length > 0, 'callers');
    const sel = await page.getAttribute('button[data-view="sandwich"]', 'aria-selected');
    expect(sel === 'true', `sandwich tab aria-selected=${sel}`);
    const callers = await frames(page, '#sandwich-callers ul.flame-frames');
    const callees = await frames(page, '#sandwich-callees ul.flame-frames');
    const cn = new Set(callers.map((f) => f.name)), ce = new Set(callees.map((f) => f.name));
    for (const f of SW.callers) expect(cn.has(f), `caller ${f} missing: ${[...cn]}`);
    for (const f of SW.callees) expect(ce.has(f), `callee ${f} missing: ${[...ce]}`);
    for (const f of ['render', 'parse', 'read_input']) expect(!cn.has(f) && !ce.has(f), `${f} is no caller/callee of hash`);
    const hashTotal = FN.get('hash').total;
    const top = callers.concat(callees).filter((f) => f.name === 'hash');
    expect(top.length > 0 && top.every((f) => f.total === hashTotal), `hash totals ${top.map((f) => f.total)}, want ${hashTotal}`);
    await shot(page, 'sandwich');
    return `callers ${[...cn].join(',')}; callees ${[...ce].join(',')}`;
  });

  await check('url_state_reloads_view', async () => {
    await page.fill('#search', 'sort');
    await page.press('#search', 'Enter');
    await waitFor(async () => (await page.textContent('#search-share')).includes('Matched'), 'search share');
    const share = (await page.textContent('#search-share')).trim();
    const url = page.url();
    await page.goto('about:blank');
    await page.goto(url);
    await waitReady(page);
    await waitFor(async () => (await page.textContent('#sandwich-fn')).trim() === 'hash', 'sandwich of hash after reload');
    expect(await page.getAttribute('button[data-view="sandwich"]', 'aria-selected') === 'true', 'sandwich tab not active');
    expect(await page.inputValue('#search') === 'sort', `search box '${await page.inputValue('#search')}'`);
    await waitFor(async () => (await page.textContent('#search-share')).trim() === share, `share '${share}'`);
    await page.fill('#search', '');
    await page.press('#search', 'Enter');
    return url.slice(BASE.length);
  });

  await check('orientation_toggle', async () => {
    await page.click('button[data-view="flame"]');
    await waitFor(async () => (await frames(page)).length > 0, 'flame frames');
    const y0 = (fs) => [fs.find((f) => f.depth === 0).y, fs.find((f) => f.depth === 1).y];
    const [r1, c1] = y0(await frames(page));
    expect(r1 < c1, `icicle: root y ${r1} not above child y ${c1}`);
    await page.click('#orient');
    await waitFor(async () => { const [r, c] = y0(await frames(page)); return r > c; }, 'root below its child');
    expect(urlParam(page, 'orient') === 'flame', `URL orient=${urlParam(page, 'orient')}`);
    await page.click('#orient');
    await waitFor(async () => { const [r, c] = y0(await frames(page)); return r < c; }, 'icicle again');
  });

  await check('export_links_answer', async () => {
    const hrefs = {};
    for (const k of ['pprof', 'folded', 'svg']) {
      const a = await page.$(`a#export-${k}`);
      expect(a, `no a#export-${k}`);
      expect(await a.getAttribute('download') !== null, `a#export-${k} has no download attribute`);
      hrefs[k] = new URL(await a.getAttribute('href'), page.url()).href;
      expect(new URL(hrefs[k]).searchParams.get('format') === k, `${k} href ${hrefs[k]}`);
    }
    const pp = await fetch(hrefs.pprof);
    const raw = gunzipSync(Buffer.from(await pp.arrayBuffer()));
    expect(pp.status === 200 && raw.length > 0 && raw.includes('read_input'), `pprof ${pp.status}, ${raw.length} bytes`);
    const fo = await fetch(hrefs.folded);
    const text = await fo.text();
    const n = text.trim().split('\n').reduce((t, l) => t + Number(l.split(' ').pop()), 0);
    expect(fo.status === 200 && n === TOTAL && text.includes('main;compute;hash;memcpy'), `folded ${fo.status}, total ${n}`);
    const sv = await fetch(hrefs.svg);
    const svg = await sv.text();
    expect(sv.status === 200 && svg.includes('<svg') && svg.includes('data-name="hash"'), `svg ${sv.status}`);
    return `pprof ${raw.length} B, folded ${n} samples, svg ${svg.length} B`;
  });

  await check('diff_shows_known_change', async () => {
    await page.click('button[data-view="diff"]');
    const sel = `${fx.APP}{env="prod"}`;
    await page.fill('#lquery', sel);
    await page.fill('#lfrom', String(W.A.from - 5));
    await page.fill('#luntil', String(W.A.until + 5));
    await page.fill('#rquery', sel);
    await page.fill('#rfrom', String(W.B.from - 5));
    await page.fill('#runtil', String(W.B.until + 5));
    await reloadAfter(page, () => page.click('#diff-apply'));
    const L = fx.samples(['A']), R = fx.samples(['B']);
    const lt = fx.sum(L), rt = fx.sum(R), lf = fx.perFunction(L), rf = fx.perFunction(R);
    const rows = await waitFor(async () => { const r = await tableRows(page, '#diff-table'); return r.length ? r : null; }, 'diff rows');
    const delta = (n) => 100 * (rf.get(n).self / rt - lf.get(n).self / lt);
    const h = rows.find((r) => r.name === 'hash'), ri = rows.find((r) => r.name === 'read_input');
    expect(h && h.left === lf.get('hash').self && h.right === rf.get('hash').self, `hash row ${JSON.stringify(h)}`);
    expect(h.delta > 0 && Math.abs(h.delta - delta('hash')) < 0.1, `hash delta ${h.delta}, want +${delta('hash').toFixed(2)}`);
    expect(ri && ri.delta < 0 && Math.abs(ri.delta - delta('read_input')) < 0.1, `read_input delta ${ri && ri.delta}, want ${delta('read_input').toFixed(2)}`);
    // Functions whose change is beyond noise first (when the server judges noise:
    // changes_test.mjs checks that), largest first; the rest by largest |delta|.
    const nSig = rows.filter((r) => r.verdict && r.verdict !== 'noise').length;
    expect(rows.slice(0, nSig).every((r) => r.verdict !== 'noise'), `significant rows not first: ${rows.map((r) => r.verdict)}`);
    const sigMags = rows.slice(0, nSig).map((r) => Math.abs(r.change));
    expect(sigMags.every((m, i) => i === 0 || sigMags[i - 1] >= m - 1e-9), `significant rows not largest first: ${sigMags}`);
    const mags = rows.slice(nSig).map((r) => Math.abs(r.delta));
    expect(mags.every((m, i) => i === 0 || mags[i - 1] >= m - 1e-9), `not largest |delta| first: ${mags}`);
    expect(rows[0].name === 'hash', `first row ${rows[0].name}`);
    const fs = await frames(page, '#diff-flame ul.flame-frames');
    const fh = fs.find((f) => f.name === 'hash');
    const path = ['main', 'compute', 'hash'];
    const lp = fx.pathTotal(L, path), rp = fx.pathTotal(R, path);
    const want = 100 * (rp / rt - lp / lt);
    expect(fh && fh.left === lp && fh.right === rp, `diff frame hash left/right ${fh && fh.left}/${fh && fh.right}, want ${lp}/${rp}`);
    expect(fh.change > 0 && Math.abs(fh.change - want) < 0.1, `hash change ${fh.change}, want +${want.toFixed(2)}`);
    const fr = fs.find((f) => f.name === 'read_input');
    expect(fr && fr.change < 0, `read_input change ${fr && fr.change}`);
    for (const [k, v] of [['lfrom', W.A.from - 5], ['runtil', W.B.until + 5]])
      expect(urlParam(page, k) === String(v), `URL ${k}=${urlParam(page, k)}`);
    const dbox = await page.locator('#diff-flame canvas').boundingBox();
    await page.mouse.move(dbox.x + fh.x + fh.w / 2, dbox.y + fh.y + fh.h / 2);
    const tip = await waitFor(() => page.evaluate(() => {
      const e = document.getElementById('tooltip');
      return e && !e.hidden && e.textContent.includes('hash') && e.textContent;
    }), 'diff tooltip of hash');
    expect(tip.includes(fmtN(lp)) && tip.includes(fmtN(rp)), `diff tooltip '${tip}' lacks ${lp} and ${rp}`);
    await page.mouse.move(1, 1);
    await shot(page, 'diff');
    return `hash ${h.delta > 0 ? '+' : ''}${h.delta.toFixed(1)} pp, read_input ${ri.delta.toFixed(1)} pp`;
  });

  await check('diff_url_state_reloads', async () => {
    const url = page.url();
    const before = (await tableRows(page, '#diff-table')).map((r) => `${r.name}:${r.delta}`).join();
    await page.goto('about:blank');
    await page.goto(url);
    await waitReady(page);
    const rows = await waitFor(async () => { const r = await tableRows(page, '#diff-table'); return r.length ? r : null; }, 'diff rows after reload');
    expect(await page.getAttribute('button[data-view="diff"]', 'aria-selected') === 'true', 'diff tab not active after reload');
    expect(rows.map((r) => `${r.name}:${r.delta}`).join() === before, 'diff rows differ after reload');
    // The URL keeps unix seconds; the box shows them as a local date (as the main range's boxes).
    expect(urlParam(page, 'lfrom') === String(W.A.from - 5), `URL lfrom ${urlParam(page, 'lfrom')}`);
    const shown = await page.inputValue('#lfrom');
    const back = await page.evaluate((v) => {
      const m = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/.exec(v);
      return m ? new Date(+m[1], m[2] - 1, +m[3], +m[4], +m[5], +m[6]).getTime() / 1000 : NaN;
    }, shown);
    expect(back === W.A.from - 5, `#lfrom '${shown}' reads ${back}, want the local date of ${W.A.from - 5}`);
  });

  await check('diff_table_is_not_cut_by_max_nodes', async () => {
    // The diff table is the server's per-function table over both whole merges:
    // with maxNodes=3 the diff graph keeps 3 frames, the table every function.
    const u = new URL(page.url());
    u.searchParams.set('maxNodes', '3');
    await page.goto('about:blank');
    await page.goto(u.toString());
    await waitReady(page);
    const L = fx.samples(['A']), R = fx.samples(['B']);
    const lt = fx.sum(L), rt = fx.sum(R), lf = fx.perFunction(L), rf = fx.perFunction(R);
    const selfOf = (m, n) => (m.has(n) ? m.get(n).self : 0);
    const want = [...new Set([...lf.keys(), ...rf.keys()])].filter((n) => selfOf(lf, n) || selfOf(rf, n));
    const rows = await waitFor(async () => {
      const r = await tableRows(page, '#diff-table');
      return r.length === want.length ? r : null;
    }, `${want.length} diff rows with maxNodes=3`);
    const bad = [];
    for (const n of want) {
      const r = rows.find((x) => x.name === n);
      const l = selfOf(lf, n), rr = selfOf(rf, n), d = 100 * (rr / rt - l / lt);
      if (!r || r.left !== l || r.right !== rr || Math.abs(r.delta - d) > 0.01)
        bad.push(`${n} ${r ? `${r.left}/${r.right} ${r.delta}` : 'missing'} want ${l}/${rr} ${d.toFixed(4)}`);
    }
    const drawn = new Set((await frames(page, '#diff-flame ul.flame-frames')).map((f) => f.name));
    expect(bad.length === 0, `diff table with maxNodes=3: ${bad.join('; ')}`);
    expect(want.some((n) => !drawn.has(n)), `every function drawn with maxNodes=3: ${[...drawn]}`);
    u.searchParams.delete('maxNodes');
    await page.goto(u.toString());
    await waitReady(page);
    return `${rows.length} rows beside ${drawn.size} frames`;
  });

  await check('timeline_group_by_label', async () => {
    await page.click('button[data-view="flame"]');
    await waitReady(page);
    const opts = await page.$$eval('select#groupby option', (os) => os.map((o) => o.value));
    expect(opts[0] === '' && opts.includes('host') && opts.includes('region'), `groupby options ${opts}`);
    const req = page.waitForRequest((r) => r.url().includes('/api/timeline') &&
      new URL(r.url()).searchParams.get('groupBy') === 'host', { timeout: 10000 });
    await page.selectOption('select#groupby', 'host');
    await req;
    await waitFor(() => urlParam(page, 'groupBy') === 'host', 'URL groupBy=host');
    // The stacked series, as the legend names them: one per host, with its samples.
    const got = await waitFor(async () => {
      const g = await page.$$eval('#timeline-legend [data-group]', (ss) => ss.map((s) => `${s.dataset.group}=${s.dataset.total}`));
      return g.length ? g.sort().join(' ') : null;
    }, 'timeline legend groups');
    const want = ['a', 'b'].map((h) => `${h}=${fx.sum(fx.samples(['A', 'B'], [h]))}`).join(' ');
    expect(got === want, `timeline groups '${got}', want '${want}'`);
    return got;
  });

  await check('timeline_brush_narrows_range', async () => {
    const tl = await page.$eval('#timeline', (e) => [Number(e.dataset.from), Number(e.dataset.until)]);
    expect(tl[0] <= W.A.from && tl[1] >= W.B.until, `axis ${tl} does not span the fixture`);
    const box = await page.locator('#timeline canvas').boundingBox();
    const xOf = (t) => box.x + (t - tl[0]) / (tl[1] - tl[0]) * box.width;
    const t1 = (W.A.until + W.B.from) / 2, t2 = W.B.until + (tl[1] - W.B.until) / 2;
    const y = box.y + box.height / 2;
    await reloadAfter(page, async () => {
      await page.mouse.move(xOf(t1), y);
      await page.mouse.down();
      for (let i = 1; i <= 10; i++) await page.mouse.move(xOf(t1) + (xOf(t2) - xOf(t1)) * i / 10, y);
      await page.mouse.up();
    });
    const from = Number(urlParam(page, 'from')), until = Number(urlParam(page, 'until'));
    expect(from > W.A.until && from < W.B.from && until > W.B.until && until <= tl[1] + 1,
      `URL from/until ${from}/${until}, want from in (${W.A.until}, ${W.B.from}) and until > ${W.B.until}`);
    const B = fx.sum(fx.samples(['B']));
    const main = byName(await frames(page), 'main')[0];
    expect(main && main.total === B, `main total after brush ${main && main.total}, want ${B}`);
    const s = await page.textContent('#status');
    expect(s.includes(fmtN(B)), `#status '${s}', want ${fmtN(B)}`);
    const axis = await page.$eval('#timeline', (e) => [Number(e.dataset.from), Number(e.dataset.until)]);
    expect(Math.abs(axis[0] - from) <= 60 && Math.abs(axis[1] - until) <= 60, `timeline axis ${axis} vs ${from}-${until}`);
    await shot(page, 'timeline-brushed');
    return `from ${from} until ${until}: ${fmtN(B)} samples`;
  });

  await check('query_autocomplete', async () => {
    await page.goto(`${BASE}/`);
    await waitReady(page);
    await page.click('#query');
    await page.fill('#query', '');
    await page.keyboard.type('{reg');
    const names = await waitFor(async () => {
      const o = await page.$$eval('#query-suggest:not([hidden]) [role=option]', (os) => os.map((x) => x.textContent.trim()));
      return o.length ? o : null;
    }, 'label name suggestions');
    expect(names.some((n) => n.includes('region')), `suggestions ${names}`);
    await page.fill('#query', '');
    await page.keyboard.type('{region="');
    const vals = await waitFor(async () => {
      const o = await page.$$eval('#query-suggest:not([hidden]) [role=option]', (os) => os.map((x) => x.textContent.trim()));
      return o.some((x) => x.includes('eu')) ? o : null;
    }, 'label value suggestions');
    expect(vals.some((v) => v.includes('us')), `value suggestions ${vals}`);
    return `names ${names.join(' ')}; values ${vals.join(' ')}`;
  });

  await check('query_filters_by_label', async () => {
    await page.fill('#query', '{host="b"}');
    await reloadAfter(page, () => page.press('#query', 'Enter'));
    const b = fx.sum(fx.samples(['A', 'B'], ['b']));
    const main = byName(await frames(page), 'main')[0];
    expect(main && main.total === b, `main total ${main && main.total}, want ${b}`);
    expect(urlParam(page, 'query') === '{host="b"}', `URL query=${urlParam(page, 'query')}`);
  });

  await check('range_presets', async () => {
    await page.fill('#query', '');
    const opts = await page.$$eval('select#range option', (os) => os.map((o) => o.value));
    expect(['5m', '1h', '6h', '24h', '7d', 'custom'].every((v) => opts.includes(v)), `options ${opts}`);
    // the fixture's newest samples are 10 minutes old: nothing in the last 5
    await reloadAfter(page, () => page.selectOption('select#range', '5m'));
    const e = await waitFor(() => visibleError(page), 'no-data message for 5m');
    expect(e.includes('No data in this time range'), `5m: #error '${e}'`);
    await reloadAfter(page, () => page.selectOption('select#range', '1h'));
    expect(await visibleError(page) === null, `1h: error '${await visibleError(page)}'`);
    const main = byName(await frames(page), 'main')[0];
    expect(main && main.total === TOTAL, `1h: main total ${main && main.total}`);
  });

  await check('max_nodes_param', async () => {
    const req = page.waitForRequest((r) => r.url().includes('/api/profile') &&
      new URL(r.url()).searchParams.get('maxNodes') === '3', { timeout: 10000 });
    await page.goto(`${BASE}/?maxNodes=3`);
    await req;
    await waitReady(page);
    const fs = await frames(page);
    // the server keeps the 3 largest nodes: total (the root), main, compute
    const names = fs.map((f) => f.name).filter((n) => n !== 'all' && n !== 'total');
    expect(names.join() === 'main,compute', `frames with maxNodes=3: ${fs.map((f) => f.name)}`);
    // The top table is the whole profile's, not the pruned tree's: every function
    // with its full self and total (summed from a 3-node tree, hash had self 0).
    const rows = await tableRows(page);
    const bad = [];
    for (const [n, v] of FN) {
      const r = rows.find((x) => x.name === n);
      if (!r || r.self !== v.self || r.total !== v.total) bad.push(`${n} ${r ? `${r.self}/${r.total}` : 'missing'} want ${v.self}/${v.total}`);
    }
    expect(bad.length === 0 && rows.length === FN.size, `top table with maxNodes=3: ${bad.join('; ')}`);
    await page.goto(`${BASE}/`);
    await waitReady(page);
  });

  expectNetErrors = true;
  await check('invalid_matcher_shows_error', async () => {
    const bad = '{host=~"("}';
    const api = await fetch(`${BASE}/api/profile?query=${encodeURIComponent(bad)}`);
    const msg = (await api.json()).error;
    expect(api.status === 400 && msg, `API answered ${api.status}`);
    await page.fill('#query', bad);
    await page.press('#query', 'Enter');
    const e = await waitFor(() => visibleError(page), '#error shown');
    expect(e.includes(msg), `#error '${e}' lacks the server's '${msg}'`);
    expect(await page.evaluate(() => document.body.innerText.trim().length) > 50, 'blank page');
    await shot(page, 'error');
    return e;
  });

  await check('no_data_message', async () => {
    await page.fill('#query', '');
    await page.selectOption('select#range', 'custom');
    await page.fill('#from', '1000000000');
    await page.fill('#until', '1000000600');
    await page.click('#apply');
    const e = await waitFor(async () => { const t = await visibleError(page); return t && t.includes('No data') ? t : null; }, 'no-data message');
    expect(e.includes('No data in this time range'), `#error '${e}'`);
    await shot(page, 'no-data');
    return e;
  });

  await check('server_unreachable_message', async () => {
    await page.selectOption('select#range', '1h');
    process.kill(Number(SERVER_PID), 'SIGTERM');
    await waitFor(async () => fetch(`${BASE}/healthz`).then(() => false, () => true), 'server down');
    await page.click('#apply');
    const e = await waitFor(async () => { const t = await visibleError(page); return t && t.includes('unreachable') ? t : null; }, 'unreachable message');
    expect(e.includes('Server unreachable'), `#error '${e}'`);
    await shot(page, 'unreachable');
    return e;
  });

  await check('no_console_or_page_errors', async () => {
    expect(consoleErrors.length === 0, consoleErrors.slice(0, 5).join(' || '));
  });
} finally {
  await close();
}
process.exit(0);
