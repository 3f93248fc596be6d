// Issue 53 item 1: with "dev": false both pages ask for the admin token once (saying where it is), keep it, forget it on request, and take it from a #token= link without leaving it in history.
// Run: npx tsx test/e2e/admin-token.e2e.ts   (builds the web app first; screenshots go to /tmp/ui-token-*.png)
import assert from 'node:assert/strict';
import { execSync } from 'node:child_process';
import { ROOT, launch, NAME_SHIM } from './timelineHarness.ts';
import { startTestServer } from '../http/testService.ts';

const TOKEN = 'e2e-admin-token-0123456789';

async function main(): Promise<void> {
  if (!process.env.SKIP_BUILD) execSync('npm run build:web', { cwd: ROOT, stdio: 'ignore' });
  const srv = await startTestServer({ config: { dev: false, adminToken: TOKEN } });
  const browser = await launch();
  try {
    const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    const page = await ctx.newPage();
    await page.addInitScript(NAME_SHIM);
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.setDefaultTimeout(30_000);
    const kept = () => page.evaluate(() => localStorage.getItem('tokenrouterAdminToken'));

    // Designer, no token: it asks, says where the token is, and the status says why.
    await page.goto(`${srv.url}/`);
    const form = page.locator('[data-testid="admin-token-form"]');
    await form.waitFor();
    assert.match(await form.innerText(), /<dataDir>\/admin-token/);
    assert.match(await form.innerText(), /adminToken/);
    assert.match(await page.locator('.conn').innerText(), /admin token needed/);
    await page.screenshot({ path: '/tmp/ui-token-1-designer-asks.png' });

    // A wrong token is refused and asked again; the right one connects and is kept.
    await page.fill('[data-testid="admin-token-input"]', 'wrong-token-wrong-token');
    await page.click('[data-testid="admin-token-save"]');
    await page.locator('.conn-locked').waitFor();
    await form.waitFor();
    await page.fill('[data-testid="admin-token-input"]', TOKEN);
    await page.click('[data-testid="admin-token-save"]');
    await page.locator('.conn-server').waitFor();
    assert.equal(await form.count(), 0, 'the question is gone once the server lets the page in');
    assert.equal(await kept(), TOKEN);
    await page.locator('[data-testid="deploy-status"]').filter({ hasText: 'Live: r-stitch v1' }).waitFor();
    await page.screenshot({ path: '/tmp/ui-token-2-designer-connected.png' });

    // Kept: a reload does not ask again.
    await page.reload();
    await page.locator('.conn-server').waitFor();
    assert.equal(await form.count(), 0);

    // Timeline: the kept token opens the feed.
    await page.goto(`${srv.url}/timeline`);
    await page.locator('[data-testid="source-status"]').filter({ hasText: 'live · open' }).waitFor();

    // Forget: removed from the browser, the feed is refused and the banner asks.
    await page.click('[data-testid="admin-token-forget"]');
    assert.equal(await kept(), null);
    await form.waitFor();
    assert.match(await form.innerText(), /<dataDir>\/admin-token/);
    await page.screenshot({ path: '/tmp/ui-token-3-timeline-asks.png' });
    await page.fill('[data-testid="admin-token-input"]', TOKEN);
    await page.click('[data-testid="admin-token-save"]');
    await page.locator('[data-testid="source-status"]').filter({ hasText: 'live · open' }).waitFor();
    assert.equal(await form.count(), 0);

    // A first visit through the start-up link: kept, and gone from the address and from history.
    await page.evaluate(() => localStorage.clear());
    await page.goto(`${srv.url}/?x=1#token=${TOKEN}`);
    await page.locator('.conn-server').waitFor();
    assert.equal(await kept(), TOKEN);
    const href = await page.evaluate(() => location.href);
    assert.ok(!href.includes(TOKEN) && href.endsWith('/?x=1'), `address without the token: ${href}`);
    await page.goBack();
    const back = await page.evaluate(() => location.href);
    assert.ok(!back.includes(TOKEN), `history without the token: ${back}`);

    assert.deepEqual(errors, [], 'no page errors');
    console.log(
      'admin-token e2e: ok (asked with the file named, wrong token refused, kept over a reload, forgotten, taken from #token= and dropped from history)',
    );
  } finally {
    await browser.close();
    await srv.close();
  }
}

main().catch((e) => {
  console.error('admin-token e2e: FAILED\n', e);
  process.exitCode = 1;
});
