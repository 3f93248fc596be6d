// Issue 53 item 14: at 1,440 px nothing is clipped: the side panel's tabs beside an Inspector badge, the Versions row, the frontier plot's axis labels (the timeline's axis labels: test/timeline/paintLayers.test.ts).
// Run: npx tsx test/e2e/clipping-1440.e2e.ts   (builds the web app first; screenshots /tmp/ui-clip-*.png)
import assert from 'node:assert/strict';
import { execSync } from 'node:child_process';
import type { Page } from 'playwright-core';
import { drop } from './canvasActions.ts';
import { ROOT, launch, openDesigner } from './timelineHarness.ts';
import { startTestServer } from '../http/testService.ts';

/** Descendants of `inner` (matching `what`) that stick out of `outer`'s box, with how far. */
const outside = (page: Page, outer: string, inner: string) =>
  page.evaluate(
    ([o, i]) => {
      const box = document.querySelector(o)!.getBoundingClientRect();
      return [...document.querySelectorAll(i)].flatMap((el) => {
        const r = el.getBoundingClientRect();
        return r.width > 0 && (r.right > box.right + 0.5 || r.left < box.left - 0.5)
          ? [`${el.textContent?.trim() || el.tagName} ${Math.round(r.left)}..${Math.round(r.right)} outside ${Math.round(box.left)}..${Math.round(box.right)}`]
          : [];
      });
    },
    [outer, inner] as const,
  );

async function main(): Promise<void> {
  if (!process.env.SKIP_BUILD) execSync('npm run build:web', { cwd: ROOT, stdio: 'ignore' });
  const srv = await startTestServer();
  const browser = await launch();
  try {
    const { page, errors } = await openDesigner(browser, srv.url);
    assert.equal(page.viewportSize()!.width, 1440);
    // Versions: the name list, refresh, Roll back and Delete all inside the panel.
    await page.click('[data-testid="tab-versions"]');
    await page.locator('[data-testid="rollback"]').waitFor();
    assert.deepEqual(await outside(page, '.side', '.v-top > *'), [], 'the Versions row fits');
    await page.screenshot({ path: '/tmp/ui-clip-1-versions.png' });

    // The frontier plot: its tick labels inside the drawing.
    await page.click('[data-testid="tab-evaluate"]');
    await page.fill('[data-testid="ev-problems"]', '2');
    // The draft first: its result and prediction tables, labelled (issue 53 item 15), then the served ones.
    await page.click('[data-testid="ev-run"]');
    await page.locator('[data-testid="ev-prediction-at"]').waitFor({ timeout: 120_000 });
    assert.match(await page.locator('[data-testid="ev-prediction-at"]').innerText(), /at concurrency 8/);
    assert.match(await page.locator('[data-testid="ev-result"]').innerText(), /hand-off rate/);
    await page.click('[data-testid="ev-compare"]');
    await page.waitForFunction(
      () => {
        const e = window.__designer!.evaluation();
        return e.status !== 'running' && e.queue.length === 0 && e.points.every((p) => p.tokS !== null) && e.points.length > 0;
      },
      undefined,
      { timeout: 120_000 },
    );
    assert.deepEqual(await outside(page, '[data-testid="ev-plot"] svg', '[data-testid="ev-plot"] .ev-tick'), [], 'the plot’s axis labels fit');
    await page.screenshot({ path: '/tmp/ui-clip-2-plot.png' });

    // An Inspector badge (a graph with an error): every tab still in the panel.
    await page.click('[data-testid="open-menu"]');
    await page.click('[data-testid="new-graph"]');
    await drop(page, 'handoff', 400, 300);
    await page.locator('.tab-badge').waitFor();
    assert.deepEqual(await outside(page, '.side', '.tabs button'), [], 'the tabs fit beside the badge');
    await page.screenshot({ path: '/tmp/ui-clip-3-tabs.png' });

    // The timeline at the same width, for the eye (its axis labels are checked in paintLayers.test.ts).
    await page.goto(`${srv.url}/timeline`);
    await page.locator('[data-testid="source-status"]').filter({ hasText: 'live · open' }).waitFor();
    await page.waitForTimeout(800);
    await page.screenshot({ path: '/tmp/ui-clip-4-timeline.png' });
    assert.deepEqual(errors, [], 'no page errors');
    console.log('clipping-1440 e2e: ok (Versions row, plot labels, tabs with a badge inside their panels)');
  } finally {
    await browser.close();
    await srv.close();
  }
}

main().catch((e) => {
  console.error('clipping-1440 e2e: FAILED\n', e);
  process.exitCode = 1;
});
