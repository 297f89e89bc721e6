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
  await page.screenshot({ path: join(OUT, 'live.png') });
  console.log(errors.length ? `FAIL live_no_console_errors: ${errors.slice(0, 3).join(' || ')}` : 'PASS live_no_console_errors');
} finally {
  await close();
}
