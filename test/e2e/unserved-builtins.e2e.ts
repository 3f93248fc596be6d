// Issue 53 items 5 and 4: on models a seeded built-in cannot run, the designer says "Not served" (not "Live"), the playground and the timeline's prediction check offer only served algorithms (the check on the default), and "Compare with served" runs each entry or says why not, going on past failures.
// Run: npx tsx test/e2e/unserved-builtins.e2e.ts   (builds the web app first; screenshots go to /tmp/ui-unserved-*.png)
import assert from 'node:assert/strict';
import { execSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, launch, openDesigner } from './timelineHarness.ts';
import { startTestServer } from '../http/testService.ts';

type Listed = { name: string; served: boolean; isDefault: boolean };

async function main(): Promise<void> {
  if (!process.env.SKIP_BUILD) execSync('npm run build:web', { cwd: ROOT, stdio: 'ignore' });
  // Seeded on three models, then served on two: the built-ins that need the third stay stored but cannot run.
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-e2e-unserved-'));
  await (await startTestServer({ dataDir })).close();
  const srv = await startTestServer({ dataDir, config: { models: [{ name: 'small' }, { name: 'large' }] } });
  const list = ((await (await fetch(`${srv.url}/admin/algorithms`)).json()) as { algorithms: Listed[] }).algorithms;
  const unserved = list.filter((a) => !a.served).map((a) => a.name);
  const served = list.filter((a) => a.served).map((a) => a.name);
  assert.ok(unserved.length > 0 && served.includes('citer'), `some built-ins unserved: ${unserved.join(', ')}`);
  const browser = await launch();
  try {
    const { page, errors } = await openDesigner(browser, srv.url);

    // Item 5: the toolbar does not call an unserved built-in live.
    await page.fill('[data-testid="graph-name"]', unserved[0]);
    const status = page.locator('[data-testid="deploy-status"]');
    await status.filter({ hasText: `Not served: ${unserved[0]} v1` }).waitFor();
    assert.equal(await page.locator('[data-testid="deploy-status"]', { hasText: 'Live:' }).count(), 0);
    await page.screenshot({ path: '/tmp/ui-unserved-1-toolbar.png' });
    await page.fill('[data-testid="graph-name"]', 'r-stitch');
    await status.filter({ hasText: 'Live: r-stitch v1' }).waitFor();

    // The playground offers served algorithms only.
    await page.click('[data-testid="tab-playground"]');
    const targets = await page.locator('[data-testid="playground-target"] option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value));
    for (const n of unserved) assert.ok(!targets.includes(n), `playground offers unserved ${n}: ${targets.join(', ')}`);
    for (const n of served) assert.ok(targets.includes(n), `playground offers served ${n}`);

    // Item 4: citer goes away after the page listed it (a 404 at run time); the unserved ones cannot run; the rest go on.
    assert.equal((await fetch(`${srv.url}/admin/algorithms/citer`, { method: 'DELETE' })).status, 200);
    await page.click('[data-testid="tab-evaluate"]');
    await page.fill('[data-testid="ev-problems"]', '3');
    const compare = page.locator('[data-testid="ev-compare"]');
    const total = Number(/\((\d+)\)/.exec(await compare.innerText())![1]);
    await compare.click();
    await page.waitForFunction(
      () => {
        const e = window.__designer!.evaluation();
        return e.status !== 'running' && e.queue.length === 0 && e.notCompared.length > 0;
      },
      undefined,
      { timeout: 120_000 },
    );
    const ev = await page.evaluate(() => window.__designer!.evaluation());
    const skipped = ev.notCompared.map((n) => n.name).sort();
    assert.deepEqual(skipped, [...unserved, 'citer'].sort(), `not compared: ${JSON.stringify(ev.notCompared)}`);
    assert.match(ev.notCompared.find((n) => n.name === 'citer')!.why, /404|does not exist/);
    assert.equal(ev.points.length, total - skipped.length, 'every other entry was evaluated');
    assert.ok(ev.points.some((p) => p.label === 'r-stitch') && ev.points.some((p) => p.label === 'large'));
    const listed = await page.locator('[data-testid="ev-not-compared"]').innerText();
    for (const n of skipped) assert.ok(listed.includes(n), `the panel lists ${n}`);
    await page.screenshot({ path: '/tmp/ui-unserved-2-compare.png' });

    // Item 5, timeline: the prediction check lists served algorithms, on the default one.
    await page.goto(`${srv.url}/timeline`);
    const pick = page.locator('[data-testid="prediction-algorithm"]');
    await page.waitForFunction(() => (document.querySelector('[data-testid="prediction-algorithm"]') as HTMLSelectElement | null)?.options.length);
    const options = await pick.locator('option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value));
    for (const n of unserved) assert.ok(!options.includes(n), `prediction check offers unserved ${n}`);
    assert.equal(await pick.inputValue(), list.find((a) => a.isDefault)!.name, 'the check starts on the default algorithm');
    await page.screenshot({ path: '/tmp/ui-unserved-3-timeline.png' });

    assert.deepEqual(errors, [], 'no page errors');
    console.log(
      `unserved-builtins e2e: ok (not served: ${unserved.join(', ')}; compared ${ev.points.length} of ${total}, citer's 404 and the unserved said why)`,
    );
  } finally {
    await browser.close();
    await srv.close();
  }
}

main().catch((e) => {
  console.error('unserved-builtins e2e: FAILED\n', e);
  process.exitCode = 1;
});
