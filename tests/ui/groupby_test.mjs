// Processes apart and unnamed code in the UI (issue 30, items 1 and 8, and the
// diff's range boxes of item 7), in a real browser against a fresh `hearth
// server` holding agent-shaped pprofs written here (pprof.mjs): two processes,
// xz and python3.12, whose stacks both start `_start;__libc_start_main`, each
// stack ending root-side with its task location (pid << 32 | tid, as the agent
// sends it, tests/clients/task_pprof.py), and xz's hot code in liblzma without
// symbols at two addresses. Checks:
//  - the whole machine (no selector) is grouped by process by default: roots
//    process=xz and process=python3.12, coloured, in tooltips and breadcrumbs as
//    groups, each `_start` with its own module;
//  - "group by" none turns it off (kept in the URL), pid and tid group by task;
//    a selector is not grouped unless asked;
//  - unnamed code is one frame per object ("liblzma.so.5.4.1 [no symbols]"), and
//    per address when asked (kept in the URL), in the graph and the table;
//  - the diff is grouped as the flame graph, in both of its views;
//  - the diff's six boxes show fixed times as local dates, read dates typed in
//    them, keep unix seconds in the URL and outline a bad time.
// Prints "PASS name" / "FAIL name: why" per check; screenshots go to OUTDIR/groupby-*.png.
//
// Usage: node groupby_test.mjs URL OUTDIR   (the server's store must be empty)
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { launch, waitReady, reloadAfter, frames, clickFrame } from './browser.mjs';
import { encodePprof } from './pprof.mjs';

const [URL_, OUT] = process.argv.slice(2);
const BASE = URL_.replace(/\/$/, '');
mkdirSync(OUT, { recursive: true });
const NOW = Math.floor(Date.now() / 1000);
// Two 10 s windows: A 40 minutes ago, B 10 minutes ago (both in the last hour).
const WIN = { A: NOW - 2400, B: NOW - 600 };

// ---- the planted data: what each check expects is computed from it ----
const LZMA = '/usr/lib/x86_64-linux-gnu/liblzma.so.5.4.1';
const MAPS = [
  { id: 1, file: '[task]' },
  { id: 2, file: LZMA, start: 0x7f0000000000, limit: 0x7f0000100000 },
  { id: 3, file: '/usr/bin/xz', start: 0x400000, limit: 0x500000 },
  { id: 4, file: '/usr/bin/python3.12', start: 0x600000, limit: 0x700000 },
  { id: 5, file: '/usr/lib/x86_64-linux-gnu/libc.so.6', start: 0x7e0000000000, limit: 0x7e0000100000 },
];
const task = (pid, tid) => (BigInt(pid) << 32n) | BigInt(tid);
const LOCS = [
  { id: 1, mapping: 3, address: 0x401000, fn: '_start' },
  { id: 2, mapping: 5, address: 0x7e0000001000, fn: '__libc_start_main' },
  { id: 3, mapping: 3, address: 0x402000, fn: 'main' },
  // unnamed, as src/collect names them: OBJECT+0xOFFSET
  { id: 4, mapping: 2, address: 0x7f0000003ac0, fn: 'liblzma.so.5.4.1+0x3ac0' },
  { id: 5, mapping: 2, address: 0x7f0000003b00, fn: 'liblzma.so.5.4.1+0x3b00' },
  { id: 6, mapping: 3, address: 0x403000, fn: 'compress' },
  { id: 7, mapping: 4, address: 0x601000, fn: '_start' },
  { id: 8, mapping: 4, address: 0x602000, fn: 'Py_Main' },
  { id: 9, mapping: 4, address: 0x603000, fn: 'eval' },
  { id: 20, mapping: 1, address: task(300, 300), fn: null },
  { id: 21, mapping: 1, address: task(400, 401), fn: null },
  { id: 22, mapping: 1, address: task(400, 402), fn: null },
];
const NAME = Object.fromEntries(LOCS.filter((l) => l.fn).map((l) => [l.id, l.fn]));
// [locations leaf first, the task last; process; samples in A; in B]
const STACKS = [
  [[4, 3, 2, 1, 20], 'xz', 30, 30],
  [[5, 3, 2, 1, 20], 'xz', 20, 20],
  [[6, 3, 2, 1, 20], 'xz', 10, 10],
  [[9, 8, 2, 7, 21], 'python3.12', 40, 80],
  [[9, 8, 2, 7, 22], 'python3.12', 5, 5],
];
const pidOf = (locs) => Number(LOCS.find((l) => l.id === locs[locs.length - 1]).address >> 32n);
const tidOf = (locs) => Number(LOCS.find((l) => l.id === locs[locs.length - 1]).address & 0xffffffffn);
// Samples of both windows per group value, for a key function of a stack.
function sumBy(key) {
  const m = new Map();
  for (const st of STACKS) m.set(key(st), (m.get(key(st)) || 0) + st[2] + st[3]);
  return m;
}
const TOTAL = [...sumBy(() => 'all').values()][0];
const BY_PROCESS = sumBy((st) => `process=${st[1]}`);
const BY_PID = sumBy((st) => `pid=${pidOf(st[0])}`);
const BY_TID = sumBy((st) => `tid=${tidOf(st[0])}`);
const unnamedAt = (off) => sumBy((st) => NAME[st[0][0]]).get(`liblzma.so.5.4.1+0x${off}`);
const LZMA_ALL = unnamedAt('3ac0') + unnamedAt('3b00');
const XZ_ONLY = BY_PROCESS.get('process=xz');

