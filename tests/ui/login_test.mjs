// The login page of a server started with --auth-token-file, in headless
// Chromium (tests/integration/test_ui_login.sh): the UI opened without a token
// lands on login.html (never a raw JSON error page); a wrong token is refused
// there; the right one, typed once, opens the refused page with its data and is
// kept across reloads of the tab; a kept token the server refuses leads back to
// the login page; exports are downloaded with the token; the API stays
// bearer-only (no cookie: a request without the header is still 401).
// Screenshots in OUTDIR. Prints "PASS name" / "FAIL name: why"; exits 1 on any FAIL.
//
// Usage: node login_test.mjs URL TOKEN OUTDIR
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { launch, waitReady, frames } from './browser.mjs';

const [URL_, TOKEN, OUT] = process.argv.slice(2);
const BASE = URL_.replace(/\/$/, '');
mkdirSync(OUT, { recursive: true });
let failed = 0;

async function check(name, fn) {
  try {
    const note = await fn();
    console.log(`PASS ${name}${note ? ` (${note})` : ''}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${String(e && e.message || e).split('\n').slice(0, 3).join(' | ')}`);
  }
}
function expect(cond, msg) {
  if (!cond) throw new Error(msg);
}
const path = (page) => new URL(page.url()).pathname;
const loginReady = (page) =>
  page.waitForFunction(() => location.pathname === '/login.html' && document.body.dataset.ready === '1',
    null, { timeout: 15000 });
const kept = (page) => page.evaluate(() => sessionStorage.getItem('hearth.token'));

const { ctx, close } = await launch();
const page = await ctx.newPage();
const errors = [];
page.on('pageerror', (e) => errors.push(e.message));
// not the defaults, which the app drops from its URL
const WANT = '/?from=now-3h';
try {
  await check('no_token_lands_on_login', async () => {
    await page.goto(`${BASE}${WANT}`);
    await loginReady(page);
    const body = await page.textContent('body');
    expect(!body.includes('"error"'), `a raw JSON error on the page: ${body.slice(0, 200)}`);
    expect(await page.isVisible('#token'), 'no token field');
    const next = new URL(page.url()).searchParams.get('next');
    expect(/from=now-3h/.test(next), `next=${next}, want ${WANT}`);
    await page.screenshot({ path: join(OUT, 'login.png') });
    return page.url().slice(BASE.length);
  });
  await check('wrong_token_refused', async () => {
    await page.fill('#token', `${TOKEN}-wrong`);
    await page.evaluate(() => { document.body.dataset.ready = 'test-wait'; });
    await page.click('#login');
    await page.waitForFunction(() => document.body.dataset.ready === '1');
    const msg = (await page.textContent('#login-error')).trim();
    expect(path(page) === '/login.html', `left for ${page.url()}`);
    expect(/refused/.test(msg) && await page.isVisible('#login-error'), `message '${msg}'`);
    expect(await kept(page) === null, 'a refused token was kept');
    await page.screenshot({ path: join(OUT, 'login-wrong.png') });
    return msg;
  });
  await check('right_token_opens_the_page', async () => {
    await page.fill('#token', TOKEN);
    await page.click('#login');
    await page.waitForURL((u) => u.pathname === '/', { timeout: 15000 });
    await waitReady(page);
    expect(/from=now-3h/.test(page.url()), page.url());
    const names = (await frames(page)).map((f) => f.name);
    expect(names.includes('login_hot'), `no login_hot frame in ${names.slice(0, 10)}`);
    const err = await page.$eval('#error', (e) => (e.hidden ? '' : e.textContent));
    expect(!err, `error shown: ${err}`);
    await page.screenshot({ path: join(OUT, 'login-done.png') });
    return `${names.length} frames`;
  });
  await check('token_kept_across_reload', async () => {
    await page.reload();
    await waitReady(page);
    expect(path(page) === '/', `reload went to ${page.url()}`);
    expect((await frames(page)).some((f) => f.name === 'login_hot'), 'no data after reload');
  });
  await check('export_downloaded_with_token', async () => {
    const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 15000 }),
      page.click('#export-folded')]);
    const file = join(OUT, 'login-export.folded.txt');
    await dl.saveAs(file);
    const { readFileSync } = await import('node:fs');
    const text = readFileSync(file, 'utf8');
    expect(/login_hot \d+/.test(text), `export: ${text.slice(0, 200)}`);
    return dl.suggestedFilename();
  });
  await check('api_stays_bearer_only', async () => {
    const st = await page.evaluate(async () => (await fetch('/api/labels')).status);
    const cookies = await ctx.cookies();
    expect(st === 401, `/api/labels without the header: ${st}`);
    expect(!cookies.length, `cookies set: ${JSON.stringify(cookies)}`);
  });
  await check('refused_kept_token_back_to_login', async () => {
    await page.evaluate(() => sessionStorage.setItem('hearth.token', 'stale-token'));
    await page.reload();
    await loginReady(page);
    expect(await kept(page) === null, 'the refused token is still kept');
    const next = new URL(page.url()).searchParams.get('next') || '';
    expect(/from=now-3h/.test(next), `next=${next}`);
  });
  await check('other_tab_asks_again', async () => {
    const p2 = await ctx.newPage();
    await p2.goto(`${BASE}/`);
    await loginReady(p2);
    await p2.close();
  });
  await check('no_page_errors', async () => {
    expect(!errors.length, errors.join(' | '));
  });
} finally {
  await close();
}
process.exit(failed ? 1 : 0);
