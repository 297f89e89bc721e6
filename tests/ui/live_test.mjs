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
  // split_hot_a, split_hot_b and lib_hot_c, whose measured CPU shares stay within
  // a point of 60/30/10 (test_record_split compares them with split's own clocks).
  // Here the shares of the process's samples in the table must be within 4
  // binomial standard deviations of that sample count, plus that point.
  const tol = (p, n) => 400 * Math.sqrt((p / 100) * (1 - p / 100) / n) + 1;
  try {
    const rows = await page.$$eval('#top-table tbody tr[data-name]', (trs) =>
      trs.map((tr) => ({ name: tr.dataset.name, self: Number(tr.dataset.self) })));
    const all = rows.reduce((t, r) => t + r.self, 0);
    const share = (n) => { const r = rows.find((x) => x.name === n); return r ? 100 * r.self / all : 0; };
    const a = share('split_hot_a'), b = share('split_hot_b');
    const ta = tol(60, all), tb = tol(30, all);
    console.log(all >= 100 && Math.abs(a - 60) <= ta && Math.abs(b - 30) <= tb
      ? `PASS live_table_split (split_hot_a ${a.toFixed(0)}%, split_hot_b ${b.toFixed(0)}% of ${all} samples' self, within ±${ta.toFixed(1)} and ±${tb.toFixed(1)})`
      : `FAIL live_table_split: split_hot_a ${a.toFixed(1)}%, split_hot_b ${b.toFixed(1)}% of ${all} samples (want >= 100 samples, 60 ± ${ta.toFixed(1)} and 30 ± ${tb.toFixed(1)})`);
    await page.fill('#search', 'split_hot');
    await page.press('#search', 'Enter');
    await page.waitForFunction(() => /Matched/.test(document.getElementById('search-share').textContent), null, { timeout: 10000 });
    const txt = (await page.textContent('#search-share')).trim();
    const pct = Number((/([\d.]+)%/.exec(txt) || [])[1]);
    const ts = tol(90, all);
    console.log(Math.abs(pct - 90) <= ts ? `PASS live_search_share (${txt}, within ±${ts.toFixed(1)} of 90%)`
      : `FAIL live_search_share: '${txt}' (want 90 ± ${ts.toFixed(1)}% of ${all} samples)`);
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
    // The seconds that hold the workload's samples (timeline API, 1 s steps):
    // waited for until there are 8 of them and they span 10 s (the first seconds
    // of a run can hold only start-up frames); the left side is the 4 such
    // seconds before the last 4, the right side the last 4. Each side holds
    // samples by construction: a loaded machine may leave a second without a
    // profile, and a window of wall time would then compare nothing.
    const sel = `{process="${proc}"}`;
    let secs = [];
    for (let tries = 0; tries < 40 && (secs.length < 8 || secs[secs.length - 1] - secs[0] < 10); tries++) {
      if (tries) await page.waitForTimeout(1000);
      const q = new URLSearchParams({ query: sel, from: 'now-5m', until: 'now', step: '1s' });
      const tl = await (await fetch(`${URL_}/api/timeline?${q}`)).json();
      const v = (tl.groups[0] || { values: [] }).values;
      secs = v.map((x, i) => (x ? Math.floor((tl.from + i * tl.step) / 1000) : -1)).filter((t) => t >= 0);
    }
    if (secs.length < 8) throw new Error(`only ${secs.length} seconds with samples of ${proc} in 40 s`);
    const n = secs.length;
    await page.click('button[data-view="diff"]');
    await page.fill('#lquery', sel);
    await page.fill('#lfrom', String(secs[n - 8]));
    await page.fill('#luntil', String(secs[n - 4]));
    await page.fill('#rquery', sel);
    await page.fill('#rfrom', String(secs[n - 4]));
    await page.fill('#runtil', String(secs[n - 1] + 1));
    await page.click('#diff-apply');
    // the table of these ranges: the diff the view opened with (its default ranges)
    // may answer later and must not be what is read
    const want = `${secs[n - 8]}..${secs[n - 4]} ${secs[n - 4]}..${secs[n - 1] + 1}`;
    const rows = await page.waitForFunction((w) => {
      if (document.querySelector('#diff-table').dataset.ranges !== w) return false;
      const r = [...document.querySelectorAll('#diff-table tbody tr[data-name]')];
      return r.length && r.map((tr) => ({ name: tr.dataset.name, left: Number(tr.dataset.left),
        right: Number(tr.dataset.right), delta: Number(tr.dataset.delta) }));
    }, want, { timeout: 15000 }).then((h) => h.jsonValue());
    const a = rows.find((r) => r.name === 'split_hot_a');
    console.log(a && a.left > 0 && a.right > 0 && Math.abs(a.delta) < 25
      ? `PASS live_diff (split_hot_a ${a.left} -> ${a.right}, ${a.delta.toFixed(1)} pp)`
      : `FAIL live_diff: split_hot_a ${JSON.stringify(a)} in ${rows.length} rows; left ${secs[n - 8]}-${secs[n - 4]}, right ${secs[n - 4]}-${secs[n - 1] + 1}, seconds with samples ${secs.slice(-12).join(',')}`);
    await page.click('button[data-view="flame"]');
  } catch (e) {
    console.log(`FAIL live_diff: ${e.message.split('\n')[0]}`);
  }
  await page.screenshot({ path: join(OUT, 'live.png') });
  console.log(errors.length ? `FAIL live_no_console_errors: ${errors.slice(0, 3).join(' || ')}` : 'PASS live_no_console_errors');
} finally {
  await close();
}