async function ingest() {
  for (const win of ['A', 'B']) {
    const body = encodePprof({
      mappings: MAPS, locations: LOCS,
      samples: STACKS.map(([locs, proc, a, b]) => ({ locs, value: win === 'A' ? a : b, labels: { process: proc } })),
    });
    const q = new URLSearchParams({ name: 'cpu', format: 'pprof', from: WIN[win], until: WIN[win] + 10 });
    const r = await fetch(`${BASE}/ingest?${q}`, { method: 'POST', body });
    if (r.status !== 200) throw new Error(`ingest ${win}: ${r.status} ${await r.text()}`);
  }
}

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
const shot = (page, name) => page.screenshot({ path: join(OUT, `groupby-${name}.png`), fullPage: true });
async function waitFor(fn, what, timeout = 10000) {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - t0 > timeout) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
async function open(page, query) {
  await page.goto(`${BASE}/${query}`);
  await waitReady(page);
}
/** The depth-1 frames of a graph as "name:total" (sorted), diff frames as "name:left/right". */
async function roots(page, list = '#flame-frames') {
  const fs = (await frames(page, list)).filter((f) => f.depth === 1);
  return fs.map((f) => (f.left !== undefined ? `${f.name}:${f.left}/${f.right}` : `${f.name}:${f.total}`)).sort().join(' ');
}
const want = (m) => [...m].map(([k, v]) => `${k}:${v}`).sort().join(' ');
async function tooltipOf(page, canvas, f) {
  const box = await page.locator(canvas).boundingBox();
  await page.mouse.move(box.x + f.x + f.w / 2, box.y + f.y + f.h / 2);
  return waitFor(() => page.evaluate(() => {
    const e = document.getElementById('tooltip');
    return e.hidden ? null : e.textContent;
  }), `tooltip of ${f.name}`);
}
async function pick(page, sel, value) {
  await reloadAfter(page, () => page.selectOption(sel, value));
}

await ingest();
const { ctx, close } = await launch({ width: 1440, height: 900 });
const page = await ctx.newPage();
const consoleErrors = [];
page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
page.on('pageerror', (e) => consoleErrors.push(`page error: ${e.message}`));

