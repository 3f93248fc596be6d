// E2E: the timeline opens its own exports. A recorded trace → Export view / Export all (downloads) → Open trace… with
// the downloaded file → the same batches and handoffs; a file it cannot read gets one sentence and a red dot; exporting nothing says so.
// Run: npx tsx test/e2e/timeline-file.e2e.ts   (builds the page into test-artifacts/timeline-dist; screenshots in test-artifacts/)
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { Page } from 'playwright-core';
import { generateTrace, toJsonLines } from '../../shared/timeline/generateTrace.ts';
import type { TraceEvent } from '../../shared/trace.ts';
import type { TimelineSnapshot } from '../../designer/src/timeline/timelineSnapshot.ts';
import type { TimelineHook } from '../../designer/src/timeline/testHook.ts';
import { Checks, newPage, artifactPath, buildTimeline, launch, serveStatic } from './timelineHarness.ts';

declare global {
  interface Window {
    __timeline?: TimelineHook;
  }
}

const checks = new Checks();
const snap = (page: Page): Promise<TimelineSnapshot> => page.evaluate(() => window.__timeline!.snapshot());
const key = (e: TraceEvent): string => (e.type === 'batch' ? `${e.model}/${e.batchId}` : e.type === 'handoff' ? `${e.requestId}@${e.t}:${e.from}>${e.to}` : '');
const keys = (events: TraceEvent[], type: 'batch' | 'handoff'): string[] =>
  events
    .filter((e) => e.type === type)
    .map(key)
    .sort();
const sameList = (a: string[], b: string[]): boolean => a.length === b.length && a.every((x, i) => x === b[i]);

/** Clicks an export button and returns the downloaded file (path and text), or null when nothing was downloaded. */
async function exportVia(page: Page, testid: string): Promise<{ path: string; name: string; text: string } | null> {
  const dl = page.waitForEvent('download', { timeout: 3000 }).catch(() => null);
  await page.click(`[data-testid=${testid}]`);
  const d = await dl;
  if (!d) return null;
  const path = artifactPath(`timeline-file-${testid}.json`);
  await d.saveAs(path);
  return { path, name: d.suggestedFilename(), text: readFileSync(path, 'utf8') };
}

async function openFile(page: Page, file: string | { name: string; mimeType: string; buffer: Buffer }): Promise<void> {
  const name = typeof file === 'string' ? basename(file) : file.name;
  await page.setInputFiles('[data-testid=trace-file]', file);
  // The status names the file once it is read (panels update on a throttle).
  await page
    .waitForFunction((n) => document.querySelector('[data-testid=source-status]')?.textContent?.includes(n), name, { timeout: 5000 })
    .catch(async (err) => {
      console.log(
        'status now:',
        await status(page),
        await snap(page).then((x) => x.store.batches),
        await page.$eval('[data-testid=trace-file]', (el) => [(el as HTMLInputElement).files?.[0]?.name, (el as HTMLInputElement).value]),
      );
      throw err;
    });
  await page.waitForTimeout(300);
}

const status = (page: Page) => page.$eval('[data-testid=source-status]', (el) => ({ cls: el.className, text: el.textContent ?? '' }));

