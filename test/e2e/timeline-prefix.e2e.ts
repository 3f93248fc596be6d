// E2E: a batch that took prompt tokens from the prefix cache says so in the live timeline's batch panel (issue 20).
// Run: npx tsx test/e2e/timeline-prefix.e2e.ts   (serves designer/dist, which run.sh builds first; screenshot in test-artifacts/)
import type { Page } from 'playwright-core';
import type { TraceEvent, TraceEventOf } from '../../shared/trace.ts';
import type { TimelineHook } from '../../designer/src/timeline/testHook.ts';
import { startTestServer } from '../http/testService.ts';
import { Checks, artifactPath, launch, newPage } from './timelineHarness.ts';

declare global {
  interface Window {
    __timeline?: TimelineHook;
  }
}

const checks = new Checks();
// A shared preamble of worked examples (the bundled vocabulary is digits and arithmetic): the second request finds it cached.
const PREAMBLE = '12*34=408, 56*7=392, 81+19=100; '.repeat(3);

async function chat(url: string, question: string): Promise<void> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'small', messages: [{ role: 'user', content: `${PREAMBLE}${question}` }], max_tokens: 8, temperature: 0 }),
  });
  if (res.status !== 200) throw new Error(`chat answered ${res.status}: ${await res.text()}`);
}

async function main(): Promise<void> {
  const srv = await startTestServer({ latency: { small: 2, large: 5, medium: 3 } });
  const browser = await launch();
  try {
    const { page, errors } = await newPage(browser);
    await page.goto(`${srv.url}/timeline`);
    await page.waitForFunction(() => window.__timeline?.snapshot().connection === 'open', undefined, { timeout: 90_000 });
    // one after the other: the first leaves its KV in the cache, the second starts from it
    await chat(srv.url, '12+7=');
    await chat(srv.url, '3*4=');
    const events = (await (await fetch(`${srv.url}/admin/trace?format=jsonl`)).text())
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as TraceEvent);
    const hit = events.find((e): e is TraceEventOf<'batch'> => e.type === 'batch' && (e.cachedTokens ?? 0) > 0);
    // the preamble is 99 characters, one token each with the bundled vocabulary
    checks.check(
      'the server traced a batch that took the preamble from the cache',
      hit !== undefined && hit.cachedTokens! >= PREAMBLE.length,
      hit ? { model: hit.model, batchId: hit.batchId, cachedTokens: hit.cachedTokens } : 'none',
    );
    if (hit) await showBatch(page, hit, events.filter((e) => e.type === 'batch').length);
    checks.check('no page errors', errors.length === 0, errors.slice(0, 3));
  } finally {
    await browser.close();
    await srv.close();
  }
  checks.finish();
}

async function showBatch(page: Page, hit: TraceEventOf<'batch'>, traced: number): Promise<void> {
  // the page has every batch the server traced (the live feed's snapshot, then its events)
  await page.waitForFunction((n) => window.__timeline!.snapshot().store.received.batch >= n, traced, { timeout: 30_000 });
  // zoom to the batch so it is wide enough to click
  await page.evaluate(([a, b]) => window.__timeline!.setView(a, b), [hit.start - 2, hit.end + 2]);
  await page.waitForTimeout(400);
  const at = await page.evaluate(([m, id]) => window.__timeline!.batchCenter(m as string, id as number), [hit.model, hit.batchId]);
  checks.check('the batch is drawn on its lane', at !== null, at);
  if (!at) return;
  // canvas coordinates
  const box = await page.locator('canvas').boundingBox();
  await page.mouse.click(box!.x + at.x, box!.y + at.y);
  const panel = page.locator('[data-testid=batch-panel]');
  await panel.waitFor({ timeout: 10_000 });
  const text = await panel.innerText();
  const shown = /prompt tokens from cache\s*(\d+)/i.exec(text)?.[1];
  checks.check('the batch panel shows the prompt tokens that came from the cache', shown === String(hit.cachedTokens), { shown, traced: hit.cachedTokens });
  await page.screenshot({ path: artifactPath('timeline-prefix-batch.png') });
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