try {
  await check('whole_machine_grouped_by_process', async () => {
    await open(page, '');
    const got = await roots(page);
    expect(got === want(BY_PROCESS), `roots '${got}', want '${want(BY_PROCESS)}'`);
    expect(await page.inputValue('#group') === 'process', `#group '${await page.inputValue('#group')}'`);
    expect(urlParam(page, 'group') === null, `the default is not written into the URL: ${page.url()}`);
    const fs = await frames(page);
    // Each process's _start is its own, with its own module (not one merged node).
    const starts = fs.filter((f) => f.name === '_start' && f.depth === 2).map((f) => f.total).sort((a, b) => a - b);
    const wantStarts = [...BY_PROCESS.values()].sort((a, b) => a - b);
    expect(starts.join() === wantStarts.join(), `_start frames ${starts}, want ${wantStarts}`);
    const xz = fs.find((f) => f.name === 'process=xz');
    const start = fs.find((f) => f.name === '_start' && f.depth === 2 && f.x >= xz.x - 0.5 && f.x + f.w <= xz.x + xz.w + 0.5);
    const tip = await tooltipOf(page, '#flame canvas', start);
    expect(/Module\s*xz/.test(tip), `tooltip of xz's _start: '${tip}'`);
    // Groups have their own colours, never a package's.
    const fillOf = await page.$$eval('#flame-frames li', (lis) => lis.map((li) => [Number(li.dataset.depth), li.dataset.fill]));
    const fills = fillOf.filter(([d]) => d === 1).map(([, c]) => c);
    const codeFills = new Set(fillOf.filter(([d]) => d > 1).map(([, c]) => c));
    expect(fills.length === BY_PROCESS.size && fills.every((c) => /^hsl\(226,/.test(c) && !codeFills.has(c)), `group fills ${fills}`);
    await page.mouse.move(1, 1);
    await shot(page, 'process');
    return got;
  });

  await check('group_node_tooltip_and_breadcrumbs', async () => {
    const xz = (await frames(page)).find((f) => f.name === 'process=xz');
    const tip = await tooltipOf(page, '#flame canvas', xz);
    expect(/^process\s*xz/.test(tip.trim()) && /Group/.test(tip) && /process="xz"/.test(tip) &&
      tip.includes(String(XZ_ONLY)), `tooltip of process=xz: '${tip}'`);
    await clickFrame(page, '#flame canvas', xz);
    const crumbs = await waitFor(() => page.$$eval('#breadcrumbs button', (bs) => bs.map((b) => ({
      text: b.textContent, group: b.classList.contains('group'), title: b.title,
    }))).then((b) => (b.length === 2 ? b : null)), 'breadcrumbs all › process=xz');
    expect(crumbs[1].text === 'process=xz' && crumbs[1].group && /xz/.test(crumbs[1].title),
      `breadcrumbs ${JSON.stringify(crumbs)}`);
    expect(urlParam(page, 'zoom') === 'process=xz', `zoom ${urlParam(page, 'zoom')}`);
    await page.mouse.move(1, 1);
    await shot(page, 'zoomed');
    await page.click('#reset-zoom');
  });

  await check('unnamed_code_per_object_by_default', async () => {
    const fs = await frames(page);
    const obj = fs.filter((f) => f.name === 'liblzma.so.5.4.1 [no symbols]');
    const addr = fs.filter((f) => /\+0x/.test(f.name));
    expect(obj.length === 1 && obj[0].total === LZMA_ALL && !addr.length,
      `[no symbols] frames ${JSON.stringify(obj.map((f) => f.total))}, address frames ${addr.map((f) => f.name)}`);
    const rows = await page.$$eval('#top-table tbody tr[data-name]', (trs) => trs.map((tr) => tr.dataset.name));
    expect(rows.includes('liblzma.so.5.4.1 [no symbols]') && !rows.some((n) => /\+0x/.test(n)), `top rows ${rows}`);
    const tip = await tooltipOf(page, '#flame canvas', obj[0]);
    expect(/per address/.test(tip), `tooltip of the [no symbols] frame: '${tip}'`);
    await page.mouse.move(1, 1);
  });

  await check('unnamed_code_per_address_kept_in_url', async () => {
    await pick(page, '#unnamed', 'addresses');
    expect(urlParam(page, 'unnamed') === 'addresses', `URL ${page.url()}`);
    const got = async () => (await frames(page)).filter((f) => f.name.startsWith('liblzma')).map((f) => `${f.name}:${f.total}`).sort().join(' ');
    const w = `liblzma.so.5.4.1+0x3ac0:${unnamedAt('3ac0')} liblzma.so.5.4.1+0x3b00:${unnamedAt('3b00')}`;
    expect(await got() === w, `frames '${await got()}', want '${w}'`);
    await page.reload();
    await waitReady(page);
    expect(await got() === w && await page.inputValue('#unnamed') === 'addresses', `after reload '${await got()}'`);
    await shot(page, 'addresses');
    await pick(page, '#unnamed', '');
    expect(urlParam(page, 'unnamed') === null, `URL after per object ${page.url()}`);
  });

  await check('grouping_turned_off_kept_in_url', async () => {
    await pick(page, '#group', 'none');
    expect(urlParam(page, 'group') === 'none', `URL ${page.url()}`);
    const got = await roots(page);
    expect(got === `_start:${TOTAL}`, `roots without grouping '${got}'`);
    await page.reload();
    await waitReady(page);
    expect(await roots(page) === `_start:${TOTAL}` && await page.inputValue('#group') === 'none', 'not kept across reload');
    await shot(page, 'none');
  });

  await check('group_by_pid_and_tid', async () => {
    const opts = await page.$$eval('#group option', (os) => os.map((o) => o.value));
    expect(['none', 'process', 'pid', 'tid'].every((o) => opts.includes(o)), `options ${opts}`);
    await pick(page, '#group', 'pid');
    const byPid = await roots(page);
    expect(byPid === want(BY_PID), `pid roots '${byPid}', want '${want(BY_PID)}'`);
    await pick(page, '#group', 'tid');
    const byTid = await roots(page);
    expect(byTid === want(BY_TID) && urlParam(page, 'group') === 'tid', `tid roots '${byTid}', want '${want(BY_TID)}'`);
    await shot(page, 'tid');
    return byTid;
  });

  await check('selector_not_grouped_unless_asked', async () => {
    await open(page, `?query=${encodeURIComponent('{process="xz"}')}`);
    const got = await roots(page);
    expect(got === `_start:${XZ_ONLY}` && await page.inputValue('#group') === 'none', `roots '${got}'`);
    await open(page, `?query=${encodeURIComponent('{process="xz"}')}&group=pid`);
    expect(await roots(page) === 'pid=300:' + XZ_ONLY, `with group=pid '${await roots(page)}'`);
  });

  await check('diff_grouped_as_the_flame_graph', async () => {
    await open(page, '?view=diff');
    const list = '#diff-flame ul.flame-frames';
    const got = await waitFor(async () => {
      const r = await roots(page, list);
      return r.includes('process=') ? r : null;
    }, 'grouped diff frames');
    // The default sides on a store with nothing before: the halves of the last hour (A, then B).
    const side = (w) => sumBy((st) => `process=${st[1]}`).keys();
    const wantDiff = [...side()].map((k) => {
      const sts = STACKS.filter((st) => `process=${st[1]}` === k);
      return `${k}:${sts.reduce((a, st) => a + st[2], 0)}/${sts.reduce((a, st) => a + st[3], 0)}`;
    }).sort().join(' ');
    expect(got === wantDiff, `diff roots '${got}', want '${wantDiff}'`);
    expect(await page.inputValue('#diff-group') === 'process', `#diff-group '${await page.inputValue('#diff-group')}'`);
    await page.click('button[data-diffmode="split"]');
    const left = await waitFor(async () => {
      const r = await roots(page, '#diff-left ul.flame-frames');
      return r ? r : null;
    }, 'side-by-side frames');
    expect(/process=python3\.12:\d+ process=xz:\d+/.test(left), `left side roots '${left}'`);
    await shot(page, 'diff-split');
    await page.click('button[data-diffmode="combined"]');
    await pick(page, '#diff-group', 'none');
    expect(urlParam(page, 'group') === 'none', `URL ${page.url()}`);
    const off = await waitFor(async () => {
      const r = await roots(page, list);
      return r && !r.includes('process=') ? r : null;
    }, 'ungrouped diff');
    expect(/^_start:\d+\/\d+$/.test(off), `ungrouped diff roots '${off}'`);
    await shot(page, 'diff');
  });

  await check('diff_boxes_show_dates', async () => {
    const lf = WIN.A - 5;
    const lu = WIN.A + 15;
    await open(page, `?view=diff&lfrom=${lf}&luntil=${lu}&rfrom=now-15m&runtil=now`);
    const shown = await page.inputValue('#lfrom');
    expect(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/.test(shown), `#lfrom shows '${shown}'`);
    // That date, read in the browser's zone, is the instant of the URL.
    const back = await page.evaluate((s) => {
      const [d, t] = s.split(' ');
      const [y, mo, da] = d.split('-').map(Number);
      const [h, mi, se] = t.split(':').map(Number);
      return new Date(y, mo - 1, da, h, mi, se).getTime() / 1000;
    }, shown);
    expect(back === lf, `#lfrom '${shown}' is ${back}, want ${lf}`);
    expect(await page.inputValue('#rfrom') === 'now-15m', `relative time shown as written: '${await page.inputValue('#rfrom')}'`);
    // A date typed in a box is read in the browser's zone and kept as unix seconds.
    const typed = await page.evaluate((sec) => {
      const d = new Date(sec * 1000);
      const p = (n) => String(n).padStart(2, '0');
      return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
    }, WIN.B - 60);
    const minute = Math.floor((WIN.B - 60) / 60) * 60;
    await page.fill('#rfrom', typed);
    await page.fill('#runtil', 'now');
    await reloadAfter(page, () => page.click('#diff-apply'));
    expect(urlParam(page, 'rfrom') === String(minute), `URL rfrom ${urlParam(page, 'rfrom')}, want ${minute} (typed '${typed}')`);
    expect(await page.inputValue('#rfrom') === `${typed}:00`, `#rfrom after Compare '${await page.inputValue('#rfrom')}'`);
    // A bad time outlines its own box; the URL keeps the last good one.
    await page.fill('#luntil', 'yesterday-ish');
    await page.click('#diff-apply');
    const bad = await waitFor(() => page.getAttribute('#luntil', 'aria-invalid'), '#luntil outlined');
    expect(bad === 'true' && urlParam(page, 'luntil') === String(lu), `aria-invalid ${bad}, luntil ${urlParam(page, 'luntil')}`);
    await shot(page, 'diff-dates');
    return shown;
  });

  await check('no_console_errors', async () => {
    expect(consoleErrors.length === 0, consoleErrors.slice(0, 3).join(' | '));
  });
} finally {
  await close();
}
process.exit(fails ? 1 : 0);
