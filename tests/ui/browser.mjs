// Shared by the UI tests and bench/ui: Debian's chromium under playwright-core,
// headless, with a fresh user-data-dir (no state leaks between runs) and no
// background network (the UI must work offline).
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export async function launch({ width = 1400, height = 900 } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-chromium-'));
  const ctx = await chromium.launchPersistentContext(dir, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width, height },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const close = async () => {
    await ctx.close().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  };
  return { ctx, close };
}

// Waits until the app has loaded and drawn the current selection.
export async function waitReady(page, timeout = 20000) {
  await page.waitForFunction(() => document.body.dataset.ready === '1', null, { timeout });
}

// Runs an action that makes the app load again, and waits for that load to end
// (data-ready is set to a marker first, so a stale "1" does not count).
export async function reloadAfter(page, action, timeout = 20000) {
  await page.evaluate(() => { document.body.dataset.ready = 'test-wait'; });
  await action();
  await waitReady(page, timeout);
}

// The frames a flame graph's accessibility list exposes, with numbers parsed.
export async function frames(page, list = '#flame-frames') {
  return page.$$eval(`${list} li`, (lis) => lis.map((li) => {
    const d = li.dataset, num = (v) => (v === undefined ? undefined : Number(v));
    return {
      name: d.name, text: li.textContent.trim(), self: num(d.self), total: num(d.total),
      depth: num(d.depth), x: num(d.x), y: num(d.y), w: num(d.w), h: num(d.h),
      left: num(d.left), right: num(d.right), change: num(d.change),
      inlined: d.inlined === '1', match: d.match === '1', highlight: d.highlight === '1',
    };
  }));
}

// Clicks the middle of a frame on the canvas of the flame graph holding `list`.
// A deep frame may lie below the window: scroll its middle to the window's
// middle first, since a click outside the viewport hits nothing.
export async function clickFrame(page, canvasSel, f) {
  await page.evaluate(([sel, y]) => {
    const r = document.querySelector(sel).getBoundingClientRect();
    if (r.top + y < 0 || r.top + y > innerHeight) window.scrollBy(0, r.top + y - innerHeight / 2);
  }, [canvasSel, f.y + f.h / 2]);
  const box = await page.locator(canvasSel).boundingBox();
  if (!box) throw new Error(`no canvas ${canvasSel}`);
  await page.mouse.click(box.x + f.x + f.w / 2, box.y + f.y + f.h / 2);
}
