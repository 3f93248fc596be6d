// Canvas actions the designer e2e scripts share: drop a palette entry, wire two handles, as a user does with the mouse.
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';

/** Drags a palette entry onto the canvas at (x, y) relative to the canvas; returns the new node's id. */
export async function drop(page: Page, type: string, x: number, y: number): Promise<string> {
  const before = await page.evaluate(() => window.__designer!.graph().nodes.map((n) => n.id));
  await page.dragAndDrop(`[data-testid="palette-${type}"]`, '[data-testid="canvas"]', { targetPosition: { x, y } });
  const after = await page.evaluate(() => window.__designer!.graph().nodes.map((n) => n.id));
  const added = after.filter((id) => !before.includes(id));
  assert.equal(added.length, 1, `dropping ${type} adds one node`);
  return added[0];
}

/** Connects an output handle to an input handle with the mouse, as a user does. */
export async function wire(page: Page, from: string, fromPort: string, to: string, toPort: string): Promise<void> {
  const a = await page.locator(`[data-testid="out-${from}-${fromPort}"]`).boundingBox();
  const b = await page.locator(`[data-testid="in-${to}-${toPort}"]`).boundingBox();
  assert.ok(a && b, `handles ${from}.${fromPort} and ${to}.${toPort} are on screen`);
  await page.mouse.move(a.x + a.width / 2, a.y + a.height / 2);
  await page.mouse.down();
  await page.mouse.move((a.x + b.x) / 2, (a.y + b.y) / 2, { steps: 6 });
  await page.mouse.move(b.x + b.width / 2, b.y + b.height / 2, { steps: 6 });
  await page.mouse.up();
  const edges = await page.evaluate(() => window.__designer!.graph().edges);
  assert.ok(
    edges.some((e) => e.source === from && e.sourceHandle === fromPort && e.target === to && e.targetHandle === toPort),
    `edge ${from}.${fromPort} → ${to}.${toPort} exists`,
  );
}
