// E2E: Open trace… over a page already showing the same models in another order: the lanes are named (and coloured) after the new file's model order, not the old page's.
// Run: npx tsx test/e2e/timeline-reopen.e2e.ts   (screenshots in test-artifacts/timeline-reopen-*.png)
import type { Page } from 'playwright-core';
import { generateTrace, ME_MODELS, toJsonLines } from '../../shared/timeline/generateTrace.ts';
import type { TimelineHook } from '../../designer/src/timeline/testHook.ts';
import type { TimelineSnapshot } from '../../designer/src/timeline/timelineSnapshot.ts';
import { Checks, newPage, artifactPath, buildTimeline, launch, serveStatic } from './timelineHarness.ts';

declare global {
  interface Window {
    __timeline?: TimelineHook;
  }
}

const checks = new Checks();
const snap = (page: Page): Promise<TimelineSnapshot> => page.evaluate(() => window.__timeline!.snapshot());

/** Three models named small, medium, large, listed in `order` (the config's, as a server lists its models). */
function traceWith(order: string[], seed: number): string {
  const named = ME_MODELS.map((m, i) => ({ ...m, name: ['small', 'medium', 'large'][i] }));
  const models = order.map((n) => named.find((m) => m.name === n)!);
  return toJsonLines(generateTrace({ algorithm: 'me', models, requests: 30, concurrency: 6, maxTokens: 24, seed }));
}

async function main(): Promise<void> {
  const first = ['small', 'medium', 'large'];
  const second = ['large', 'small', 'medium'];
  const dist = await buildTimeline();
  const srv = await serveStatic(dist, { '/first.jsonl': traceWith(first, 3) });
  const browser = await launch();
  try {
    const { page, errors } = await newPage(browser);
    await page.goto(`${srv.url}/?trace=/first.jsonl`);
    await page.waitForFunction(() => (window.__timeline?.snapshot().drawn?.batchBoxes ?? 0) > 0, undefined, { timeout: 30_000 });
    let s = await snap(page);
    checks.check('the first file draws its lanes in its model order', JSON.stringify(s.drawn?.lanes) === JSON.stringify(first), s.drawn?.lanes);
    await page.screenshot({ path: artifactPath('timeline-reopen-first.png') });

    await page.setInputFiles('[data-testid=trace-file]', { name: 'second.jsonl', mimeType: 'application/x-ndjson', buffer: Buffer.from(traceWith(second, 4)) });
    await page.waitForFunction(() => document.querySelector('[data-testid=source-status]')?.textContent?.includes('second.jsonl'), undefined, {
      timeout: 10_000,
    });
    await page.waitForFunction(() => (window.__timeline?.snapshot().drawn?.batchBoxes ?? 0) > 0, undefined, { timeout: 10_000 });
    await page.waitForTimeout(300);
    s = await snap(page);
    checks.check("the store holds the second file's order", JSON.stringify(s.lanes) === JSON.stringify(second), s.lanes);
    checks.check("the lane names drawn are the second file's, not the first page's", JSON.stringify(s.drawn?.lanes) === JSON.stringify(second), s.drawn?.lanes);
    // the batch a lane shows is that lane's model's: pick one batch of "large" and find it in the top lane
    const events = await page.evaluate(() => window.__timeline!.exportEvents('all'));
    const large = events.find((e) => e.type === 'batch' && e.model === 'large');
    const at =
      large && large.type === 'batch' ? await page.evaluate(([m, id]) => window.__timeline!.batchCenter(m, id), ['large', large.batchId] as const) : null;
    checks.check('a batch of "large" sits in the first lane, the one labelled large', at !== null && at.y < 30 + 900 / 3, at);
    await page.screenshot({ path: artifactPath('timeline-reopen-second.png') });
    checks.check('no page errors', errors.length === 0, errors);
  } finally {
    await browser.close();
    await srv.close();
  }
  checks.finish();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
