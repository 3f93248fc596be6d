// Both pages against a real server in headless Chromium: axe-core finds no serious or critical violation (every inspector state too),
// palette items work from the keyboard, click-to-add never piles nodes up, and a refused connection names both port types.
// Run: npx tsx test/e2e/a11y.e2e.ts   (builds the web app first; screenshots go to test-artifacts/)
import { execSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AxeResults, ElementContext } from 'axe-core';
import type { Page } from 'playwright-core';
import { NODE_REGISTRY } from '../../shared/ir/nodeRegistry.ts';
import { startTestServer } from '../http/testService.ts';
import { Checks, launch, openDesigner } from './timelineHarness.ts';

declare global {
  interface Window {
    axe?: { run(context: ElementContext, options: object): Promise<AxeResults> };
  }
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const artifacts = path.join(root, 'test-artifacts');
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const checks = new Checks();

/** Runs axe on the page (or a part of it) and checks that nothing serious or critical is reported; prints each such violation. */
async function axe(page: Page, where: string, include?: string): Promise<void> {
  if (!(await page.evaluate(() => window.axe !== undefined))) await page.addScriptTag({ path: AXE });
  const violations = await page.evaluate(async (sel) => {
    const r = await window.axe!.run(sel ? { include: [sel] } : document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact ?? null, help: v.help, targets: v.nodes.map((n) => n.target.join(' ')) }));
  }, include ?? null);
  const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  for (const v of bad)
    console.log(
      `  ${v.impact} ${v.id}: ${v.help}\n    ${v.targets.slice(0, 8).join('\n    ')}${v.targets.length > 8 ? `\n    … ${v.targets.length - 8} more` : ''}`,
    );
  const minor = violations.filter((v) => !bad.includes(v)).map((v) => `${v.id} (${v.impact})`);
  checks.check(
    `axe: ${where} has no serious or critical violation`,
    bad.length === 0,
    bad.length ? bad.map((v) => v.id).join(', ') : minor.length ? `minor: ${minor.join(', ')}` : '',
  );
}

const nodeIds = (page: Page) => page.evaluate(() => window.__designer!.graph().nodes.map((n) => n.id));

async function newGraph(page: Page): Promise<void> {
  await page.click('[data-testid="open-menu"]');
  await page.click('[data-testid="new-graph"]');
  await page.waitForFunction(() => window.__designer!.graph().nodes.length === 0);
}

/** Every node type's inspector, the algorithm settings and the side tabs, each checked by axe. */
async function inspectorStates(page: Page): Promise<void> {
  await axe(page, 'designer as loaded');
  await newGraph(page);
  await axe(page, 'designer, empty canvas');
  await page.locator('.react-flow__pane').click({ position: { x: 20, y: 20 } });
  await axe(page, 'inspector: algorithm settings', '[data-testid="inspector"]');
  for (const { type } of NODE_REGISTRY.defs) {
    await newGraph(page);
    // A memory node first, so the reset list of a memory node has a choice to label.
    await page.evaluate(
      (t) => (window.__designer!.store.addNode('counter', { x: 0, y: 300 }), window.__designer!.store.addNode(t as 'counter', { x: 0, y: 0 })),
      type,
    );
    await page.locator('[data-testid="inspector"] .insp-head').waitFor();
    await axe(page, `inspector: ${type}`, '[data-testid="inspector"]');
  }
  await page.evaluate(() => window.__designer!.store.selectAll());
  await axe(page, 'inspector: several selected', '[data-testid="inspector"]');
  for (const tab of ['versions', 'playground']) {
    await page.click(`[data-testid="tab-${tab}"]`);
    await page.waitForTimeout(300);
    await axe(page, `designer, ${tab} tab`);
  }
  await page.click('[data-testid="tab-inspect"]');
}

async function keyboardAdds(page: Page): Promise<void> {
  await newGraph(page);
  await page.focus('[data-testid="palette-search"]');
  await page.keyboard.press('Tab');
  const focused = await page.evaluate(() => document.activeElement?.getAttribute('data-testid') ?? document.activeElement?.tagName ?? '');
  checks.check('Tab from the palette search reaches a palette item', focused.startsWith('palette-'), focused);
  const outline = await page.evaluate(() => {
    const s = document.activeElement?.classList.contains('palette-item') ? getComputedStyle(document.activeElement) : null;
    return s ? `${s.outlineStyle} ${s.outlineWidth}` : 'not a palette item';
  });
  checks.check('a focused palette item shows a focus ring', /^(solid|auto|dashed|dotted) [1-9]/.test(outline), outline);
  await page.keyboard.press('ArrowDown');
  const next = await page.evaluate(() => document.activeElement?.getAttribute('data-testid') ?? '');
  checks.check('Arrow down moves to the next palette item', next.startsWith('palette-') && next !== focused, next);
  await page.keyboard.press('ArrowUp');
  await page.screenshot({ path: path.join(artifacts, 'a11y-keyboard.png') });
  await page.keyboard.press('Enter');
  await page.waitForTimeout(200);
  checks.check('Enter on a palette item adds a node', (await nodeIds(page)).length === 1, await nodeIds(page));
  await page.focus('[data-testid="palette-entropy"]');
  await page.keyboard.press(' ');
  await page.waitForTimeout(200);
  checks.check('Space on a palette item adds a node', (await nodeIds(page)).length === 2, await nodeIds(page));
}

