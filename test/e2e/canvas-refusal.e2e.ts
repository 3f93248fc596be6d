// Issue 53 item 16: dragging a number output onto a boolean input shows a red preview while held and says why when released; click-to-add never places a node across an edge.
// Run: npx tsx test/e2e/canvas-refusal.e2e.ts   (builds the web app first; screenshots /tmp/ui-refusal-*.png)
import assert from 'node:assert/strict';
import { execSync } from 'node:child_process';
import { drop } from './canvasActions.ts';
import { ROOT, launch, openDesigner } from './timelineHarness.ts';
import { startTestServer } from '../http/testService.ts';

async function main(): Promise<void> {
  if (!process.env.SKIP_BUILD) execSync('npm run build:web', { cwd: ROOT, stdio: 'ignore' });
  const srv = await startTestServer();
  const browser = await launch();
  try {
    const { page, errors } = await openDesigner(browser, srv.url);
    await page.click('[data-testid="open-menu"]');
    await page.click('[data-testid="new-graph"]');
    const h = await drop(page, 'entropy', 160, 200);
    const go = await drop(page, 'handoff', 600, 260);
    const a = (await page.locator(`[data-testid="out-${h}-out"]`).boundingBox())!;
    const b = (await page.locator(`[data-testid="in-${go}-when"]`).boundingBox())!;
    await page.mouse.move(a.x + a.width / 2, a.y + a.height / 2);
    await page.mouse.down();
    await page.mouse.move((a.x + b.x) / 2, (a.y + b.y) / 2, { steps: 6 });
    await page.mouse.move(b.x + b.width / 2, b.y + b.height / 2, { steps: 6 });
    // Held over the boolean input: the preview is red (the line and the handle).
    const line = page.locator('.react-flow__connection.invalid path');
    assert.equal(await line.count(), 1, 'the connection line is marked invalid');
    const stroke = await line.evaluate((p) => getComputedStyle(p).stroke);
    assert.equal(stroke, 'rgb(244, 100, 93)', `the line is red: ${stroke}`);
    const ring = await page.locator(`[data-testid="in-${go}-when"]`).evaluate((el) => getComputedStyle(el).boxShadow);
    assert.match(ring, /rgba?\(244, 100, 93/, `the input under the pointer is ringed red: ${ring}`);
    await page.screenshot({ path: '/tmp/ui-refusal-1-preview.png' });
    await page.mouse.up();
    const said = page.locator('[data-testid="connect-refusal"]');
    assert.match(await said.innerText(), /number/, 'released: the refusal names the types');
    assert.match(await said.innerText(), /boolean/);
    assert.equal((await page.evaluate(() => window.__designer!.graph().edges)).length, 0);
    await page.screenshot({ path: '/tmp/ui-refusal-2-said.png' });

    // Click-to-add on the R-Stitch example, whose edges cross the view's centre: no edge runs through a new node.
    await page.click('[data-testid="open-menu"]');
    await page.click('[data-testid="open-example-r-stitch"]');
    await page.waitForTimeout(600); // the fit-view animation
    for (const type of ['entropy', 'compare', 'constant', 'maxProb', 'and', 'or', 'not', 'flag', 'counter', 'stay']) {
      const before = await page.evaluate(() => window.__designer!.graph().nodes.map((n) => n.id));
      await page.click(`[data-testid="palette-${type}"]`);
      await page.waitForTimeout(200);
      const added = (await page.evaluate(() => window.__designer!.graph().nodes.map((n) => n.id))).filter((id) => !before.includes(id));
      assert.equal(added.length, 1);
      const crossing = await page.evaluate((id) => {
        const node = document.querySelector(`.react-flow__node[data-id="${id}"]`)!.getBoundingClientRect();
        const hits: string[] = [];
        for (const path of document.querySelectorAll<SVGPathElement>('.react-flow__edge-path')) {
          const m = path.getScreenCTM()!;
          for (let at = 0; at <= path.getTotalLength(); at += 4) {
            const p = new DOMPoint(path.getPointAtLength(at).x, path.getPointAtLength(at).y).matrixTransform(m);
            if (p.x > node.left && p.x < node.right && p.y > node.top && p.y < node.bottom) {
              hits.push(path.closest('.react-flow__edge')!.getAttribute('data-id') ?? '?');
              break;
            }
          }
        }
        return hits;
      }, added[0]);
      assert.deepEqual(crossing, [], `edges through the added ${type}`);
    }
    await page.screenshot({ path: '/tmp/ui-refusal-3-click-add.png' });

    assert.deepEqual(errors, [], 'no page errors');
    console.log('canvas-refusal e2e: ok');
  } finally {
    await browser.close();
    await srv.close();
  }
}

main().catch((e) => {
  console.error('canvas-refusal e2e: FAILED\n', e);
  process.exitCode = 1;
});
