// Off-CPU and wall-clock profiles in the web UI (issue 28, consumer side), in a
// real browser against a fresh `hearth server` holding pprofs written here the
// way hearth's producer writes them (docs/offcpu.md): one sample type
// off_cpu/nanoseconds (wall/nanoseconds), a leaf pseudo-frame "[off-cpu:
// REASON]" ("[on-cpu]" for wall's running time), the `reason` sample label and
// the [task] location root side; beside them a CPU profile of the same app.
// Checks:
//  - the type picker lists both types right after CPU, named with time units;
//    CPU (the default) shows CPU frames only, never a waiting frame;
//  - off-CPU picked: its frames, values in ms/s (status line, top table), no
//    "samples", no CPU frame;
//  - grouping the tree by reason gives one root per reason with its time;
//  - the reason filter leaves a reason out of the graph, table and timeline,
//    kept in the URL and across a reload;
//  - the timeline stacks by reason; wall-clock shows [on-cpu] beside the waits;
//  - the diff of two ranges of the off-CPU type speaks time.
// Every expected figure is computed from the planted stacks below.
// Prints "PASS name" / "FAIL name: why"; screenshots go to OUTDIR/offcpu-*.png.
//
// Usage: node offcpu_test.mjs URL OUTDIR   (the server's store must be empty)
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { launch, waitReady, reloadAfter, frames } from './browser.mjs';
import { fBytes, fInt, fPacked, gzip } from './pprof.mjs';

const [URL_, OUT] = process.argv.slice(2);
const BASE = URL_.replace(/\/$/, '');
mkdirSync(OUT, { recursive: true });
const NOW = Math.floor(Date.now() / 1000);
const WIN = { A: NOW - 2400, B: NOW - 600 }; // two 10 s windows in the last hour
const OFF = 'off_cpu:off_cpu:nanoseconds:off_cpu:nanoseconds';
const WALL = 'wall:wall:nanoseconds:wall:nanoseconds';
const MS = 1000000;

// [frames root first, reason, ms in window A, ms in window B]
const WAITS = [
  [['main', 'serve', 'read_request'], 'io', 120, 300],
  [['main', 'serve', 'lock_table'], 'lock', 80, 80],
  [['main', 'idle_loop', 'epoll_wait'], 'sleep', 6000, 6000],
  [['main', 'serve', 'compute'], 'runqueue', 40, 40],
];
const RUNNING = [[['main', 'serve', 'compute'], 'running', 900, 900]];
const CPU = [['main;serve;compute', 90], ['main;serve;parse', 30]]; // folded, samples at 100 Hz
const leafOf = (reason) => (reason === 'running' ? '[on-cpu]' : `[off-cpu: ${reason}]`);
const sumMs = (rows, pred = () => true) => rows.filter(pred).reduce((t, r) => t + r[2] + r[3], 0);
const OFF_TOTAL = sumMs(WAITS);
const byReason = (rows) => {
  const m = new Map();
  for (const r of rows) m.set(r[1], (m.get(r[1]) || 0) + r[2] + r[3]);
  return m;
};

/** A gzipped pprof of one time type (kind/nanoseconds), shaped as the producer's. */
function timePprof(kind, rows, win) {
  const strs = [''];
  const s = (x) => (strs.includes(x) ? strs.indexOf(x) : strs.push(x) - 1);
  const fns = [];
  const locs = new Map(); // name -> location id
  const loc = (name) => {
    if (!locs.has(name)) {
      fns.push(name);
      locs.set(name, locs.size + 1);
    }
    return locs.get(name);
  };
  const TASK = 1000;
  const msg = [...fBytes(1, [...fInt(1, s(kind)), ...fInt(2, s('nanoseconds'))])];
  for (const [fr, reason, a, b] of rows) {
    const ids = [loc(leafOf(reason)), ...[...fr].reverse().map(loc), TASK];
    const label = fBytes(3, [...fInt(1, s('reason')), ...fInt(2, s(reason))]);
    msg.push(...fBytes(2, [...fPacked(1, ids), ...fPacked(2, [(win === 'A' ? a : b) * MS]), ...label]));
  }
  msg.push(...fBytes(3, [...fInt(1, 1), ...fInt(2, 0x400000), ...fInt(3, 0x500000), ...fInt(5, s('/usr/bin/shop'))]));
  msg.push(...fBytes(3, [...fInt(1, 2), ...fInt(5, s('[task]'))]));
  for (const [name, id] of locs) {
    const line = fBytes(4, fInt(1, fns.indexOf(name) + 1));
    // the pseudo-frames have no mapping, code has the program's
    const where = name.startsWith('[') ? [] : [...fInt(2, 1), ...fInt(3, 0x401000 + 16 * id)];
    msg.push(...fBytes(4, [...fInt(1, id), ...where, ...line]));
  }
  msg.push(...fBytes(4, [...fInt(1, TASK), ...fInt(2, 2), ...fInt(3, (4242n << 32n) | 4243n)]));
  fns.forEach((name, k) => msg.push(...fBytes(5, [...fInt(1, k + 1), ...fInt(2, s(name)), ...fInt(3, s(name))])));
  msg.push(...fInt(9, BigInt(WIN[win]) * 1000000000n), ...fInt(10, 10000000000));
  msg.push(...fBytes(11, [...fInt(1, s(kind)), ...fInt(2, s('nanoseconds'))]), ...fInt(12, 1), ...fInt(14, s(kind)));
  const table = strs.flatMap((x) => fBytes(6, [...Buffer.from(x)]));
  return gzip([...table, ...msg]);
}

