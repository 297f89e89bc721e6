// The web UI against `hearth run` profiling this machine: with a busy workload
// running, the flame graph of its process shows the workload's functions.
// Prints PASS/FAIL lines. Usage: node live_test.mjs URL PROCESS OUTDIR FUNC...
import { join } from 'node:path';
import { launch, waitReady, frames } from './browser.mjs';

const [URL_, proc, OUT, ...funcs] = process.argv.slice(2);
const { ctx, close } = await launch();
const errors = [];
try {
  const page = await ctx.newPage();
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  const q = new URLSearchParams({ query: `{process="${proc}"}`, range: '5m', from: 'now-5m', until: 'now' });
  await page.goto(`${URL_}/?${q}`);
  try {
    await waitReady(page, 30000);
    const names = new Set((await frames(page)).map((f) => f.name));
    const missing = funcs.filter((f) => ![...names].some((n) => n === f || n.startsWith(`${f}_[`)));
    const err = await page.evaluate(() => { const e = document.getElementById('error'); return e && !e.hidden ? e.textContent : ''; });
    if (missing.length === 0 && !err) console.log(`PASS live_flame_shows_workload (${names.size} frames)`);
    else console.log(`FAIL live_flame_shows_workload: missing ${missing.join(', ')}; error '${err}'; frames ${[...names].slice(0, 20).join(', ')}`);
    const main = (await frames(page)).find((f) => f.depth === 0);
    const status = await page.textContent('#status');
    console.log(main && main.total > 0 && /samples/.test(status)
      ? `PASS live_status (${status.trim()})` : `FAIL live_status: '${status}'`);
  } catch (e) {
    console.log(`FAIL live_flame_shows_workload: ${e.message.split('\n')[0]}`);
  }
  // The workload's known split (tests/workloads/split.c): 6:3:1 iterations in
  // split_hot_a, split_hot_b and lib_hot_c; their shares of the process, loosely.
  try {
    const rows = await page.$$eval('#top-table tbody tr[data-name]', (trs) =>
      trs.map((tr) => ({ name: tr.dataset.name, self: Number(tr.dataset.self) })));
    const all = rows.reduce((t, r) => t + r.self, 0);
    const share = (n) => { const r = rows.find((x) => x.name === n); return r ? 100 * r.self / all : 0; };
    const a = share('split_hot_a'), b = share('split_hot_b');
    console.log(a > 40 && a < 75 && b > 18 && b < 42 && a > b
      ? `PASS live_table_split (split_hot_a ${a.toFixed(0)}%, split_hot_b ${b.toFixed(0)}% of self)`
      : `FAIL live_table_split: split_hot_a ${a.toFixed(1)}%, split_hot_b ${b.toFixed(1)}% (want ~60 and ~30)`);
    await page.fill('#search', 'split_hot');
    await page.press('#search', 'Enter');
    await page.waitForFunction(() => /Matched/.test(document.getElementById('search-share').textContent), null, { timeout: 10000 });
    const txt = (await page.textContent('#search-share')).trim();
    const pct = Number((/([\d.]+)%/.exec(txt) || [])[1]);
    console.log(pct > 70 && pct < 99 ? `PASS live_search_share (${txt})` : `FAIL live_search_share: '${txt}' (want ~90%)`);
    await page.fill('#search', '');
    await page.press('#search', 'Enter');
    await page.click('#top-table tbody tr[data-name="split_hot_a"]');
    await page.click('button[data-view="sandwich"]');
    await page.waitForFunction(() => document.querySelectorAll('#sandwich-callers ul.flame-frames li').length > 0, null, { timeout: 10000 });
    const callers = new Set((await frames(page, '#sandwich-callers ul.flame-frames')).map((f) => f.name));
    console.log(callers.has('split_round') && callers.has('main')
      ? `PASS live_sandwich_callers (${[...callers].join(', ')})`
      : `FAIL live_sandwich_callers: ${[...callers].join(', ')} (want split_round and main)`);
    await page.click('button[data-view="flame"]');
  } catch (e) {
    console.log(`FAIL live_views: ${e.message.split('\n')[0]}`);
  }
  // Timeline stacked by process: the workload's series carries its samples.
  try {
    await page.selectOption('select#groupby', 'process');
    const g = await page.waitForFunction((p) => {
      const s = document.querySelector(`#timeline-legend [data-group="${p}"]`);
      return s && Number(s.dataset.total) > 0 && s.dataset.total;
    }, proc, { timeout: 10000 }).then((h) => h.jsonValue());
    console.log(`PASS live_timeline_grouped (${proc}: ${g} samples)`);
  } catch (e) {
    console.log(`FAIL live_timeline_grouped: ${e.message.split('\n')[0]}`);
  }
  // Diff of the workload against itself over two halves of the last minutes: both
  // sides have its hot functions, and every change is small (the split is steady).
  try {
    // The workload's samples span [t0, t1] (from the timeline API, 1 s steps); wait
    // until that is 10 s long, then compare its last two 4 s slices (the first
    // seconds of a run can hold only start-up frames).
    const sel = `{process="${proc}"}`;
    let t0 = 0, t1 = 0;
    for (let tries = 0; tries < 40 && t1 - t0 < 10; tries++) {
      if (tries) await page.waitForTimeout(1000);
      const q = new URLSearchParams({ query: sel, from: 'now-5m', until: 'now', step: '1s' });
      const tl = await (await fetch(`${URL_}/api/timeline?${q}`)).json();
      const v = (tl.groups[0] || { values: [] }).values;
      const nz = v.map((x, i) => (x ? i : -1)).filter((i) => i >= 0);
      if (nz.length) {
        t0 = Math.floor((tl.from + nz[0] * tl.step) / 1000);
        t1 = Math.ceil((tl.from + (nz[nz.length - 1] + 1) * tl.step) / 1000);
      }
    }
    const mid = t1 - 4;
    await page.click('button[data-view="diff"]');
    await page.fill('#lquery', sel);
    await page.fill('#lfrom', String(mid - 4));
    await page.fill('#luntil', String(mid));
    await page.fill('#rquery', sel);
    await page.fill('#rfrom', String(mid));
    await page.fill('#runtil', String(t1 + 1));
    await page.click('#diff-apply');
    const rows = await page.waitForFunction(() => {
      const r = [...document.querySelectorAll('#diff-table tbody tr[data-name]')];
      return r.length && r.map((tr) => ({ name: tr.dataset.name, left: Number(tr.dataset.left),
        right: Number(tr.dataset.right), delta: Number(tr.dataset.delta) }));
    }, null, { timeout: 15000 }).then((h) => h.jsonValue());
    const a = rows.find((r) => r.name === 'split_hot_a');
    console.log(a && a.left > 0 && a.right > 0 && Math.abs(a.delta) < 25
      ? `PASS live_diff (split_hot_a ${a.left} -> ${a.right}, ${a.delta.toFixed(1)} pp)`
      : `FAIL live_diff: split_hot_a ${JSON.stringify(a)} in ${rows.length} rows`);
    await page.click('button[data-view="flame"]');
  } catch (e) {
    console.log(`FAIL live_diff: ${e.message.split('\n')[0]}`);
  }
  await page.screenshot({ path: join(OUT, 'live.png') });
  console.log(errors.length ? `FAIL live_no_console_errors: ${errors.slice(0, 3).join(' || ')}` : 'PASS live_no_console_errors');
} finally {
  await close();
}
