// The web UI's profile-type selector against a `hearth server` that scrapes a
// real Go program (tests/integration/test_ui_types.sh): CPU is the default, the
// scraped memory and goroutine types can be picked, and each shows its own
// frames in its own unit (bytes as MiB, goroutines as a count), never mixed
// with CPU. Checked through the DOM (#ptype, #status, #flame-frames, the top
// table's cells). Prints "PASS name" / "FAIL name: why"; exits 0.
//
// Usage: node types_test.mjs URL OUTDIR
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { launch, waitReady, reloadAfter, frames } from './browser.mjs';

const [URL_, OUT] = process.argv.slice(2);
const BASE = URL_.replace(/\/$/, '');
mkdirSync(OUT, { recursive: true });
const INUSE = 'memory:inuse_space:bytes:space:bytes';
const GOR = 'goroutine:goroutine:count:goroutine:count';

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
const names = async (page) => (await frames(page)).map((f) => f.name);
const status = (page) => page.$eval('#status', (e) => e.textContent.trim());
const topCell = (page, fn) => page.$$eval('#top-table tbody tr[data-name]', (trs, n) => {
  const tr = trs.find((r) => r.dataset.name === n);
  return tr ? tr.cells[1].textContent.trim() : null;
}, fn);

const { ctx, close } = await launch();
const page = await ctx.newPage();
const errors = [];
page.on('pageerror', (e) => errors.push(e.message));
try {
  await check('types_listed_cpu_default', async () => {
    await page.goto(`${BASE}/?from=now-5m`);
    await waitReady(page);
    await page.waitForFunction(() => document.querySelectorAll('#ptype option').length > 2);
    const opts = await page.$$eval('#ptype option', (os) => os.map((o) => [o.value, o.textContent]));
    const value = await page.$eval('#ptype', (s) => s.value);
    expect(value === '', `selected ${value}, want CPU ('')`);
    expect(opts[0][0] === '' && opts[0][1] === 'CPU', `first option ${opts[0]}`);
    expect(opts.some(([v, t]) => v === INUSE && t === 'memory: inuse_space (bytes)'), JSON.stringify(opts));
    expect(opts.some(([v]) => v === GOR), JSON.stringify(opts));
    expect(!opts.some(([v]) => v.startsWith('process_cpu:')), 'CPU types listed apart from "CPU"');
    return opts.map((o) => o[1]).join(', ');
  });
  await check('cpu_default_shows_cpu_only', async () => {
    const n = await names(page);
    const st = await status(page);
    expect(n.includes('main.burnCPU'), `no main.burnCPU in ${n.slice(0, 20)}`);
    expect(!n.includes('main.allocHeap') && !n.includes('main.parkForever'), 'memory or goroutine frames in CPU');
    expect(/^[\d,]+ samples · /.test(st), `status '${st}'`);
    await page.screenshot({ path: join(OUT, 'types-cpu.png') });
    return st;
  });
  await check('memory_type_in_bytes', async () => {
    await reloadAfter(page, () => page.selectOption('#ptype', INUSE));
    expect(new URL(page.url()).searchParams.get('type') === INUSE, `URL ${page.url()}`);
    const n = await names(page);
    const st = await status(page);
    expect(n.includes('main.allocHeap'), `no main.allocHeap in ${n.slice(0, 20)}`);
    expect(!n.includes('main.burnCPU'), 'CPU frames in the memory profile');
    expect(/^\d+(\.\d)? (MiB|GiB) · /.test(st), `status '${st}', want MiB`);
    const cell = await topCell(page, 'main.allocHeap');
    expect(/^\d+(\.\d)? (MiB|GiB)$/.test(cell || ''), `top table self of main.allocHeap '${cell}'`);
    await page.screenshot({ path: join(OUT, 'types-memory.png') });
    return `${st}; main.allocHeap self ${cell}`;
  });
  await check('goroutine_type_counts', async () => {
    await reloadAfter(page, () => page.selectOption('#ptype', GOR));
    const n = await names(page);
    const st = await status(page);
    expect(n.includes('main.parkForever'), `no main.parkForever in ${n.slice(0, 20)}`);
    expect(/^[\d,]+ goroutine · /.test(st), `status '${st}'`);
    return st;
  });
  await check('type_survives_reload_and_back', async () => {
    await page.reload();
    await waitReady(page);
    await page.waitForFunction(() => document.querySelector('#ptype').value !== '');
    expect(await page.$eval('#ptype', (s) => s.value) === GOR, 'type lost on reload');
    await reloadAfter(page, () => page.goBack());
    const v = await page.$eval('#ptype', (s) => s.value);
    expect(v === INUSE, `after back: ${v}`);
    expect((await names(page)).includes('main.allocHeap'), 'memory frames after back');
  });
  await check('no_page_errors', async () => {
    expect(!errors.length, errors.join(' | '));
  });
} finally {
  await close();
}
