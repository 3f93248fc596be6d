// Issue 53 item 8: a served model's name typed as the algorithm's name is refused on the field, and Deploy stays off (the server would answer 409).
// Run: npx tsx test/e2e/model-name.e2e.ts   (builds the web app first; screenshot /tmp/ui-model-name.png)
import assert from 'node:assert/strict';
import { execSync } from 'node:child_process';
import { ROOT, launch, openDesigner } from './timelineHarness.ts';
import { startTestServer } from '../http/testService.ts';

async function main(): Promise<void> {
  if (!process.env.SKIP_BUILD) execSync('npm run build:web', { cwd: ROOT, stdio: 'ignore' });
  const srv = await startTestServer();
  const browser = await launch();
  try {
    const { page, errors } = await openDesigner(browser, srv.url);
    await page.fill('[data-testid="graph-name"]', 'small');
    const note = page.locator('[data-testid="graph-name-note"]');
    await note.waitFor();
    assert.match(await note.innerText(), /“small” is a model this server serves/);
    assert.equal(await page.locator('[data-testid="graph-name"]').getAttribute('aria-invalid'), 'true');
    assert.ok(await page.locator('[data-testid="deploy"]').isDisabled(), 'Deploy is off under a model’s name');
    assert.match(await page.locator('[data-testid="deploy-blocker"]').innerText(), /“small” is a served model’s name/);
    await page.screenshot({ path: '/tmp/ui-model-name.png' });
    // Any other name is fine again.
    await page.fill('[data-testid="graph-name"]', 'small-first');
    await note.waitFor({ state: 'detached' });
    assert.ok(await page.locator('[data-testid="deploy"]').isEnabled(), 'Deploy is on under a free name');
    assert.deepEqual(errors, [], 'no page errors');
    console.log('model-name e2e: ok (a served model’s name refused on the field, Deploy off; a free name deploys)');
  } finally {
    await browser.close();
    await srv.close();
  }
}

main().catch((e) => {
  console.error('model-name e2e: FAILED\n', e);
  process.exitCode = 1;
});
