// Issue 53 item 12: the timeline's request list counts in words ("1 handoff"), and a long chatcmpl-… id gives way (ellipsized, whole in its title) so each row's status and counts stay in view.
// Run: npx tsx test/e2e/timeline-requests.e2e.ts   (builds the web app first; screenshot /tmp/ui-timeline-requests.png)
import assert from 'node:assert/strict';
import { execSync } from 'node:child_process';
import { join } from 'node:path';
import { generateTrace, toJsonLines } from '../../shared/timeline/generateTrace.ts';
import type { TraceEvent } from '../../shared/trace.ts';
import { ROOT, launch, newPage, serveStatic } from './timelineHarness.ts';

async function main(): Promise<void> {
  if (!process.env.SKIP_BUILD) execSync('npm run build:web', { cwd: ROOT, stdio: 'ignore' });
  // Long ids as the OpenAI entry makes them; one request with exactly one handoff.
  const long = (id: string) => `chatcmpl-${id}-9f3c2a7e41b84d0c9e5f6a1b2c3d4e5f`;
  const events = generateTrace({ algorithm: 'r2r', requests: 12, concurrency: 4, maxTokens: 16, seed: 5 }).map((e) => {
    const copy = structuredClone(e) as TraceEvent & { requestId?: string; requestIds?: string[] };
    if (copy.requestId) copy.requestId = long(copy.requestId);
    if (copy.requestIds) copy.requestIds = copy.requestIds.map(long);
    return copy as TraceEvent;
  });
  const ends = events.filter((e): e is Extract<TraceEvent, { type: 'request-end' }> => e.type === 'request-end');
  ends[ends.length - 1].handoffs = 1;
  const oneId = ends[ends.length - 1].requestId;
  const srv = await serveStatic(join(ROOT, 'designer/dist'), { '/trace.jsonl': toJsonLines(events) });
  const browser = await launch();
  try {
    const { page, errors } = await newPage(browser);
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.goto(`${srv.url}/?trace=/trace.jsonl`);
    const list = page.locator('[data-testid="request-list"]');
    await list.locator('button').first().waitFor();
    const one = list.locator(`button[data-request="${oneId}"]`);
    assert.match(await one.innerText(), /· 1 handoff$/m, 'one handoff, in the singular');
    assert.doesNotMatch(await list.innerText(), /\b1 handoffs\b|\b1 tokens\b/);
    assert.equal(await one.locator('code').getAttribute('title'), oneId, 'the whole id in the title');
    // Every row's parts stay inside the list's visible width.
    const box = (await list.boundingBox())!;
    const right = box.x + box.width;
    const rows = await list.locator('button').evaluateAll((bs) => bs.map((b) => [...b.children].map((c) => c.getBoundingClientRect().right)));
    for (const r of rows) for (const x of r) assert.ok(x <= right + 0.5, `a row's part ends at ${x}, past the list's edge ${right}`);
    assert.equal(await list.evaluate((el) => el.scrollWidth <= el.clientWidth), true, 'no sideways scrolling');
    await page.screenshot({ path: '/tmp/ui-timeline-requests.png' });
    assert.deepEqual(errors, [], 'no page errors');
    console.log('timeline-requests e2e: ok (1 handoff in the singular; long ids ellipsized, status and counts in view)');
  } finally {
    await browser.close();
    await srv.close();
  }
}

main().catch((e) => {
  console.error('timeline-requests e2e: FAILED\n', e);
  process.exitCode = 1;
});
