// The noise-aware views in a real browser against a real `hearth server` holding
// changes_fixture.mjs (one function, slow_path, costs more after a known moment;
// everything else costs the same): the diff colours only what is beyond noise and
// says what "within noise" means, its normalisation is a control that reaches the
// request and the URL, a function's line over time is drawn on request, and
// "What changed" lists slow_path and nothing else, or explains an empty baseline.
// Checked through the DOM (ids, data-* attributes, the diff graph's frame list),
// never pixels. Prints "PASS name" / "FAIL name: why"; exits 0. Screenshots go
// to OUTDIR (changes-*.png).
//
// Usage: node changes_test.mjs URL OUTDIR   (a fresh server: the fixture is ingested here)
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { launch, waitReady, reloadAfter, frames } from './browser.mjs';
import * as fx from './changes_fixture.mjs';

const [URL_, OUT] = process.argv.slice(2);
const BASE = URL_.replace(/\/$/, '');
mkdirSync(OUT, { recursive: true });
const NOW = Math.floor(Date.now() / 1000);
const T = fx.times(NOW);
const NEUTRAL = 'hsl(220, 10%, 88%)'; // colors.js: the diff palette's "same / within noise"

async function check(name, fn) {
  try {
    const note = await fn();
    console.log(`PASS ${name}${note ? ` (${note})` : ''}`);
  } catch (e) {
    console.log(`FAIL ${name}: ${String(e && e.message || e).split('\n').slice(0, 3).join(' | ')}`);
  }
}
function expect(cond, msg) {
  if (!cond) throw new Error(msg);
}
async function waitFor(fn, what, timeout = 10000) {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - t0 > timeout) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
const urlParam = (page, k) => new URL(page.url()).searchParams.get(k);
const reqParam = (req, k) => new URL(req.url()).searchParams.get(k);
const shot = (page, name) => page.screenshot({ path: join(OUT, `${name}.png`), fullPage: true });
const visibleError = (page) => page.evaluate(() => {
  const e = document.getElementById('error');
  return e && !e.hidden ? e.textContent.trim() : null;
});
const rows = (page, sel) => page.$$eval(`${sel} tbody tr[data-name]`, (trs) => trs.map((tr) => ({
  name: tr.dataset.name, verdict: tr.dataset.verdict, change: Number(tr.dataset.change),
  low: Number(tr.dataset.low), high: Number(tr.dataset.high), before: Number(tr.dataset.before),
  after: Number(tr.dataset.after), coloured: tr.querySelectorAll('td.pos, td.neg').length > 0,
  spark: (() => {
    const s = tr.querySelector('svg.spark');
    return s ? { points: Number(s.dataset.points), sum: Number(s.dataset.sum) } : null;
  })(),
})));
const diffFrames = async (page) => (await page.$$eval('#diff-flame ul.flame-frames li', (lis) =>
  lis.map((li) => ({ name: li.dataset.name, verdict: li.dataset.verdict, fill: li.dataset.fill }))));
