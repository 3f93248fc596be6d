// E2E: one colour per model on both pages, from the server's model order, on the bundled word-problem family as npm start serves it (each engine in its own thread).
// Run: npx tsx test/e2e/model-colours.e2e.ts   (builds the web app first; screenshots in test-artifacts/model-colours-*.png)
import { execSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseServerConfig } from '../../runtime/config/serverConfig.ts';
import { startServer } from '../../runtime/http/createServer.ts';
import { TokenRouterService } from '../../runtime/http/tokenRouterService.ts';
import type { TimelineHook } from '../../designer/src/timeline/testHook.ts';
import { artifactPath, Checks, launch, newPage, openDesigner, ROOT } from './timelineHarness.ts';

declare global {
  interface Window {
    __timeline?: TimelineHook;
  }
}

const checks = new Checks();

async function main(): Promise<void> {
  execSync('npm run build:web', { cwd: ROOT, stdio: 'ignore' });
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-colours-'));
  const service = await TokenRouterService.start(parseServerConfig({ port: 0, dataDir, modelsDir: path.join(ROOT, 'examples/models') }));
  const srv = await startServer(service, 0, '127.0.0.1');
  const browser = await launch();
  try {
    checks.check('the models run in engine threads, as under npm start', service.threads.size === 3, [...service.threads.keys()]);
    // Designer: run R-Stitch in the playground; each token is drawn in its model's colour.
    const { page: designer, errors: dErrors } = await openDesigner(browser, srv.url);
    await designer.click('[data-testid="tab-playground"]');
    await designer.selectOption('[data-testid="playground-target"]', 'r-stitch');
    await designer.fill(
      '[data-testid="playground-prompt"]',
      'Every day Ava collects 18 stamps. After 6 days she uses 24 of them for a project. How many stamps does she still have?',
    );
    await designer.click('[data-testid="playground-run"]');
    await designer.waitForFunction(() => ['done', 'error'].includes(window.__designer!.playground().status), undefined, { timeout: 60_000 });
    const inDesigner = new Map(
      await designer.$$eval('[data-testid="pg-token"]', (els) =>
        els.map((e) => [e.getAttribute('data-model') ?? '', getComputedStyle(e).borderBottomColor] as const),
      ),
    );
    checks.check('the playground shows tokens of small and large', inDesigner.has('small') && inDesigner.has('large'), [...inDesigner]);
    // R-Stitch hands the uncertain tokens to large: in a word problem those are the numbers, the prose stays on small.
    const tokens = await designer.$$eval('[data-testid="pg-token"]', (els) =>
      els.map((e) => ({ model: e.getAttribute('data-model'), text: e.textContent ?? '' })),
    );
    const digitShare = (m: string) => {
      const of = tokens.filter((t) => t.model === m);
      return of.filter((t) => /\d/.test(t.text)).length / Math.max(1, of.length);
    };
    checks.check('large writes mostly digits and small mostly prose', digitShare('large') >= 0.5 && digitShare('small') < 0.5, {
      large: tokens.filter((t) => t.model === 'large').map((t) => t.text),
      smallDigitShare: digitShare('small'),
    });
    await designer.screenshot({ path: artifactPath('model-colours-designer.png') });

    // Timeline on the same server: lanes in the server's model order, medium included though it ran nothing.
    const { page: timeline, errors: tErrors } = await newPage(browser);
    await timeline.goto(`${srv.url}/timeline`);
    await timeline.waitForFunction(() => (window.__timeline?.snapshot().store.batches ?? 0) > 0, undefined, { timeout: 60_000 });
    await timeline.evaluate(() => window.__timeline!.fitAll());
    await timeline.waitForTimeout(1200); // the side panels update on a throttle
    const lanes = (await timeline.evaluate(() => window.__timeline!.snapshot())).lanes;
    checks.check("timeline lanes follow the server's model list", JSON.stringify(lanes) === JSON.stringify(['small', 'medium', 'large']), lanes);
    const bar = await timeline
      .locator('[data-testid=config-bar]')
      .innerText()
      .catch(() => '');
    checks.check(
      'the THRESHOLDS field names every model (it was empty with engines in threads)',
      /small\s*1/.test(bar) && /medium\s*1/.test(bar) && /large\s*1/.test(bar),
      bar,
    );
    const inTimeline = new Map(
      await timeline.$$eval('[data-testid=range-stats] tbody tr', (rows) =>
        rows.map((r) => [r.textContent?.match(/^[a-z]+/)?.[0] ?? '', getComputedStyle(r.querySelector('i.dot')!).backgroundColor] as const),
      ),
    );
    for (const m of ['small', 'large'])
      checks.check(`${m} has one colour on both pages`, inDesigner.get(m) !== undefined && inDesigner.get(m) === inTimeline.get(m), {
        designer: inDesigner.get(m),
        timeline: inTimeline.get(m),
      });
    await timeline.screenshot({ path: artifactPath('model-colours-timeline.png') });
    checks.check('no page errors', dErrors.length === 0 && tErrors.length === 0, [...dErrors, ...tErrors]);
  } finally {
    await browser.close();
    await srv.close();
    await service.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  checks.finish();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
