// Issue 54 item 5: the timeline's drill-down marks grammar-masked steps: tokens from request-end.maskedFrom on are hatched, with a "grammar-masked" legend, and a batch's maskedRows shows in its panel and tooltip.
// Run: npx tsx test/e2e/timeline-masked.e2e.ts   (builds the web app first; screenshots test-artifacts/timeline-masked-*.png)
import { execSync } from 'node:child_process';
import { join } from 'node:path';
import { generateTrace, toJsonLines } from '../../shared/timeline/generateTrace.ts';
import type { TraceEvent, TraceEventOf } from '../../shared/trace.ts';
import { artifactPath, Checks, launch, newPage, ROOT, serveStatic } from './timelineHarness.ts';

const checks = new Checks();
const MASKED_FROM = 3;

async function main(): Promise<void> {
  if (!process.env.SKIP_BUILD) execSync('npm run build:web', { cwd: ROOT, stdio: 'ignore' });
  const events = generateTrace({ algorithm: 'r2r', requests: 6, concurrency: 3, maxTokens: 16, seed: 11 });
  const ends = events.filter((e): e is TraceEventOf<'request-end'> => e.type === 'request-end');
  const end = ends.find((e) => e.tokens.length > MASKED_FROM + 3)!;
  const plainEnd = ends.find((e) => e !== end)!;
  // The masked request answers JSON after a short preamble, as a constraint that starts after the thought does.
  const words = ['Sure', ':', ' ', '{"', 'n', '":', '4', '2', ',"', 'ok', '":', 'true', '}'];
  end.text = end.tokens.map((_, i) => words[i] ?? 'x');
  end.maskedFrom = MASKED_FROM;
  // Every decode batch the request was in after its first steps masked its row (plus, in one of them, a neighbour's).
  const batches = events.filter((e): e is TraceEventOf<'batch'> => e.type === 'batch' && e.phase === 'decode' && e.requestIds.includes(end.requestId));
  for (const b of batches.slice(1)) b.maskedRows = 1;
  const wide = batches.slice(1).sort((a, b) => b.requestIds.length - a.requestIds.length)[0];
  wide.maskedRows = Math.min(2, wide.requestIds.length);
  const srv = await serveStatic(join(ROOT, 'designer/dist'), { '/trace.jsonl': toJsonLines(events as TraceEvent[]) });
  const browser = await launch();
  try {
    const { page, errors } = await newPage(browser);
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.goto(`${srv.url}/?trace=/trace.jsonl`);
    await page.locator('[data-testid="request-list"] button').first().waitFor();

    // The masked request: tokens from maskedFrom on carry the mark, the ones before do not, and the legend says what it means.
    await page.evaluate((id) => window.__timeline!.selectRequest(id), end.requestId);
    const panel = page.locator('[data-testid="request-panel"]');
    await panel.locator('[data-testid="tokens"] span').first().waitFor();
    const marks = await panel.locator('[data-testid="tokens"] span').evaluateAll((els) =>
      els.map((e) => ({
        masked: e.getAttribute('data-masked') === 'true',
        hatched: getComputedStyle(e).backgroundImage.includes('gradient'),
        title: e.getAttribute('title') ?? '',
      })),
    );
    const expected = end.tokens.map((_, i) => i >= MASKED_FROM);
    checks.check(
      'tokens at output index ≥ maskedFrom are marked, the earlier ones not',
      JSON.stringify(marks.map((m) => m.masked)) === JSON.stringify(expected),
      marks.map((m) => (m.masked ? 'M' : '.')).join(''),
    );
    checks.check(
      'the mark is visible (hatched), and only on masked tokens',
      marks.every((m) => m.hatched === m.masked),
    );
    checks.check(
      'a masked token says so in its title',
      marks.filter((m) => m.masked).every((m) => m.title.endsWith('· grammar-masked')),
    );
    const legend = await panel.locator('[data-testid="masked-legend"]').innerText();
    checks.check(
      'the legend names grammar-masked and the count',
      /grammar-masked/.test(legend) && legend.includes(`from token #${MASKED_FROM} on (${end.tokens.length - MASKED_FROM} of ${end.tokens.length})`),
      legend,
    );
    await panel.screenshot({ path: artifactPath('timeline-masked-request.png') });

    // A request no grammar constrained: no marks, no legend.
    await page.evaluate((id) => window.__timeline!.selectRequest(id), plainEnd.requestId);
    await page.locator(`[data-testid="request-panel"] h3 code:text-is("${plainEnd.requestId}")`).waitFor();
    checks.check(
      'an unconstrained request has no marks and no legend',
      (await page.locator('[data-testid="tokens"] span[data-masked]').count()) === 0 && (await page.locator('[data-testid="masked-legend"]').count()) === 0,
    );

    // A masked batch: its panel lists the masked rows; its tooltip too (drawn on the canvas: see the screenshot).
    await page.evaluate(([a, b]) => window.__timeline!.setView(a, b), [wide.start - 3, wide.end + 3] as const);
    await page.waitForTimeout(400);
    const at = await page.evaluate(([m, id]) => window.__timeline!.batchCenter(m, id), [wide.model, wide.batchId] as const);
    checks.check('the masked batch is drawn', at !== null, at);
    if (at) {
      const box = (await page.locator('canvas').first().boundingBox())!;
      await page.mouse.click(box.x + at.x, box.y + at.y);
      const batchPanel = page.locator('[data-testid="batch-panel"]');
      await batchPanel.waitFor();
      const text = await batchPanel.innerText();
      checks.check(
        'the batch panel lists its grammar-masked rows',
        new RegExp(`rows grammar-masked\\s*${wide.maskedRows} of ${wide.requestIds.length}`, 'i').test(text),
        text.replace(/\n/g, ' | '),
      );
      await page.mouse.move(box.x + at.x, box.y + at.y);
      await page.waitForTimeout(300);
      await page.screenshot({ path: artifactPath('timeline-masked-batch.png') });
    }
    checks.check('no page errors', errors.length === 0, errors);
  } finally {
    await browser.close();
    await srv.close();
  }
  checks.finish();
}

main().catch((e) => {
  console.error('timeline-masked e2e: FAILED\n', e);
  process.exitCode = 1;
});
