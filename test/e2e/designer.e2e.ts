// Designer end to end in headless Chromium against a real server: build R-Stitch by drag and connect, fix an error, deploy, run, reload.
// Run: npx tsx test/e2e/designer.e2e.ts   (builds the web app first; screenshots go to test-artifacts/)
import assert from 'node:assert/strict';
import { execSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { drop, wire } from './canvasActions.ts';
import { launch, openDesigner } from './timelineHarness.ts';
import { startTestServer } from '../http/testService.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const artifacts = path.join(root, 'test-artifacts');
const NAME = 'e2e-rstitch';

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(artifacts, `designer-${name}.png`) });
}

async function setParam(page: Page, node: string, param: string, value: string | boolean): Promise<void> {
  await page.click(`[data-testid="node-${node}"] .an-head`);
  const field = page.locator(`[data-testid="param-${node}-${param}"]`);
  if (typeof value === 'boolean') await field.setChecked(value);
  else await field.selectOption(value);
}

async function main(): Promise<void> {
  fs.mkdirSync(artifacts, { recursive: true });
  execSync('npm run build:web', { cwd: root, stdio: 'ignore' });
  const srv = await startTestServer();
  const browser = await launch();
  try {
    const { page, errors: pageErrors } = await openDesigner(browser, srv.url);

    // An empty canvas.
    await page.click('[data-testid="open-menu"]');
    await page.click('[data-testid="new-graph"]');
    await page.waitForTimeout(300);
    assert.equal(await page.evaluate(() => window.__designer!.graph().nodes.length), 0);

    // The small model's half of R-Stitch, by drag and drop: node defaults are small, entropy > 0.03, hand off to large discarding.
    const start = await drop(page, 'start', 140, 70);
    const hSmall = await drop(page, 'entropy', 140, 210);
    const unsure = await drop(page, 'compare', 420, 210);
    const toLarge = await drop(page, 'handoff', 700, 210);
    await wire(page, hSmall, 'out', unsure, 'a');
    await wire(page, unsure, 'out', toLarge, 'when');

    // The large model receives requests but has no decision yet: an error on the hand-off node, deploy disabled.
    const issue = page.locator(`[data-testid="issue-${toLarge}"]`);
    await issue.waitFor();
    assert.match(await issue.innerText(), /missing_decision/);
    assert.ok(await page.locator('[data-testid="deploy"]').isDisabled(), 'deploy is disabled while an error stands');
    await shot(page, '1-error');

    // Fix: large hands back when its entropy is ≤ τ, keeping its token.
    const hLarge = await drop(page, 'entropy', 140, 420);
    const sure = await drop(page, 'compare', 420, 420);
    const toSmall = await drop(page, 'handoff', 700, 420);
    await setParam(page, hLarge, 'model', 'large');
    await setParam(page, sure, 'op', '<=');
    await setParam(page, toSmall, 'model', 'large');
    await setParam(page, toSmall, 'to', 'small');
    await setParam(page, toSmall, 'keep', true);
    await wire(page, hLarge, 'out', sure, 'a');
    await wire(page, sure, 'out', toSmall, 'when');
    assert.deepEqual(await page.evaluate(() => window.__designer!.errors()), [], 'the graph compiles');
    assert.equal(await issue.count(), 0, 'the error is gone from the node');

    // The draft runs before it is stored anywhere (model "draft" + tokenrouter_ir).
    await page.click('[data-testid="tab-playground"]');
    await page.fill('[data-testid="playground-prompt"]', '17+25=');
    await page.fill('[data-testid="playground-max"]', '24');
    await page.click('[data-testid="playground-run"]');
    await page.waitForFunction(() => ['done', 'error'].includes(window.__designer!.playground().status), undefined, { timeout: 20_000 });
    const draftRun = await page.evaluate(() => window.__designer!.playground());
    assert.equal(draftRun.status, 'done', `draft run: ${draftRun.message}`);
    assert.ok(draftRun.tokens.length > 0, 'the draft streamed tokens');
    await page.fill('[data-testid="playground-max"]', '64');
    await page.click('[data-testid="tab-inspect"]');

    // Name it and deploy with one click.
    await page.click('[data-testid="canvas"] .react-flow__controls-fitview');
    await page.locator('.react-flow__pane').click({ position: { x: 20, y: 20 } });
    await page.fill('[data-testid="graph-name"]', NAME);
    await page.locator('[data-testid="deploy"]:not([disabled])').waitFor();
    await page.click('[data-testid="deploy"]');
    await page.waitForFunction(() => window.__designer!.deploy().status !== 'deploying' && window.__designer!.deploy().status !== 'idle');
    const deploy = await page.evaluate(() => window.__designer!.deploy());
    assert.equal(deploy.status, 'deployed', `deploy failed: ${deploy.message}`);
    const registry = (await (await fetch(`${srv.url}/admin/algorithms`)).json()) as { algorithms: { name: string; activeVersion: number | null }[] };
    assert.equal(registry.algorithms.find((a) => a.name === NAME)?.activeVersion, deploy.version, 'the server runs the deployed version');
    await shot(page, '2-deployed');

    // Playground: run the deployed algorithm, watch coloured tokens, hover one.
    await page.click('[data-testid="tab-playground"]');
    await page.locator(`[data-testid="playground-target"] option[value="${NAME}"]`).waitFor({ state: 'attached' });
    await page.selectOption('[data-testid="playground-target"]', NAME);
    await page.fill('[data-testid="playground-prompt"]', '17+25=');
    await page.click('[data-testid="playground-run"]');
    await page.waitForFunction(() => ['done', 'error'].includes(window.__designer!.playground().status), undefined, { timeout: 20_000 });
    const pg = await page.evaluate(() => window.__designer!.playground());
    assert.equal(pg.status, 'done', `playground: ${pg.message}`);
    assert.ok(pg.tokens.length > 5, 'tokens streamed');
    const models = new Set(pg.tokens.map((t) => t.model));
    assert.ok(models.has('small') && models.has('large'), `both models wrote tokens (${[...models].join(', ')})`);
    const colours = await page.$$eval('[data-testid="pg-token"]', (els) => [
      ...new Set(els.map((e) => `${e.getAttribute('data-model')}=${getComputedStyle(e).borderBottomColor}`)),
    ]);
    const byModel = new Map(colours.map((c) => c.split('=') as [string, string]));
    assert.notEqual(byModel.get('small'), byModel.get('large'), 'each model has its own colour');
    await page.locator('[data-testid="pg-token"][data-model="large"]').first().hover();
    await page.locator('[data-testid="token-card"]').waitFor();
    assert.match(await page.locator('[data-testid="token-card"]').innerText(), /entropy/);
    await shot(page, '3-playground');

    // One id end to end: the run links to its request on the timeline, which opens with it selected.
    assert.ok(pg.requestId, 'the run knows its request id');
    const href = await page.locator('[data-testid="playground-timeline-link"]').getAttribute('href');
    assert.equal(href, `/timeline?request=${encodeURIComponent(pg.requestId!)}`);
    const tl = await page.context().newPage();
    await tl.goto(srv.url + href!);
    await tl.waitForFunction((id) => window.__timeline?.snapshot().selected?.requestId === id, pg.requestId, { timeout: 15_000 });
    const sel = await tl.evaluate(() => window.__timeline!.snapshot().selected!);
    assert.ok(sel.batches.length > 0, 'the selected request shows its batches');
    await tl.close();

    // Reload: the draft is still there.
    const before = await page.evaluate(() => window.__designer!.graph());
    await page.reload();
    await page.waitForFunction(() => window.__designer !== undefined);
    const after = await page.evaluate(() => window.__designer!.graph());
    assert.equal(after.name, NAME);
    assert.deepEqual(after.nodes, before.nodes);
    assert.deepEqual(after.edges, before.edges);
    assert.equal(await page.locator('[data-testid="save-state"]').innerText(), '✓ Saved');
    await page.waitForTimeout(500);
    await shot(page, '4-reloaded');

    // Undo / redo of a deletion, copy / paste with the keyboard.
    const count = () => page.evaluate(() => window.__designer!.graph().nodes.length);
    await page.click(`[data-testid="node-${start}"] .an-head`);
    await page.keyboard.press('Delete');
    assert.equal(await count(), 6, 'Delete removes the selected node');
    await page.keyboard.press('Control+z');
    assert.equal(await count(), 7, 'Ctrl+Z brings it back');
    await page.keyboard.press('Control+Shift+z');
    assert.equal(await count(), 6, 'Ctrl+Shift+Z deletes it again');
    await page.click('[data-testid="undo"]');
    await page.click(`[data-testid="node-${hSmall}"] .an-head`);
    await page.keyboard.press('Control+c');
    await page.keyboard.press('Control+v');
    assert.equal(await count(), 8, 'paste adds a copy');
    await page.click('[data-testid="undo"]');
    assert.equal(await count(), 7);

    // A second version: the versions list diffs its parameters, and rollback re-activates v1.
    await setParam(page, unsure, 'op', '>=');
    assert.equal(await page.locator('[data-testid="save-state"]').innerText(), '● Unsaved changes');
    await page.click('[data-testid="deploy"]');
    // The name exists now: the page asks before storing a second version.
    await page.locator('[data-testid="confirm-dialog"][data-kind="replace"] [data-testid="confirm-ok"]').click();
    await page.waitForFunction((v) => window.__designer!.deploy().version === v + 1, deploy.version!);
    await page.click('[data-testid="tab-versions"]');
    await page.click(`[data-testid="version-${deploy.version}"]`);
    const diff = page.locator('[data-testid="version-diff"]');
    await diff.waitFor();
    assert.match(await diff.innerText(), new RegExp(`${unsure}\\.op`));
    await page.click('[data-testid="rollback"]');
    await page.locator('[data-testid="confirm-dialog"][data-kind="rollback"] [data-testid="confirm-ok"]').click();
    await page.waitForFunction(
      async ([name, v]) =>
        ((await (await fetch('/admin/algorithms')).json()) as { algorithms: { name: string; activeVersion: number }[] }).algorithms.find((a) => a.name === name)
          ?.activeVersion === v,
      [NAME, deploy.version!] as const,
    );
    await page.locator(`[data-testid="version-${deploy.version}"] .active-badge`).waitFor();
    await shot(page, '5-versions');

    assert.deepEqual(pageErrors, [], 'no page errors');
    console.log(`designer e2e: ok (${pg.tokens.length} tokens from ${[...models].join(' + ')}, deployed v${deploy.version}, nodes ${start} … ${toSmall})`);
  } finally {
    await browser.close();
    await srv.close();
  }
}

main().catch((e) => {
  console.error('designer e2e: FAILED\n', e);
  process.exitCode = 1;
});
