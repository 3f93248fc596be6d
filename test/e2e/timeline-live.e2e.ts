// E2E: the runtime server's own /timeline page on its /live feed: load generated from the page, drawing checked against the server's trace.
// Run: npx tsx test/e2e/timeline-live.e2e.ts   (rebuilds designer/dist when the timeline sources are newer; screenshots in test-artifacts/)
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { pairHandoffs } from '../../shared/timeline/pairHandoffs.ts';
import type { TraceEvent, TraceEventOf } from '../../shared/trace.ts';
import type { TimelineSnapshot } from '../../designer/src/timeline/timelineSnapshot.ts';
import type { TimelineHook } from '../../designer/src/timeline/testHook.ts';
import { startTestServer } from '../http/testService.ts';
import { checkChromeTrace } from '../timeline/checkChromeTrace.ts';
import { Checks, newPage, ROOT, artifactPath, launch } from './timelineHarness.ts';

declare global {
  interface Window {
    __timeline?: TimelineHook;
  }
}

const checks = new Checks();
const snap = (page: Page): Promise<TimelineSnapshot> => page.evaluate(() => window.__timeline!.snapshot());

/** The server serves designer/dist: rebuild it when any timeline source is newer than the built page. */
function ensureFreshDist(): void {
  const page = join(ROOT, 'designer/dist/timeline.html');
  const newest = (dir: string): number => Math.max(0, ...readdirSync(dir, { recursive: true }).map((f) => statSync(join(dir, String(f))).mtimeMs));
  const src = Math.max(newest(join(ROOT, 'designer/src/timeline')), newest(join(ROOT, 'shared')));
  if (existsSync(page) && statSync(page).mtimeMs >= src) return;
  const r = spawnSync('npm', ['run', 'build:web'], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) throw new Error('npm run build:web failed');
}

