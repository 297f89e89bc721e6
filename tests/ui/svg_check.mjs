// Opens an SVG flame graph written by hearth in headless Chromium and prints, as
// JSON, what a person would see: the frame names (from each frame's data-name),
// the titles, and whether clicking a frame zooms (its rect widens to the full width).
// Usage: node svg_check.mjs FILE.svg SCREENSHOT.png [FRAME_TO_CLICK]
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const [svgPath, shot, clickName] = process.argv.slice(2);
const profileDir = mkdtempSync(join(tmpdir(), 'hearth-chromium-'));
const ctx = await chromium.launchPersistentContext(profileDir, {
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const errors = [];
try {
  const page = await ctx.newPage();
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto('file://' + resolve(svgPath));
  const frames = await page.$$eval('[data-name]', (els) => els.map((e) => e.getAttribute('data-name')));
  const titles = await page.$$eval('title', (els) => els.map((e) => e.textContent));
  let zoomed = null;
  if (clickName) {
    const sel = `g[data-name="${clickName}"]`;
    const before = await page.$eval(sel, (g) => g.getBoundingClientRect().width);
    await page.click(sel);
    await page.waitForTimeout(200);
    const after = await page.$eval(sel, (g) => g.getBoundingClientRect().width);
    zoomed = { before, after };
  }
  await page.screenshot({ path: shot });
  console.log(JSON.stringify({ frames, titles, zoomed, errors }));
} finally {
  await ctx.close();
  rmSync(profileDir, { recursive: true, force: true });
}
