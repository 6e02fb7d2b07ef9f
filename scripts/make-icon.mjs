#!/usr/bin/env node
// Renders media/icon-source.svg to media/icon.png (128x128, the Marketplace's size) with the same headless
// Chromium the UI tests use. Run after editing the SVG; the PNG is committed.
import { readFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

const svg = readFileSync('media/icon-source.svg', 'utf8');
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
  ],
});
const page = await browser.newPage({ viewport: { width: 128, height: 128 }, deviceScaleFactor: 1 });
await page.setContent(`<html><body style="margin:0;background:transparent">${svg}</body></html>`);
await page.screenshot({ path: 'media/icon.png', omitBackground: true, clip: { x: 0, y: 0, width: 128, height: 128 } });
await browser.close();
console.log('media/icon.png written');