// One API answer, fetched as the page would (the test compares the page with it).
const api = async (path, params) => {
  const r = await fetch(`${BASE}${path}?${new URLSearchParams(params)}`);
  const body = await r.json();
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${body.error || ''}`);
  return body;
};
// page.waitForRequest whose rejection (a check that failed before awaiting it) is
// never left unhandled: the check's own error is the one reported.
function requestOf(pg, pred, opts) {
  const p = pg.waitForRequest(pred, opts);
  p.catch(() => {});
  return p;
}
const ratio = fx.SLOW.after / fx.SLOW.before;
// The server prints its statistics with 6 significant digits: a ratio of two of
// them is good to about 1e-5.
const near = (a, b, rel = 1e-6) => Math.abs(a - b) <= rel * Math.max(1, Math.abs(b));

await fx.ingest(BASE, NOW);
const SEL = `${fx.APP}{env="prod"}`;
const RANGE = `query=${encodeURIComponent(SEL)}&from=${T.from}&until=${T.until}`;

const { ctx, close } = await launch();
const page = await ctx.newPage();
const consoleErrors = [];
page.on('console', (m) => {
  if (m.type() === 'error') consoleErrors.push(m.text());
});
page.on('pageerror', (e) => consoleErrors.push(`page error: ${e.message}`));

try {
  await check('server_has_the_endpoints', async () => {
    // What the views below need of the server (docs/api.md): said once, plainly.
    const q = { query: SEL, from: T.from, until: T.until };
    const missing = [];
    for (const [path, params] of [['/api/function-series', { ...q, function: fx.PLANTED }], ['/api/regressions', q]]) {
      const r = await fetch(`${BASE}${path}?${new URLSearchParams(params)}`);
      if (r.status !== 200) missing.push(`${path} answers ${r.status}`);
    }
    const d = await api('/api/diff', { left: SEL, right: SEL, leftfrom: T.baselineFrom, leftuntil: T.from, rightfrom: T.from, rightuntil: T.until });
    if (!d.significance) missing.push('/api/diff has no significance');
    expect(!missing.length, missing.join('; '));
  });

  await check('diff_explains_within_noise', async () => {
    const req = requestOf(page, (r) => r.url().includes('/api/diff'), { timeout: 20000 });
    await page.goto(`${BASE}/?${RANGE}&view=diff`);
    const r = await req;
    await waitReady(page);
    expect(reqParam(r, 'normalize') === 'share', `first diff request normalize=${reqParam(r, 'normalize')}, want share (explicit)`);
    expect(reqParam(r, 'leftfrom') === String(T.baselineFrom) && reqParam(r, 'rightuntil') === String(T.until),
      `sides ${reqParam(r, 'leftfrom')}..${reqParam(r, 'leftuntil')} ${reqParam(r, 'rightfrom')}..${reqParam(r, 'rightuntil')}`);
    const ans = await api('/api/diff', Object.fromEntries(new URL(r.url()).searchParams));
    expect(ans.significance && ans.significance.note, `the server's diff has no significance.note: ${JSON.stringify(ans.significance)}`);
    const note = await page.$eval('#diff-note', (e) => (e.hidden ? '' : e.textContent.trim()));
    const conf = `${Number((100 * ans.significance.confidence).toFixed(2))}%`;
    expect(note.includes(ans.significance.note), `#diff-note '${note}' lacks the server's note '${ans.significance.note}'`);
    expect(note.includes(conf) && /within noise/i.test(note), `#diff-note '${note}' does not say what within noise means at ${conf}`);
    expect(await visibleError(page) === null, `error shown: ${await visibleError(page)}`);
    return note.slice(0, 160);
  });

  await check('normalisation_control_sets_request_and_url', async () => {
    expect(await page.inputValue('#normalize') === 'share', `#normalize ${await page.inputValue('#normalize')}`);
    const req = requestOf(page, (r) => r.url().includes('/api/diff') && reqParam(r, 'normalize') === 'rate',
      { timeout: 10000 });
    await reloadAfter(page, () => page.selectOption('#normalize', 'rate'));
    await req;
    expect(urlParam(page, 'normalize') === 'rate', `URL normalize=${urlParam(page, 'normalize')}`);
    const note = await page.textContent('#diff-note');
    expect(/per second/i.test(note), `#diff-note after rate: '${note}'`);
    // The URL keeps it: a reload asks for the same normalisation.
    const again = requestOf(page, (r) => r.url().includes('/api/diff'), { timeout: 20000 });
    await page.reload();
    const r2 = await again;
    await waitReady(page);
    expect(reqParam(r2, 'normalize') === 'rate', `after reload normalize=${reqParam(r2, 'normalize')}`);
    expect(await page.inputValue('#normalize') === 'rate', 'control lost its value on reload');
  });

  await check('diff_colours_only_the_changed_function', async () => {
    // Time per second: slow_path is the only function whose cost changed.
    const tr = await waitFor(async () => { const r = await rows(page, '#diff-table'); return r.length ? r : null; }, 'diff rows');
    const sig = tr.filter((r) => r.verdict !== 'noise');
    expect(sig.length === 1 && sig[0].name === fx.PLANTED && sig[0].verdict === 'up',
      `rows beyond noise: ${sig.map((r) => `${r.name}:${r.verdict}`).join(', ') || 'none'}`);
    expect(tr[0].name === fx.PLANTED, `first row ${tr[0].name}, want ${fx.PLANTED}`);
    const s = sig[0];
    expect(near(s.after / s.before, ratio, 1e-4), `slow_path after/before ${s.after}/${s.before}, want ratio ${ratio}`);
    expect(s.low > 0 && s.low <= s.change && s.change <= s.high, `interval ${s.low}..${s.high} around ${s.change}`);
    const colouredRows = tr.filter((r) => r.coloured).map((r) => r.name);
    expect(colouredRows.join() === fx.PLANTED, `coloured rows: ${colouredRows.join(', ')}`);
    const missing = fx.leaves().filter((n) => !tr.some((r) => r.name === n));
    expect(!missing.length, `rows missing: ${missing.join(', ')}`);
    const fs = await diffFrames(page);
    const colouredFrames = [...new Set(fs.filter((f) => f.fill !== NEUTRAL).map((f) => f.name))];
    expect(colouredFrames.join() === fx.PLANTED, `coloured frames: ${colouredFrames.join(', ')}; fills ${[...new Set(fs.map((f) => f.fill))]}`);
    const judged = fs.filter((f) => f.name !== 'all' && f.verdict !== 'noise').map((f) => `${f.name}:${f.verdict}`);
    expect(judged.join() === `${fx.PLANTED}:up`, `frames beyond noise: ${judged.join(', ')}`);
    const scale = await page.textContent('#diff-scale');
    expect(/within noise/.test(scale), `legend '${scale}'`);
    await shot(page, 'changes-diff');
    return `${fx.PLANTED} ${s.before.toPrecision(4)} → ${s.after.toPrecision(4)}, ${tr.length - 1} rows within noise`;
  });

  await check('diff_sorts_significant_first', async () => {
    // Share of the total (the default): whatever else the server calls significant,
    // those rows come first, largest change first, and slow_path is up among them.
    await reloadAfter(page, () => page.selectOption('#normalize', 'share'));
    const tr = await rows(page, '#diff-table');
    const firstNoise = tr.findIndex((r) => r.verdict === 'noise');
    const sig = firstNoise < 0 ? tr : tr.slice(0, firstNoise);
    expect(tr.slice(sig.length).every((r) => r.verdict === 'noise'), `a significant row after a noise row: ${tr.map((r) => r.verdict)}`);
    const mags = sig.map((r) => Math.abs(r.change));
    expect(mags.every((m, i) => i === 0 || mags[i - 1] >= m), `significant rows not largest first: ${mags}`);
    const p = tr.find((r) => r.name === fx.PLANTED);
    expect(p && p.verdict === 'up', `${fx.PLANTED} in share: ${p && p.verdict}`);
    return `${sig.length} beyond noise: ${sig.map((r) => r.name).join(', ')}`;
  });

  await check('clicking_a_function_draws_its_series', async () => {
    await page.click('button[data-view="flame"]'); // nothing to load: the profile is there
    const req = requestOf(page, (r) => r.url().includes('/api/function-series') &&
      reqParam(r, 'function') === fx.PLANTED, { timeout: 10000 });
    await page.click(`#top-table tbody tr[data-name="${fx.PLANTED}"] button.series-btn`);
    const r = await req;
    expect(reqParam(r, 'from') === String(T.from) && reqParam(r, 'until') === String(T.until) &&
      reqParam(r, 'query').includes(fx.APP), `series request ${r.url()}`);
    const svg = await waitFor(() => page.$eval('#series-chart', (el) => {
      const s = el.querySelector('svg');
      return s && s.dataset.function ? { ...s.dataset } : null;
    }).catch(() => null), 'the series svg');
    const after = fx.sideSum('after');
    expect(svg.function === fx.PLANTED && svg.kind === 'total' && svg.normalize === 'value', `svg ${JSON.stringify(svg)}`);
    expect(Number(svg.points) >= 2, `${svg.points} points`);
    expect(near(Number(svg.sum), fx.selfOf('after', fx.PLANTED)), `line sums to ${svg.sum}, want ${fx.selfOf('after', fx.PLANTED)}`);
    expect(near(Number(svg.totalSum), after), `total line sums to ${svg.totalSum}, want ${after}`);
    const lines = await page.$$eval('#series-chart polyline', (ps) => ps.map((p) => `${p.classList}:${p.getAttribute('points').split(' ').length}`));
    expect(lines.length === 2 && lines.every((l) => l.endsWith(`:${svg.points}`)), `polylines ${lines}`);
    expect(urlParam(page, 'series') === fx.PLANTED, `URL series=${urlParam(page, 'series')}`);
    await shot(page, 'changes-series');
    return `${svg.points} points, ${svg.sum} of ${svg.totalSum}`;
  });

  await check('right_click_frame_draws_series_without_zoom', async () => {
    const crumbs = () => page.$$eval('#breadcrumbs button', (bs) => bs.map((b) => b.textContent.trim()).join('>'));
    const before = await crumbs();
    const f = (await frames(page)).find((x) => x.name === 'parse_request');
    expect(f, 'no parse_request frame');
    await page.locator('#flame canvas').scrollIntoViewIfNeeded();
    const req = requestOf(page, (r) => r.url().includes('/api/function-series') &&
      reqParam(r, 'function') === 'parse_request', { timeout: 10000 });
    const box = await page.locator('#flame canvas').boundingBox();
    await page.mouse.click(box.x + f.x + f.w / 2, box.y + f.y + f.h / 2, { button: 'right' });
    await req;
    await waitFor(() => page.$eval('#series-chart svg', (s) => s.dataset.function === 'parse_request').catch(() => false),
      'the series of parse_request');
    expect(await crumbs() === before, `a right-click zoomed: ${await crumbs()} (was ${before})`);
    const want = fx.sideSum('after', (fs) => fs.includes('parse_request'));
    const sum = Number(await page.$eval('#series-chart svg', (s) => s.dataset.sum));
    expect(near(sum, want), `parse_request line sums to ${sum}, want ${want}`);
  });

  await check('series_share_control', async () => {
    const req = requestOf(page, (r) => r.url().includes('/api/function-series') &&
      reqParam(r, 'normalize') === 'share', { timeout: 10000 });
    await page.selectOption('#series-normalize', 'share');
    await req;
    const svg = await waitFor(() => page.$eval('#series-chart svg', (s) => (s.dataset.normalize === 'share'
      ? { ...s.dataset } : null)).catch(() => null), 'the share series');
    // Every step with data holds parse_request's share of that step: between 0 and 100 %.
    const max = await page.$eval('#series-chart text.max', (t) => t.textContent);
    expect(/%$/.test(max) && parseFloat(max) > 0 && parseFloat(max) <= 100, `share axis '${max}'`);
    expect(urlParam(page, 'seriesNorm') === 'share', `URL seriesNorm=${urlParam(page, 'seriesNorm')}`);
    // The profile's own unit is untouched: the table still counts samples.
    await page.selectOption('#series-normalize', 'value');
    await waitFor(() => page.$eval('#series-chart svg', (s) => s.dataset.normalize === 'value').catch(() => false), 'value again');
    const st = await page.textContent('#status');
    expect(/samples/.test(st), `#status '${st}'`);
    return `${svg.points} points, top ${max}`;
  });

  await check('regressions_list_only_the_planted_function', async () => {
    const req = requestOf(page, (r) => r.url().includes('/api/regressions'), { timeout: 10000 });
    await reloadAfter(page, () => page.click('button[data-view="changes"]'));
    const r = await req;
    expect(reqParam(r, 'baseline') === 'previous' && reqParam(r, 'from') === String(T.from) &&
      reqParam(r, 'until') === String(T.until), `regressions request ${r.url()}`);
    expect(urlParam(page, 'view') === 'changes', `URL view=${urlParam(page, 'view')}`);
    const tr = await rows(page, '#changes-table');
    expect(tr.map((x) => x.name).join() === fx.PLANTED, `listed: ${tr.map((x) => `${x.name}:${x.verdict}`).join(', ') || 'nothing'}`);
    const s = tr[0];
    expect(s.verdict === 'up' && near(s.after / s.before, ratio, 1e-4), `${fx.PLANTED} ${s.before} → ${s.after}, want ×${ratio}`);
    expect(s.low > 0 && s.low <= s.change && s.change <= s.high, `interval ${s.low}..${s.high} around ${s.change}`);
    expect(s.spark && s.spark.points >= 2 && s.spark.sum > 0, `sparkline ${JSON.stringify(s.spark)}`);
    const note = await page.$eval('#changes-note', (e) => (e.hidden ? '' : e.textContent.trim()));
    expect(note.length > 0, 'no note above the list');
    expect(await page.$eval('#changes-empty', (e) => e.hidden), 'an empty-list message beside a listed function');
    expect(await visibleError(page) === null, `error shown: ${await visibleError(page)}`);
    await shot(page, 'changes-regressions');
    return `${s.name} ${s.before.toPrecision(4)} → ${s.after.toPrecision(4)} (${s.low.toPrecision(3)} … ${s.high.toPrecision(3)})`;
  });

  await check('regressions_row_draws_series', async () => {
    const req = requestOf(page, (r) => r.url().includes('/api/function-series') &&
      reqParam(r, 'function') === fx.PLANTED && reqParam(r, 'kind') === 'self', { timeout: 10000 });
    await page.click(`#changes-table tbody tr[data-name="${fx.PLANTED}"] td.num`, { timeout: 10000 });
    await req;
    const svg = await waitFor(() => page.$eval('#series-chart svg', (s, fn) => (s.dataset.function === fn &&
      s.dataset.kind === 'self' ? { ...s.dataset } : null), fx.PLANTED).catch(() => null), 'the self series of slow_path');
    expect(near(Number(svg.sum), fx.selfOf('after', fx.PLANTED)), `self line sums to ${svg.sum}`);
  });

  await check('regressions_empty_baseline_explained', async () => {
    const req = requestOf(page, (r) => r.url().includes('/api/regressions') && reqParam(r, 'baseline') === '7d',
      { timeout: 10000 });
    await reloadAfter(page, () => page.selectOption('#baseline', '7d'));
    await req;
    expect(urlParam(page, 'baseline') === '7d', `URL baseline=${urlParam(page, 'baseline')}`);
    const msg = await waitFor(() => page.$eval('#changes-empty', (e) => (e.hidden ? null : {
      text: e.textContent.trim(), reason: e.dataset.reason,
    })), 'the empty-baseline explanation');
    expect(msg.reason === 'baseline-empty' && /baseline/i.test(msg.text) && /no data/i.test(msg.text), `message ${JSON.stringify(msg)}`);
    expect((await rows(page, '#changes-table')).length === 0, 'rows listed against an empty baseline');
    expect(await visibleError(page) === null, `an error banner for an empty baseline: ${await visibleError(page)}`);
    await shot(page, 'changes-empty-baseline');
    return msg.text;
  });

  await check('no_console_or_page_errors', async () => {
    expect(consoleErrors.length === 0, consoleErrors.slice(0, 5).join(' || '));
  });
} finally {
  await close();
}
process.exit(0);
