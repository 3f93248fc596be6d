// Readers coming and going (the trace window is always kept, so they add no config event) put no "config changed" marker on the live timeline; a real change does.
// Run: npx tsx test/e2e/timeline-config.e2e.ts   (builds the web app first; screenshot /tmp/ui-timeline-config.png)
import assert from 'node:assert/strict';
import { execSync } from 'node:child_process';
import { ROOT, launch, newPage } from './timelineHarness.ts';
import { startTestServer } from '../http/testService.ts';

async function main(): Promise<void> {
  if (!process.env.SKIP_BUILD) execSync('npm run build:web', { cwd: ROOT, stdio: 'ignore' });
  const srv = await startTestServer();
  const read = () => srv.service.trace.subscribe(() => {});
  const browser = await launch();
  try {
    // Three readers one after another, with the same thresholds: no config event beyond the first.
    const configs = () => srv.service.trace.events.filter((e) => e.type === 'config').length;
    const before = configs();
    for (let i = 0; i < 3; i++) {
      const stop = read();
      await new Promise((r) => setTimeout(r, 50));
      stop();
    }
    const { page, errors } = await newPage(browser);
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.goto(`${srv.url}/timeline`);
    const bar = page.locator('[data-testid="config-bar"]');
    await bar.waitFor();
    const said = configs();
    assert.ok(said >= 1 && said === before, `the server said its config ${said} times (${before} before the readers)`);
    await page.waitForTimeout(500);
    assert.doesNotMatch(await bar.innerText(), /config changed/, 'no change marked for the same thresholds');
    assert.match(await bar.innerText(), /unchanged since/);
    await page.screenshot({ path: '/tmp/ui-timeline-config.png' });
    // A real change is marked.
    srv.service.cluster.setThresholds({ large: 3 });
    await bar.filter({ hasText: 'config changed 1×' }).waitFor();
    assert.deepEqual(errors, [], 'no page errors');
    console.log(`timeline-config e2e: ok (config said ${said}× with the same values, no change marked; a new threshold marked once)`);
  } finally {
    await browser.close();
    await srv.close();
  }
}

main().catch((e) => {
  console.error('timeline-config e2e: FAILED\n', e);
  process.exitCode = 1;
});