/** Clicks three palette items; returns their node ids. */
async function clickAddsApart(page: Page): Promise<string[]> {
  await newGraph(page);
  const ids: string[] = [];
  for (const type of ['entropy', 'compare', 'handoff']) {
    const before = await nodeIds(page);
    await page.click(`[data-testid="palette-${type}"]`);
    await page.waitForFunction((n) => window.__designer!.graph().nodes.length === n + 1, before.length);
    ids.push((await nodeIds(page)).find((id) => !before.includes(id))!);
    await page.waitForTimeout(150);
  }
  const boxes = await Promise.all(ids.map((id) => page.locator(`[data-testid="node-${id}"]`).boundingBox()));
  const canvas = (await page.locator('[data-testid="canvas"]').boundingBox())!;
  const overlaps: string[] = [];
  for (let i = 0; i < boxes.length; i++)
    for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i]!;
      const b = boxes[j]!;
      if (a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height) overlaps.push(`${ids[i]}/${ids[j]}`);
    }
  checks.check(
    'three click-added nodes do not overlap',
    boxes.every(Boolean) && overlaps.length === 0,
    overlaps.length ? overlaps : boxes.map((b) => b && `${Math.round(b.x)},${Math.round(b.y)} ${Math.round(b.width)}×${Math.round(b.height)}`),
  );
  const inside = boxes.every(
    (b) => b && b.x >= canvas.x && b.y >= canvas.y && b.x + b.width <= canvas.x + canvas.width && b.y + b.height <= canvas.y + canvas.height,
  );
  checks.check('they sit in view, near its centre', inside);
  return ids;
}

/** Drags from a number output onto a boolean input: refused, with a message naming both port types. */
async function refusedConnection(page: Page, [entropy, , handoff]: string[]): Promise<void> {
  const a = await page.locator(`[data-testid="out-${entropy}-out"]`).boundingBox();
  const b = await page.locator(`[data-testid="in-${handoff}-when"]`).boundingBox();
  if (!a || !b) return checks.check('handles of the refused connection are on screen', false);
  await page.mouse.move(a.x + a.width / 2, a.y + a.height / 2);
  await page.mouse.down();
  await page.mouse.move((a.x + b.x) / 2, (a.y + b.y) / 2, { steps: 6 });
  await page.mouse.move(b.x + b.width / 2, b.y + b.height / 2, { steps: 6 });
  await page.mouse.up();
  checks.check('the number → boolean connection is refused', (await page.evaluate(() => window.__designer!.graph().edges.length)) === 0);
  const status = page.locator('[data-testid="connect-refusal"]');
  const text = (await status.count()) ? await status.innerText() : '';
  const role = (await status.count()) ? await status.getAttribute('role') : null;
  checks.check(
    'the refusal says why, naming both port types',
    /number/.test(text) && /boolean/.test(text) && text.includes(entropy) && text.includes(handoff),
    text,
  );
  checks.check('the refusal is announced (role="status")', role === 'status', role);
  await page.screenshot({ path: path.join(artifacts, 'a11y-refused.png') });
}

async function timeline(page: Page, url: string): Promise<void> {
  await page.goto(`${url}/timeline`);
  await page.waitForFunction(() => window.__timeline?.snapshot().connection === 'open', undefined, { timeout: 90_000 });
  await axe(page, 'timeline, no data yet');
  const res = await page.evaluate(
    async () =>
      (
        await fetch('/admin/load', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ concurrency: 4, requests: 8, maxTokens: 24 }),
        })
      ).status,
  );
  checks.check('load started for the timeline', res === 202, res);
  await page.waitForFunction(() => window.__timeline!.snapshot().store.requests >= 4, undefined, { timeout: 60_000 });
  await page.locator('[data-testid="request-list"] button').first().click();
  await page.waitForTimeout(500);
  await axe(page, 'timeline with a request selected');
  await page.screenshot({ path: path.join(artifacts, 'a11y-timeline.png') });
}

async function main(): Promise<void> {
  fs.mkdirSync(artifacts, { recursive: true });
  execSync('npm run build:web', { cwd: root, stdio: 'ignore' });
  const srv = await startTestServer();
  const browser = await launch();
  try {
    const { page, errors: pageErrors } = await openDesigner(browser, srv.url);
    await inspectorStates(page);
    await keyboardAdds(page);
    await refusedConnection(page, await clickAddsApart(page));
    await page.screenshot({ path: path.join(artifacts, 'a11y-designer.png') });
    await timeline(page, srv.url);
    checks.check('no page errors', pageErrors.length === 0, pageErrors);
  } finally {
    await browser.close();
    await srv.close();
  }
  checks.finish();
}

main().catch((e) => {
  console.error('a11y e2e: FAILED\n', e);
  process.exitCode = 1;
});
