// The time range controls in headless Chromium (tests/integration/test_ui_time.sh,
// run with TZ=America/New_York so the browser's local time is not UTC): the
// presets (today and yesterday too), dates typed in local time or with a zone,
// the date/time picker, brushing that fills the boxes with dates, and a refused
// time outlined on the box at fault (not the selector), whether the page or the
// server refuses it. Every figure expected comes from tests/ui/fixture.mjs.
// Prints "PASS name" / "FAIL name: why"; exits 0. Screenshots: OUTDIR/time-*.png.
//
// Usage: node time_test.mjs URL OUTDIR
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { launch, waitReady, reloadAfter, frames } from './browser.mjs';
import * as fx from './fixture.mjs';

const [URL_, OUT] = process.argv.slice(2);
const BASE = URL_.replace(/\/$/, '');
mkdirSync(OUT, { recursive: true });
const NOW = Math.floor(Date.now() / 1000);
const W = fx.windows(NOW);
const SUM_A = fx.sum(fx.samples(['A'])), SUM_B = fx.sum(fx.samples(['B']));

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
const visibleError = (page) => page.evaluate(() => {
  const e = document.getElementById('error');
  return e && !e.hidden ? e.textContent.trim() : null;
});
const urlParam = (page, k) => new URL(page.url()).searchParams.get(k);
const invalid = (page) => page.evaluate(() => ['query', 'from', 'until']
  .filter((id) => document.getElementById(id).getAttribute('aria-invalid') === 'true'));
const rootTotal = async (page) => {
  const m = (await frames(page)).find((f) => f.name === 'main');
  return m ? m.total : 0;
};
// "2026-11-27 10:00:05" in the browser's zone, for unix seconds.
const localDate = (page, sec) => page.evaluate((s) => {
  const d = new Date(s * 1000), p = (v) => String(v).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}, sec);
const isoZ = (sec) => new Date(sec * 1000).toISOString().replace('.000Z', 'Z');
// Sets custom from/until and applies; resolves when the page has loaded.
async function customRange(page, from, until) {
  await page.selectOption('select#range', 'custom');
  await page.fill('#from', from);
  await page.fill('#until', until);
  await reloadAfter(page, () => page.click('#apply'));
}

