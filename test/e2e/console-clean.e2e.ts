// Both pages served by a real server load in headless Chromium without a console error, a page error or a failed request (the favicon included).
// Run: npx tsx test/e2e/console-clean.e2e.ts   (builds the web app first)
import assert from 'node:assert/strict';
import { execSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startTestServer } from '../http/testService.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

async function main(): Promise<void> {
  execSync('npm run build:web', { cwd: root, stdio: 'ignore' });
  const srv = await startTestServer();
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
  try {
    for (const route of ['/', '/timeline']) {
      const page = await (await browser.newContext()).newPage();
      page.setDefaultTimeout(60_000);
      const problems: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error') problems.push(`console: ${m.text()} (${m.location().url})`);
      });
      page.on('pageerror', (e) => problems.push(`page error: ${String(e)}`));
      page.on('response', (r) => {
        if (r.status() >= 400) problems.push(`HTTP ${r.status()} ${r.url()}`);
      });
      page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText ?? ''}`));
      await page.goto(`${srv.url}${route}`, { waitUntil: 'networkidle', timeout: 120_000 });
      // Let late requests (the favicon, the live feed, the first polls) happen.
      await page.waitForTimeout(2000);
      const icon = await page.evaluate(() => document.querySelector<HTMLLinkElement>('link[rel="icon"]')?.href ?? null);
      assert.ok(icon, `${route} declares an icon, so the browser does not ask for /favicon.ico`);
      assert.deepEqual(problems, [], `${route} loads cleanly`);
      console.log(`ok   ${route}: no console error, page error or failed request`);
      await page.context().close();
    }
    console.log('console-clean e2e: ok');
  } finally {
    await browser.close();
    await srv.close();
  }
}

main().catch((e) => {
  console.error('console-clean e2e: FAILED\n', e);
  process.exitCode = 1;
});