async function main(): Promise<void> {
  const events = generateTrace({ algorithm: 'r2r', requests: 60, concurrency: 8, maxTokens: 32, seed: 11 });
  const dist = await buildTimeline();
  const srv = await serveStatic(dist, { '/trace.jsonl': toJsonLines(events) });
  const browser = await launch();
  try {
    const { page, errors } = await newPage(browser);
    await page.goto(`${srv.url}/?trace=/trace.jsonl`);
    await page.waitForFunction(() => (window.__timeline?.snapshot().store.batches ?? 0) > 0);
    const loaded = await snap(page);
    checks.check('recorded JSON-lines trace opened', loaded.store.batches === events.filter((e) => e.type === 'batch').length, loaded.store);

    // Export view of a middle window, then open the downloaded file.
    const all = await page.evaluate(() => window.__timeline!.exportEvents('all'));
    const b = all.filter((e) => e.type === 'batch');
    const t0 = (b[Math.floor(b.length / 3)] as { start: number }).start;
    const t1 = (b[Math.floor((2 * b.length) / 3)] as { end: number }).end;
    await page.evaluate(([a, z]) => window.__timeline!.setView(a, z), [t0, t1] as const);
    const inView = await page.evaluate(() => window.__timeline!.exportEvents('view'));
    const viewFile = await exportVia(page, 'export-view');
    checks.check('Export view downloads a Chrome trace', !!viewFile && Array.isArray(JSON.parse(viewFile.text).traceEvents), viewFile?.name);
    if (!viewFile) throw new Error('no download');
    await openFile(page, viewFile.path);
    let s = await snap(page);
    let opened = await page.evaluate(() => window.__timeline!.exportEvents('all'));
    checks.check('Open trace… reads the Export view file: the same batches', sameList(keys(opened, 'batch'), keys(inView, 'batch')) && s.store.batches > 0, {
      opened: s.store.batches,
      exported: inView.filter((e) => e.type === 'batch').length,
    });
    checks.check('… and the same handoffs', sameList(keys(opened, 'handoff'), keys(inView, 'handoff')), { opened: s.store.handoffs });
    checks.check('… and draws them', (s.drawn?.batchBoxes ?? 0) > 0, s.drawn);
    checks.check(
      'no invalid-event or file banner',
      s.feed.invalid === 0 && (await page.$('[data-testid=banner-file]')) === null && (await page.$('[data-testid=banner-invalid]')) === null,
    );
    let st = await status(page);
    checks.check(
      'status says it shows a file, with no green "connected" dot',
      st.text.includes(basename(viewFile.path)) && st.text.startsWith('file') && !/\bok\b/.test(st.cls),
      st,
    );
    await page.screenshot({ path: artifactPath('timeline-file-opened-export.png') });

    // Export all from the page that opened a file, and open that too.
    const allFile = await exportVia(page, 'export-all');
    const before = opened;
    if (!allFile) throw new Error('no download for Export all');
    await openFile(page, allFile.path);
    opened = await page.evaluate(() => window.__timeline!.exportEvents('all'));
    checks.check(
      'Export all → Open trace…: the same batches and handoffs',
      sameList(keys(opened, 'batch'), keys(before, 'batch')) && sameList(keys(opened, 'handoff'), keys(before, 'handoff')),
      (await snap(page)).store,
    );

    // Export view with nothing in view: a message, no file.
    const end = (await snap(page)).view.t1;
    await page.evaluate((e) => window.__timeline!.setView(e + 60_000, e + 70_000), end + 1e6);
    const none = await exportVia(page, 'export-view');
    const notice = await page.textContent('[data-testid=banner-notice]').catch(() => null);
    checks.check('Export view with nothing in view: no download, a message saying so', none === null && /Nothing to export/.test(notice ?? ''), notice);
    await page.screenshot({ path: artifactPath('timeline-file-nothing-to-export.png') });

    // A file it cannot read: one sentence, a red dot, an empty view that says it is a file.
    await openFile(page, { name: 'notes.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify({ name: 'pkg', version: '1.0.0' })) });
    s = await snap(page);
    const banner = await page.textContent('[data-testid=banner-file]').catch(() => null);
    st = await status(page);
    checks.check(
      'wrong JSON: one plain sentence, no schema message',
      /not a TokenRouter trace/.test(banner ?? '') && !/invalid_type|Expected|Required|received/.test(banner ?? ''),
      banner,
    );
    checks.check('wrong JSON: the dot is red and names the file', /\bbad\b/.test(st.cls) && st.text.includes('notes.json'), st);
    checks.check('wrong JSON: nothing drawn', s.store.batches === 0, s.store);
    await page.screenshot({ path: artifactPath('timeline-file-unreadable.png') });
    await openFile(page, { name: 'photo.png', mimeType: 'image/png', buffer: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]) });
    const banner2 = await page.textContent('[data-testid=banner-file]').catch(() => null);
    checks.check('garbage: the same plain sentence', /Could not open photo\.png\. This file is not a TokenRouter trace/.test(banner2 ?? ''), banner2);
    checks.check('no page errors', errors.length === 0, errors);
  } finally {
    await browser.close();
    await srv.close();
  }
  checks.finish();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