await fx.ingest(BASE, NOW);
const { ctx, close } = await launch();
const page = await ctx.newPage();
const errors = [];
page.on('pageerror', (e) => errors.push(e.message));
try {
  await page.goto(`${BASE}/`);
  await waitReady(page);

  await check('browser_zone_is_not_utc', async () => {
    const off = await page.evaluate(() => new Date().getTimezoneOffset());
    expect(off !== 0, 'the browser runs in UTC: run with TZ=America/New_York');
    return `offset ${off} min`;
  });

  await check('presets_listed', async () => {
    const opts = await page.$$eval('select#range option', (os) => os.map((o) => o.value));
    const want = ['5m', '15m', '1h', '6h', '24h', '7d', 'today', 'yesterday', 'custom'];
    expect(want.every((v) => opts.includes(v)), `options ${opts}`);
    await reloadAfter(page, () => page.selectOption('select#range', '15m'));
    expect(urlParam(page, 'from') === 'now-15m', `URL from=${urlParam(page, 'from')}`);
    const t = await rootTotal(page);
    expect(t === SUM_B, `last 15 min: main total ${t}, want ${SUM_B} (window B only)`);
  });

  await check('today_and_yesterday_send_local_midnights', async () => {
    const req = page.waitForRequest((r) => r.url().includes('/api/profile?'), { timeout: 10000 });
    await reloadAfter(page, () => page.selectOption('select#range', 'yesterday'));
    const sent = new URL((await req).url()).searchParams;
    const want = await page.evaluate(() => {
      const d = new Date(), iso = (t) => t.toISOString().replace('.000Z', 'Z');
      return [iso(new Date(d.getFullYear(), d.getMonth(), d.getDate() - 1)),
        iso(new Date(d.getFullYear(), d.getMonth(), d.getDate()))];
    });
    expect(urlParam(page, 'from') === 'yesterday' && urlParam(page, 'until') === 'today',
      `URL ${page.url()}`);
    expect(sent.get('from') === want[0] && sent.get('until') === want[1],
      `sent from=${sent.get('from')} until=${sent.get('until')}, want ${want}`);
    // the range as dates: in the status line, or in the no-data message
    const st = await page.evaluate(() => `${document.getElementById('status').textContent} ${document.getElementById('flame-empty').textContent}`);
    expect(/\d{4}-\d\d-\d\d 00:00:00 – \d{4}-\d\d-\d\d 00:00:00/.test(st), `'${st}' shows no dates`);
    await reloadAfter(page, () => page.selectOption('select#range', 'today'));
    expect(urlParam(page, 'from') === 'today' && !urlParam(page, 'until'), `URL ${page.url()}`);
    return `${sent.get('from')} .. ${sent.get('until')}`;
  });

  await check('local_dates_typed_read_in_browser_zone', async () => {
    const f = await localDate(page, W.B.from - 5), u = await localDate(page, W.B.until + 5);
    const req = page.waitForRequest((r) => r.url().includes('/api/profile?'), { timeout: 10000 });
    await customRange(page, f, u);
    const sent = new URL((await req).url()).searchParams;
    expect(urlParam(page, 'from') === String(W.B.from - 5) && urlParam(page, 'until') === String(W.B.until + 5),
      `URL from=${urlParam(page, 'from')} until=${urlParam(page, 'until')}`);
    expect(sent.get('from') === String(W.B.from - 5), `sent from=${sent.get('from')}`);
    const t = await rootTotal(page);
    expect(t === SUM_B, `main total ${t}, want ${SUM_B}`);
    expect(await page.inputValue('#from') === f, `#from shows '${await page.inputValue('#from')}', want '${f}'`);
    const st = await page.textContent('#status');
    expect(st.includes(f) && st.includes(u), `#status '${st}' lacks ${f} – ${u}`);
    await page.screenshot({ path: join(OUT, 'time-custom.png') });
    return `${f} – ${u}`;
  });

  await check('iso_with_zone_and_reload', async () => {
    await customRange(page, isoZ(W.A.from - 5), isoZ(W.A.until + 5));
    expect(urlParam(page, 'from') === String(W.A.from - 5), `URL from=${urlParam(page, 'from')}`);
    const t = await rootTotal(page);
    expect(t === SUM_A, `main total ${t}, want ${SUM_A}`);
    await page.reload();
    await waitReady(page);
    const f = await localDate(page, W.A.from - 5);
    expect(await page.inputValue('#from') === f, `after reload #from '${await page.inputValue('#from')}', want '${f}'`);
    expect(await rootTotal(page) === SUM_A, 'total changed on reload');
  });

  await check('bad_time_outlines_its_box', async () => {
    await page.selectOption('select#range', 'custom');
    await page.fill('#from', 'now-1h');
    await page.fill('#until', 'tomorrow');
    const before = page.url();
    await page.click('#apply');
    const e = await waitFor(() => visibleError(page), '#error for until=tomorrow');
    expect(e.includes('until: invalid time "tomorrow"'), `#error '${e}'`);
    const bad = await invalid(page);
    expect(bad.join() === 'until', `outlined: ${bad}`);
    expect(page.url() === before, 'the URL changed for a refused time');
    const outline = await page.$eval('#until', (el) => getComputedStyle(el).outlineColor);
    expect(outline !== 'rgba(0, 0, 0, 0)', `no outline on #until (${outline})`);
    await page.screenshot({ path: join(OUT, 'time-error.png') });
    await page.fill('#until', '2026-02-30');
    await page.click('#apply');
    expect((await invalid(page)).join() === 'until', 'Feb 30 not outlined');
    await page.fill('#until', 'now');
    await page.fill('#from', 'now+1h');
    await page.click('#apply');
    expect((await invalid(page)).join() === 'from', `from after until: outlined ${await invalid(page)}`);
    return e;
  });

  await check('server_refusal_outlines_its_box', async () => {
    await page.goto(`${BASE}/?from=noon`);
    const e = await waitFor(() => visibleError(page), '#error for from=noon');
    expect(/from: invalid time "noon"/.test(e), `#error '${e}'`);
    const bad = await waitFor(async () => { const b = await invalid(page); return b.length ? b : null; }, 'outline');
    expect(bad.join() === 'from', `outlined: ${bad}, want from only (not the selector)`);
  });

  await check('picker_fills_the_box', async () => {
    await page.goto(`${BASE}/?from=${W.A.from}&until=${W.B.until + 5}`);
    await waitReady(page);
    await page.click('button[data-pick="from"]');
    const f = await localDate(page, W.A.from);
    const preset = await page.inputValue('#from-pick');
    expect(preset === f.replace(' ', 'T'), `picker opened at '${preset}', want '${f}'`);
    await page.keyboard.press('Escape');
    await page.$eval('#from-pick', (el) => {
      el.value = '2026-11-27T10:00';
      el.dispatchEvent(new Event('change', { bubbles: true }));
    });
    expect(await page.inputValue('#from') === '2026-11-27 10:00:00', `#from '${await page.inputValue('#from')}'`);
    const want = await page.evaluate(() => new Date(2026, 10, 27, 10, 0, 0).getTime() / 1000);
    await page.fill('#until', '2026-11-27 11:00');
    await reloadAfter(page, () => page.click('#apply'));
    expect(urlParam(page, 'from') === String(want), `URL from=${urlParam(page, 'from')}, want ${want}`);
  });

  await check('brush_fills_boxes_with_dates', async () => {
    await page.goto(`${BASE}/?from=${W.A.from - 60}&until=${W.B.until + 60}`);
    await waitReady(page);
    const tl = await page.$eval('#timeline', (e) => [Number(e.dataset.from), Number(e.dataset.until)]);
    const box = await page.locator('#timeline canvas').boundingBox();
    const xOf = (t) => box.x + (t - tl[0]) / (tl[1] - tl[0]) * box.width;
    const t1 = (W.A.until + W.B.from) / 2, t2 = W.B.until + 30;
    const y = box.y + box.height / 2;
    await reloadAfter(page, async () => {
      await page.mouse.move(xOf(t1), y);
      await page.mouse.down();
      for (let i = 1; i <= 10; i++) await page.mouse.move(xOf(t1) + (xOf(t2) - xOf(t1)) * i / 10, y);
      await page.mouse.up();
    });
    const from = Number(urlParam(page, 'from')), until = Number(urlParam(page, 'until'));
    expect(from > W.A.until && from < W.B.from && until > W.B.until, `URL from/until ${from}/${until}`);
    const shown = [await page.inputValue('#from'), await page.inputValue('#until')];
    const want = [await localDate(page, from), await localDate(page, until)];
    expect(shown.join() === want.join(), `boxes show ${shown}, want ${want}`);
    expect(await page.$eval('#custom-range', (e) => !e.hidden), 'the boxes are hidden after brushing');
    expect(await rootTotal(page) === SUM_B, 'brushed total');
    await page.screenshot({ path: join(OUT, 'time-brushed.png') });
    return shown.join(' – ');
  });

  await check('no_page_errors', async () => {
    expect(errors.length === 0, errors.join(' | '));
  });
} finally {
  await close();
}