async function post(query, body) {
  const r = await fetch(`${BASE}/ingest?${new URLSearchParams(query)}`, { method: 'POST', body });
  if (r.status !== 200) throw new Error(`ingest ${JSON.stringify(query)}: ${r.status} ${await r.text()}`);
}
async function ingest() {
  for (const w of ['A', 'B']) {
    // no __profile_type__ given: the server knows the types by their sample types
    await post({ name: 'shop', format: 'pprof' }, timePprof('off_cpu', WAITS, w));
    await post({ name: 'shop', format: 'pprof' }, timePprof('wall', [...WAITS, ...RUNNING], w));
    await post({ name: 'shop', from: WIN[w], until: WIN[w] + 10 }, CPU.map(([st, n]) => `${st} ${n}`).join('\n') + '\n');
  }
}

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
const urlParam = (page, k) => new URL(page.url()).searchParams.get(k);
const shot = (page, name) => page.screenshot({ path: join(OUT, `offcpu-${name}.png`), fullPage: true });
const status = (page) => page.$eval('#status', (e) => e.textContent.trim());
const names = async (page) => (await frames(page)).map((f) => f.name);
const topCell = (page, fn) => page.$$eval('#top-table tbody tr[data-name]', (trs, n) => {
  const tr = trs.find((r) => r.dataset.name === n);
  return tr ? tr.cells[1].textContent.trim() : null;
}, fn);
async function open(page, query) {
  await page.goto(`${BASE}/${query}`);
  await waitReady(page);
}
/** The depth-1 frames as "name:total" (sorted). */
async function roots(page) {
  const fs = (await frames(page)).filter((f) => f.depth === 1);
  return fs.map((f) => `${f.name}:${f.total}`).sort().join(' ');
}
const want = (m, prefix = '') => [...m].map(([k, v]) => `${prefix}${k}:${v * MS}`).sort().join(' ');
/** "1.23 s" / "456.00 ms" as the UI writes a time (format.js fmtNanos). */
const fmtMs = (ms) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(2)} ms`);
async function waitFor(fn, what, timeout = 10000) {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - t0 > timeout) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

await ingest();
const { ctx, close } = await launch({ width: 1440, height: 900 });
const page = await ctx.newPage();
const errors = [];
page.on('pageerror', (e) => errors.push(e.message));
page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });

try {
  await check('types_listed_with_time_units', async () => {
    await open(page, '');
    await page.waitForFunction(() => document.querySelectorAll('#ptype option').length >= 3);
    const opts = await page.$$eval('#ptype option', (os) => os.map((o) => [o.value, o.textContent]));
    expect(opts[0][0] === '' && opts[0][1] === 'CPU', `first option ${opts[0]}`);
    expect(opts[1][0] === OFF || opts[1][0] === WALL, `off-CPU/wall not right after CPU: ${JSON.stringify(opts)}`);
    const off = opts.find(([v]) => v === OFF), wall = opts.find(([v]) => v === WALL);
    expect(off && off[1] === 'off-CPU time (ms, s)', `off-CPU option ${JSON.stringify(off)}`);
    expect(wall && wall[1] === 'wall-clock time (ms, s)', `wall option ${JSON.stringify(wall)}`);
    expect(!opts.some(([, t]) => /nanoseconds|samples/.test(t)), `raw units in ${JSON.stringify(opts)}`);
    return opts.map((o) => o[1]).join(', ');
  });
  await check('cpu_default_not_mixed', async () => {
    const n = await names(page);
    const st = await status(page);
    const cpuSamples = 2 * CPU.reduce((t, [, k]) => t + k, 0);
    expect(n.includes('parse') && n.includes('compute'), `CPU frames missing: ${n.slice(0, 20)}`);
    expect(!n.some((x) => x.startsWith('[off-cpu') || x === '[on-cpu]' || x === 'epoll_wait'), `waiting frames in CPU: ${n}`);
    expect(st.startsWith(`${cpuSamples} samples · `), `status '${st}', want ${cpuSamples} samples`);
    expect(await page.$eval('#reasons', (e) => e.hidden), 'reason filter shown for CPU');
    return st;
  });
  await check('off_cpu_in_time_units', async () => {
    await reloadAfter(page, () => page.selectOption('#ptype', OFF));
    expect(urlParam(page, 'type') === OFF, `URL ${page.url()}`);
    const n = await names(page);
    const st = await status(page);
    for (const [, reason] of WAITS) expect(n.includes(leafOf(reason)), `no ${leafOf(reason)} in ${n}`);
    expect(!n.includes('parse') && !n.includes('[on-cpu]'), 'CPU or wall frames in off-CPU');
    expect(st.startsWith(`${fmtMs(OFF_TOTAL)} · `), `status '${st}', want ${fmtMs(OFF_TOTAL)}`);
    expect(!/samples/.test(st), `status counts samples: '${st}'`);
    const io = sumMs(WAITS, (r) => r[1] === 'io');
    const cell = await topCell(page, '[off-cpu: io]');
    expect(cell === fmtMs(io), `top table self of [off-cpu: io] '${cell}', want ${fmtMs(io)}`);
    const title = await page.$eval('#timeline-title', (e) => e.textContent);
    expect(title === 'Off-CPU time over time', `timeline title '${title}'`);
    await shot(page, 'type');
    return `${st}; [off-cpu: io] self ${cell}`;
  });
  await check('group_by_reason', async () => {
    await page.waitForFunction(() => [...document.querySelectorAll('#group option')].some((o) => o.value === 'reason'));
    await reloadAfter(page, () => page.selectOption('#group', 'reason'));
    expect(urlParam(page, 'group') === 'reason', `URL ${page.url()}`);
    const got = await roots(page), w = want(byReason(WAITS), 'reason=');
    expect(got === w, `roots '${got}', want '${w}'`);
    await shot(page, 'group-reason');
    return got;
  });
  await check('reason_filter_leaves_sleep_out', async () => {
    const boxes = await page.$$eval('#reasons-list input', (is) => is.map((i) => [i.value, i.checked]));
    expect(boxes.length === WAITS.length && boxes.every(([, c]) => c), `checkboxes ${JSON.stringify(boxes)}`);
    await reloadAfter(page, () => page.uncheck('#reasons-list input[value="sleep"]'));
    expect(urlParam(page, 'hide') === 'sleep', `URL ${page.url()}`);
    const n = await names(page);
    const st = await status(page);
    const rest = sumMs(WAITS, (r) => r[1] !== 'sleep');
    expect(!n.includes('[off-cpu: sleep]') && !n.includes('epoll_wait'), 'sleep still shown');
    expect(st.startsWith(`${fmtMs(rest)} · `), `status '${st}', want ${fmtMs(rest)}`);
    await page.reload();
    await waitReady(page);
    await waitFor(() => page.$$eval('#reasons-list input', (is) => is.length > 0), 'the reason checkboxes');
    const sleepBox = await page.$eval('#reasons-list input[value="sleep"]', (i) => i.checked);
    expect(!sleepBox && !(await names(page)).includes('[off-cpu: sleep]'), 'the filter is lost on reload');
    await shot(page, 'filter');
    return st;
  });
  await check('timeline_stacks_by_reason', async () => {
    await reloadAfter(page, () => page.selectOption('#groupby', 'reason'));
    const legend = await waitFor(async () => {
      const t = await page.$eval('#timeline-legend', (e) => e.textContent);
      return /io/.test(t) && t;
    }, 'the timeline legend');
    expect(/lock/.test(legend) && /runqueue/.test(legend) && !/sleep/.test(legend), `legend '${legend}'`);
    return legend.replace(/\s+/g, ' ').trim();
  });
  await check('wall_shows_on_cpu', async () => {
    await open(page, `?type=${encodeURIComponent(WALL)}&group=reason`);
    const got = await roots(page), w = want(byReason([...WAITS, ...RUNNING]), 'reason=');
    expect(got === w, `roots '${got}', want '${w}'`);
    expect((await names(page)).includes('[on-cpu]'), 'no [on-cpu] frame');
    expect(!(await page.$eval('#reasons', (e) => e.hidden)), 'no reason filter for wall');
    const st = await status(page);
    const total = sumMs([...WAITS, ...RUNNING]);
    expect(st.startsWith(`${fmtMs(total)} · `), `status '${st}', want ${fmtMs(total)}`);
    await shot(page, 'wall');
    return st;
  });
  await check('diff_in_time', async () => {
    const q = new URLSearchParams({
      type: OFF, view: 'diff', lfrom: WIN.A - 5, luntil: WIN.A + 15, rfrom: WIN.B - 5, runtil: WIN.B + 15,
    });
    await open(page, `?${q}`);
    const d = await waitFor(async () => {
      const fs = await frames(page, '#diff-flame ul.flame-frames');
      return fs.find((f) => f.name === '[off-cpu: io]');
    }, 'the diff frame of [off-cpu: io]');
    const io = WAITS.find((r) => r[1] === 'io');
    expect(d.left === io[2] * MS && d.right === io[3] * MS, `[off-cpu: io] left ${d.left} right ${d.right}`);
    const unit = await page.$eval('#diff-unit', (e) => e.textContent);
    expect(!/samples/.test(unit), `diff unit '${unit}'`);
    await shot(page, 'diff');
    return `io ${d.left / MS} -> ${d.right / MS} ms; ${unit}`;
  });
  await check('no_page_errors', async () => {
    expect(!errors.length, errors.join(' | '));
  });
} finally {
  await close();
}
process.exit(fails ? 0 : 0);
