// Evaluate → predict → deploy → watch, in headless Chromium against a real server: draw a threshold algorithm from the palette, evaluate it (keyboard), see its point on the plot beside the served ones, deploy, send traffic, see predicted vs measured on the timeline.
// Run: npx tsx test/e2e/evaluate.e2e.ts   (builds the web app first; screenshots go to test-artifacts/evaluate-*.png)
import assert from 'node:assert/strict';
import { execSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { drop, wire } from './canvasActions.ts';
import { ARTIFACTS, ROOT, launch, openDesigner } from './timelineHarness.ts';
import { startTestServer, type TestServer } from '../http/testService.ts';

const NAME = 'e2e-threshold';

const shot = (page: Page, name: string) => page.screenshot({ path: path.join(ARTIFACTS, `evaluate-${name}.png`) });

/** A closed loop of `c` clients on `model` for `ms`: the traffic the timeline's check measures. */
async function traffic(srv: TestServer, model: string, c: number, ms: number): Promise<number> {
  const end = Date.now() + ms;
  let done = 0;
  await Promise.all(
    Array.from({ length: c }, async () => {
      while (Date.now() < end) {
        const res = await fetch(`${srv.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ model, messages: [{ role: 'user', content: '347*26' }], max_tokens: 32 }),
        });
        assert.equal(res.status, 200);
        await res.json();
        done++;
      }
    }),
  );
  return done;
}

async function main(): Promise<void> {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  execSync('npm run build:web', { cwd: ROOT, stdio: 'ignore' });
  const srv = await startTestServer({ latency: { small: 2, large: 6 } });
  const browser = await launch();
  try {
    const { page, errors } = await openDesigner(browser, srv.url);
    await page.click('[data-testid="open-menu"]');
    await page.click('[data-testid="new-graph"]');

    // A threshold algorithm from the palette: small hands off to large when its entropy is over 0.03 (defaults), large hands back after one token.
    await drop(page, 'start', 140, 70);
    const h = await drop(page, 'entropy', 140, 220);
    const over = await drop(page, 'compare', 420, 220);
    const go = await drop(page, 'handoff', 700, 220);
    await drop(page, 'handBack', 700, 400);
    await wire(page, h, 'out', over, 'a');
    await wire(page, over, 'out', go, 'when');
    assert.deepEqual(await page.evaluate(() => window.__designer!.errors()), [], 'the drawn graph compiles');

    // Evaluate it, with the keyboard only: the tab, the problem count, the button.
    await page.focus('[data-testid="tab-evaluate"]');
    await page.keyboard.press('Enter');
    await page.focus('[data-testid="ev-problems"]');
    // the field's bound is the server's validation set, asked for when the panel shows
    await page.waitForFunction(() => document.querySelector('[data-testid="ev-problems"]')?.getAttribute('max') === '1000');
    await page.keyboard.press('Control+a');
    await page.keyboard.type('40');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => (document.activeElement as HTMLElement).dataset.testid), 'ev-run', 'Tab reaches the Evaluate button');
    await page.keyboard.press('Enter');
    await page.locator('[data-testid="ev-progress"]').waitFor();
    await page.waitForFunction(() => (window.__designer!.evaluation().progress?.done ?? 0) > 0);
    await shot(page, '1-running');
    await page.waitForFunction(() => window.__designer!.evaluation().status !== 'running', undefined, { timeout: 60_000 });
    const ev = await page.evaluate(() => window.__designer!.evaluation());
    assert.equal(ev.status, 'done', `evaluation: ${ev.message}`);
    assert.equal(ev.result!.problems, 40);
    assert.ok(ev.result!.handoffsPerRequest > 0, 'the threshold hands off');
    await page.locator('[data-testid="ev-prediction"]').waitFor();
    await page.locator('[data-testid="ev-point-draft"]').waitFor();
    const draftTokS = (await page.evaluate(() => window.__designer!.evaluation().prediction!.best.tokS)) as number;
    assert.ok(draftTokS > 0, 'the draft has a predicted throughput');
    // the run went at the concurrency predicted for (8, the server's bound here), and the figure shows its band with a hover saying what it is
    assert.equal(ev.result!.concurrency, 8, 'the evaluation runs at the concurrency it predicts for');
    const band = (await page.evaluate(() => window.__designer!.evaluation().prediction!.best.tokSBand)) as { low: number; high: number };
    assert.ok(band.low <= draftTokS && draftTokS <= band.high, `the band ${JSON.stringify(band)} holds ${draftTokS}`);
    const shown = await page.locator('[data-testid="ev-predicted-toks"]').innerText();
    const whole = (x: number) => Math.round(x).toLocaleString('en-US');
    assert.equal(shown, `≈ ${whole(draftTokS)} tok/s (${whole(band.low)}–${whole(band.high)})`);
    assert.match((await page.locator('[data-testid="ev-predicted-toks"]').getAttribute('title')) ?? '', /25th/);
    // clients that take time of their own per request (typed in, keyboard only; 5 s, as long as a request here) keep fewer requests on the models: a lower figure
    await page.focus('[data-testid="ev-client-ms"]');
    await page.keyboard.press('Control+a');
    await page.keyboard.type('5000');
    await page.waitForFunction(
      (before) => {
        const s = window.__designer!.evaluation();
        return s.clientMs === 5000 && !s.predicting && s.prediction!.clientMs === 5000 && s.prediction!.best.tokS < 0.8 * before;
      },
      draftTokS,
      { timeout: 15_000 },
    );
    await shot(page, '1b-client-ms');
    await page.keyboard.press('Control+a');
    await page.keyboard.type('0');
    await page.waitForFunction(
      () => {
        const s = window.__designer!.evaluation();
        return s.clientMs === 0 && !s.predicting && s.prediction!.clientMs === 0;
      },
      undefined,
      { timeout: 15_000 },
    );
    // a model no live request has stepped on gets its step latency from the evaluation alone, and the panel says so
    const live = (await page.evaluate(() => window.__designer!.evaluation().prediction!.liveBatches)) as Record<string, number>;
    const unseen = Object.keys(live).filter((m) => live[m] === 0);
    assert.equal(
      await page.locator('[data-testid="ev-latency-note"]').count(),
      unseen.length > 0 ? 1 : 0,
      'the note shows exactly when a model has no live traffic',
    );
    if (unseen.length > 0)
      assert.match(await page.locator('[data-testid="ev-latency-note"]').innerText(), new RegExp(`No live traffic on ${unseen.join(', ')} `));

    // The served models and algorithms beside it.
    await page.click('[data-testid="ev-compare"]');
    await page.waitForFunction(
      () => {
        const s = window.__designer!.evaluation();
        return s.status !== 'running' && s.queue.length === 0 && s.points.every((p) => p.tokS !== null);
      },
      undefined,
      { timeout: 180_000 },
    );
    const points = await page.evaluate(() => window.__designer!.evaluation().points);
    assert.ok(
      points.some((p) => p.kind === 'model' && p.label === 'large'),
      'the large model is on the plot',
    );
    assert.ok(
      points.some((p) => p.kind === 'algorithm'),
      'deployed algorithms are on the plot',
    );
    assert.equal(await page.locator('[data-testid="ev-point-draft"]').count(), 1, 'one highlighted draft point');
    await page.locator('[data-testid="ev-plot"]').scrollIntoViewIfNeeded();
    await shot(page, '2-plot');

    // Deploy it.
    await page.click('[data-testid="tab-inspect"]');
    await page.locator('.react-flow__pane').click({ position: { x: 20, y: 20 } });
    await page.fill('[data-testid="graph-name"]', NAME);
    await page.locator('[data-testid="deploy"]:not([disabled])').waitFor();
    await page.click('[data-testid="deploy"]');
    await page.waitForFunction(() => !['deploying', 'idle'].includes(window.__designer!.deploy().status));
    const deploy = await page.evaluate(() => window.__designer!.deploy());
    assert.equal(deploy.status, 'deployed', `deploy: ${deploy.message}`);

    // The timeline checks the prediction against live traffic.
    const tl = await page.context().newPage();
    await tl.setViewportSize({ width: 1440, height: 700 });
    await tl.goto(`${srv.url}/timeline?algorithm=${NAME}`);
    await tl.locator('[data-testid="prediction-bar"]').waitFor();
    await tl.waitForFunction((n) => (document.querySelector('[data-testid="prediction-algorithm"]') as HTMLSelectElement | null)?.value === n, NAME);
    const sent = await traffic(srv, NAME, 4, 4000);
    await tl.locator('[data-testid="prediction-toks"]').waitFor({ timeout: 15_000 });
    const toks = await tl.locator('[data-testid="prediction-toks"]').innerText();
    const handoffs = await tl.locator('[data-testid="prediction-handoffs"]').innerText();
    assert.match(toks, /predicted \d+ \(\d+–\d+\) · measured \d+/);
    // what was compared is said; a percentage only for like-with-like traffic, else why not
    assert.match(await tl.locator('[data-testid="prediction-compared"]').innerText(), /predicted at c = \d+ · \d+ tokens\/request live, \d+ evaluated/);
    // read together: the bar re-polls every 2 s
    const [toksNow, like] = await tl.evaluate(
      () =>
        [
          (document.querySelector('[data-testid="prediction-toks"]') as HTMLElement).innerText,
          !document.querySelector('[data-testid="prediction-not-compared"]'),
        ] as const,
    );
    assert.equal(/% off/.test(toksNow), like, 'a percentage exactly when the window is like the prediction');
    assert.match(handoffs, /predicted \d\.\d{3} · measured \d\.\d{3}/);
    const flagged = (await tl.locator('[data-testid="prediction-bar"]').getAttribute('data-flagged')) === 'true';
    assert.equal(await tl.locator('[data-testid="prediction-flag"]').count(), flagged ? 1 : 0, 'the flag shows exactly when the check is flagged');
    await shot(tl, '3-timeline');
    assert.deepEqual(errors, [], 'no page errors');
    console.log(
      `evaluate e2e: ok (draft ${(ev.result!.accuracy * 100).toFixed(0)} %, ${draftTokS.toFixed(0)} tok/s predicted; ${points.length} points; ${sent} requests; timeline: ${toks} | ${handoffs}${flagged ? ' | flagged' : ''})`,
    );
  } finally {
    await browser.close();
    await srv.close();
  }
}

main().catch((e) => {
  console.error('evaluate e2e: FAILED\n', e);
  process.exitCode = 1;
});
