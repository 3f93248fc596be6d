// Safe deploys in headless Chromium against a real server: replacing an existing name asks first with the diff, rollback asks and the canvas follows the live version, delete asks and removes it.
// Run: npx tsx test/e2e/deploys.e2e.ts   (builds the web app first; screenshots go to test-artifacts/)
import assert from 'node:assert/strict';
import { execSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launch, openDesigner } from './timelineHarness.ts';
import { startTestServer } from '../http/testService.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const artifacts = path.join(root, 'test-artifacts');

type Listed = { name: string; activeVersion: number | null; versions: { version: number }[] };

async function main(): Promise<void> {
  fs.mkdirSync(artifacts, { recursive: true });
  execSync('npm run build:web', { cwd: root, stdio: 'ignore' });
  const srv = await startTestServer();
  const registry = async () => ((await (await fetch(`${srv.url}/admin/algorithms`)).json()) as { algorithms: Listed[] }).algorithms;
  const citer = async () => (await registry()).find((a) => a.name === 'citer');
  const browser = await launch();
  try {
    const { page, errors: pageErrors } = await openDesigner(browser, srv.url);
    const dialog = page.locator('[data-testid="confirm-dialog"]');
    const shot = (name: string) => page.screenshot({ path: path.join(artifacts, `deploys-${name}.png`) });
    const op = () => page.evaluate(() => window.__designer!.graph().nodes.find((n) => n.id === 'unsure')!.params.op);

    // A fresh page: its draft is the R-Stitch example, which the seeded built-in r-stitch v1 runs (issue 35 item 3).
    await page.locator('[data-testid="deploy-status"]').filter({ hasText: 'Live: r-stitch v1' }).waitFor();
    await page.waitForTimeout(500);
    assert.equal(await page.locator('[data-testid="draft-differs"]').count(), 0, 'a fresh load does not say Draft ≠ v1');
    assert.ok(await page.locator('[data-testid="deploy"]').isDisabled(), 'Deploy is off while the draft is what runs');
    assert.equal(await page.locator('[data-testid="deploy-blocker"]').innerText(), 'Live v1 already runs this draft');
    await shot('0-fresh');

    // A graph named like the seeded built-in citer (the R-Stitch example, renamed): Deploy asks instead of making it v2 silently.
    await page.click('[data-testid="open-menu"]');
    await page.click('[data-testid="open-example-r-stitch"]');
    await page.locator('.react-flow__pane').click({ position: { x: 20, y: 20 } });
    await page.fill('[data-testid="graph-name"]', 'citer');
    await page.locator('[data-testid="deploy-status"]').filter({ hasText: 'Live: citer v1' }).waitFor();
    await page.click('[data-testid="deploy"]');
    await dialog.and(page.locator('[data-kind="replace"]')).waitFor();
    assert.ok(await dialog.evaluate((d) => (d as HTMLDialogElement).open && d.matches(':modal')), 'a modal <dialog> is open');
    const text = await dialog.innerText();
    assert.match(text, /citer already exists \(v1 live, 1 version\)/);
    assert.match(text, /stores this graph as v2/);
    assert.match(text, /built-in/);
    assert.match(await page.locator('[data-testid="confirm-diff"]').innerText(), /\+ unsure/, 'the diff lists the graph nodes the built-in lacks');
    await shot('1-replace-builtin');
    // Cancel stores nothing.
    await page.click('[data-testid="confirm-cancel"]');
    await dialog.waitFor({ state: 'hidden' });
    assert.equal((await citer())!.versions.length, 1, 'cancel stored nothing');
    // Confirming deploys v2.
    await page.click('[data-testid="deploy"]');
    await page.locator('[data-testid="confirm-ok"]').filter({ hasText: 'Deploy as v2' }).click();
    await page.waitForFunction(() => window.__designer!.deploy().status === 'deployed' && window.__designer!.deploy().version === 2);
    assert.equal((await citer())!.activeVersion, 2);

    // An edit: the toolbar flags the draft as differing from live; Deploy shows exactly that change.
    await page.click('[data-testid="node-unsure"] .an-head');
    await page.locator('[data-testid="param-unsure-op"]').selectOption('>=');
    await page.locator('[data-testid="draft-differs"]').waitFor();
    await page.click('[data-testid="deploy"]');
    await dialog.and(page.locator('[data-kind="replace"]')).waitFor();
    const diff = await page.locator('[data-testid="confirm-diff"]').innerText();
    assert.match(diff, /unsure\.op\s+>\s+>=/, `diff of v2 → draft: ${diff}`);
    assert.equal(diff.trim().split('\n').length, 1, 'one changed parameter, nothing else');
    await shot('2-replace-diff');
    await page.locator('[data-testid="confirm-ok"]').filter({ hasText: 'Deploy as v3' }).click();
    await page.waitForFunction(() => window.__designer!.deploy().version === 3);
    assert.equal(await page.locator('[data-testid="draft-differs"]').count(), 0, 'the deployed draft is what runs');

    // Rollback asks (v3 → v2, with the diff), then the canvas shows v2, the live version.
    await page.click('[data-testid="tab-versions"]');
    await page.click('[data-testid="rollback"]');
    await dialog.and(page.locator('[data-kind="rollback"]')).waitFor();
    assert.match(await dialog.innerText(), /goes back from v3 to v2/);
    assert.match(await page.locator('[data-testid="confirm-diff"]').innerText(), /unsure\.op\s+>=\s+>/);
    await shot('3-rollback');
    await page.locator('[data-testid="confirm-ok"]').filter({ hasText: 'Roll back to v2' }).click();
    await page.locator('[data-testid="deploy-status"]').filter({ hasText: 'Live: citer v2' }).waitFor();
    assert.equal((await citer())!.activeVersion, 2);
    await page.waitForFunction(() => window.__designer!.graph().nodes.find((n) => n.id === 'unsure')!.params.op === '>');
    assert.equal(await op(), '>', 'the canvas shows live v2');
    assert.equal(await page.locator('[data-testid="draft-differs"]').count(), 0);

    // Back to the built-in v1, which has no graph: the canvas keeps the draft and the toolbar flags it.
    await page.click('[data-testid="rollback"]');
    await page.locator('[data-testid="confirm-ok"]').filter({ hasText: 'Roll back to v1' }).click();
    await page.locator('[data-testid="deploy-status"]').filter({ hasText: 'Live: citer v1' }).waitFor();
    await page.locator('[data-testid="draft-differs"]').filter({ hasText: 'Draft ≠ v1' }).waitFor();

    // Escape is a no.
    await page.click('[data-testid="delete-algorithm"]');
    await dialog.and(page.locator('[data-kind="delete"]')).waitFor();
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    assert.ok(await citer(), 'Escape deleted nothing');

    // Delete asks, then citer is gone from the registry, the playground's list and /v1/models.
    await page.click('[data-testid="delete-algorithm"]');
    assert.match(await dialog.innerText(), /Removes citer and its 3 versions/);
    await shot('4-delete');
    await page.locator('[data-testid="confirm-ok"]').filter({ hasText: 'Delete citer' }).click();
    await page.locator('[data-testid="versions"]').filter({ hasText: '“citer” has not been deployed yet' }).waitFor();
    assert.equal(await citer(), undefined);
    const models = ((await (await fetch(`${srv.url}/v1/models`)).json()) as { data: { id: string }[] }).data.map((m) => m.id);
    assert.ok(!models.includes('citer'), '/v1/models no longer lists citer');
    await page.click('[data-testid="tab-playground"]');
    assert.equal(await page.locator('[data-testid="playground-target"] option[value="citer"]').count(), 0, 'the playground no longer offers citer');
    assert.equal(await page.locator('[data-testid="deploy-status"]').count(), 0, 'nothing is live under the draft’s name');

    // The default algorithm cannot be deleted.
    await page.click('[data-testid="tab-versions"]');
    await page.selectOption('[data-testid="versions-algorithm"]', 'r-stitch');
    assert.ok(await page.locator('[data-testid="delete-algorithm"]').isDisabled(), 'Delete is disabled for the default algorithm');

    assert.deepEqual(pageErrors, [], 'no page errors');
    console.log(
      'deploys e2e: ok (replace asked twice with its diff, cancel and Escape stored nothing, rollback v3 → v2 → v1 with the canvas on v2, delete removed citer, default not deletable)',
    );
  } finally {
    await browser.close();
    await srv.close();
  }
}

main().catch((e) => {
  console.error('deploys e2e: FAILED\n', e);
  process.exitCode = 1;
});