async function main(): Promise<void> {
  ensureFreshDist();
  const srv = await startTestServer({ latency: { small: 2, large: 6, medium: 4 } });
  const browser = await launch();
  try {
    const { page, errors } = await newPage(browser);
    await page.goto(`${srv.url}/timeline`);
    await page.waitForFunction(() => window.__timeline?.snapshot().connection === 'open' && window.__timeline!.snapshot().feed.snapshots >= 1, undefined, {
      timeout: 90_000,
    });
    checks.check('page connected to /live and got a snapshot', true);

    // Generate load from the page's button (POST /admin/load → 202), with the picture paused at first.
    await page.click('text=❚❚ Pause');
    const before = (await snap(page)).store.received.batch;
    const loadResponse = page.waitForResponse((r) => r.url().endsWith('/admin/load'));
    await page.click('[data-testid=generate-load]');
    const res = await loadResponse;
    checks.check('Generate load → 202 {started: true}', res.status() === 202 && (await res.json()).started === true, res.status());
    await page.waitForFunction(() => window.__timeline!.snapshot().feed.received.batch >= 20, undefined, { timeout: 60_000 });
    let s = await snap(page);
    checks.check('paused: events are held, the picture does not change', s.view.paused && s.feed.held > 0 && s.store.received.batch === before, {
      held: s.feed.held,
      applied: s.store.received.batch,
    });
    await page.click('text=Resume');
    await page.click('text=Follow live');
    await page.waitForFunction(() => (window.__timeline!.snapshot().feed.received['request-end'] ?? 0) >= 32, undefined, { timeout: 90_000 });
    await page.waitForTimeout(1500); // let the last flushes and a stats message arrive
    s = await snap(page);
    checks.check('resumed and following: held events applied', !s.view.paused && s.view.follow && s.feed.held === 0, s.view);
    await page.screenshot({ path: artifactPath('timeline-live-following.png') });

    // Ground truth: the server's own trace.
    const serverEvents = (await (await fetch(`${srv.url}/admin/trace?format=jsonl`)).text())
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as TraceEvent);
    const count = (type: TraceEvent['type']) => serverEvents.filter((e) => e.type === type).length;
    s = await snap(page);
    checks.check('no events dropped by the server for this client', s.feed.serverDropped === 0 && s.feed.invalid === 0, {
      dropped: s.feed.serverDropped,
      invalid: s.feed.invalid,
    });
    for (const type of ['batch', 'handoff', 'queue', 'request-state', 'request-end'] as const) {
      checks.check(`received every ${type} event the server traced`, s.store.received[type] === count(type), {
        page: s.store.received[type],
        server: count(type),
      });
    }
    const batches = serverEvents.filter((e): e is TraceEventOf<'batch'> => e.type === 'batch');
    const handoffs = serverEvents.filter((e): e is TraceEventOf<'handoff'> => e.type === 'handoff');
    const models = [...new Set(batches.map((b) => b.model))];
    checks.check('a lane for every model that ran a batch', models.every((m) => s.lanes.includes(m)) && s.drawn!.lanes.length === s.lanes.length, {
      lanes: s.lanes,
      models,
    });

    await page.evaluate(() => {
      window.__timeline!.setFollow(false);
      window.__timeline!.fitAll();
    });
    await page.waitForTimeout(400);
    s = await snap(page);
    const paired = pairHandoffs(batches, handoffs).filter((p) => p.from >= 0 && p.to >= 0).length;
    checks.check('fit view draws every batch received', s.drawn!.visibleBatches === batches.length, { drawn: s.drawn!.visibleBatches, server: batches.length });
    checks.check('handoff arrows paired like the reference pairing', handoffs.length > 0 && s.store.pairedHandoffs === paired, {
      page: s.store.pairedHandoffs,
      reference: paired,
      handoffs: handoffs.length,
    });
    checks.check('arrows drawn', s.drawn!.arrows > 0, { arrows: s.drawn!.arrows, kept: s.drawn!.keptArrows, discarded: s.drawn!.discardedArrows });
    await page.screenshot({ path: artifactPath('timeline-live-fit.png') });

    // Pick a request with handoffs from the list: its path across lanes is the server's.
    const ends = serverEvents.filter((e): e is TraceEventOf<'request-end'> => e.type === 'request-end');
    const target = ends.find((e) => e.handoffs >= 2) ?? ends[0];
    await page.fill('.tl-filter', target.requestId);
    await page.click(`[data-request="${target.requestId}"]`);
    await page.waitForTimeout(500);
    s = await snap(page);
    const want = batches.filter((b) => b.requestIds.includes(target.requestId)).map((b) => `${b.model}:${b.batchId}`);
    const got = s.selected?.batches.map((b) => `${b.model}:${b.batchId}`) ?? [];
    checks.check('clicked request selected', s.selected?.requestId === target.requestId, s.selected?.requestId);
    checks.check('its path = every batch that ran it, across lanes', JSON.stringify(got) === JSON.stringify(want), { got: got.length, want: want.length });
    checks.check(
      'its handoffs are all listed and paired',
      s.selected!.handoffs.length === handoffs.filter((h) => h.requestId === target.requestId).length &&
        s.selected!.handoffs.every((h) => h.fromBatch !== null),
      s.selected!.handoffs.length,
    );
    // Zoom to the request's lifetime so the highlight is visible.
    await page.evaluate(([a, b]) => window.__timeline!.setView(a, b), [target.admittedAt - 5, target.t + 5]);
    await page.waitForTimeout(400);
    s = await snap(page);
    checks.check('path highlighted on canvas', s.drawn!.highlightedBoxes === want.length && (target.handoffs === 0 || s.drawn!.highlightedArrows > 0), {
      boxes: s.drawn!.highlightedBoxes,
      arrows: s.drawn!.highlightedArrows,
    });
    const ttft = await page.locator('[data-testid=ttft]').innerText();
    checks.check('TTFT and E2E shown', /ms|s/.test(ttft) && /s/.test(await page.locator('[data-testid=e2e]').innerText()), ttft);
    // The drill-down shows the text the server decoded, not only ids (issue 35 item 4).
    const pieces = await page.$$eval('[data-testid=tokens] span', (els) => els.map((e) => e.textContent ?? ''));
    const mark = (p: string) => (p === '' ? '·' : p.replace(/\n/g, '↵').replace(/\t/g, '→').replace(/ /g, '␣'));
    checks.check('the request-end event carries one text piece per token', (target.text?.length ?? -1) === target.tokens.length, {
      text: target.text?.length,
      tokens: target.tokens.length,
    });
    checks.check(
      'the request panel shows those pieces as text',
      pieces.length > 0 && JSON.stringify(pieces) === JSON.stringify((target.text ?? []).slice(0, pieces.length).map(mark)),
      pieces.slice(0, 8),
    );
    await page.locator('[data-testid=tokens]').scrollIntoViewIfNeeded();
    await page.screenshot({ path: artifactPath('timeline-live-request.png') });

    // Export everything retained and check the file.
    await page.evaluate(() => window.__timeline!.fitAll());
    const dl = page.waitForEvent('download');
    await page.click('[data-testid=export-all]');
    const file = await (await dl).path();
    const trace = JSON.parse(readFileSync(file!, 'utf8'));
    const problems = checkChromeTrace(trace);
    const flows = trace.traceEvents.filter((e: { ph: string }) => e.ph === 's').length;
    checks.check('exported file is valid Chrome Trace JSON', problems.length === 0, problems.slice(0, 3));
    checks.check(
      'one flow per paired handoff, one X slice per batch',
      flows === paired && trace.traceEvents.filter((e: { ph: string; cat?: string }) => e.ph === 'X' && e.cat?.startsWith('batch')).length === batches.length,
      { flows, paired },
    );
    checks.check('no page errors', errors.length === 0, errors.slice(0, 3));
  } finally {
    await browser.close();
    await srv.close();
  }
  checks.finish();
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
