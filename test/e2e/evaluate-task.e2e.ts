// The Evaluate tab on a task file of another shape, in headless Chromium against a real server: pick a regex-graded task folder by path, evaluate a draft on it, see the score the task's grader gives; a bad path says why.
// Run: npx tsx test/e2e/evaluate-task.e2e.ts   (builds the web app first; screenshots go to test-artifacts/evaluate-task-*.png)
import assert from 'node:assert/strict';
import { execSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ARTIFACTS, ROOT, launch, openDesigner } from './timelineHarness.ts';
import { startTestServer } from '../http/testService.ts';
import { EVALUATE_BOUNDS } from '../../shared/api/evaluate.ts';

const N = 8;
/** What the panel asks for when it names no limit (EVALUATE_BOUNDS.defaultMaxTokens): small's answers are read this long. */
const MAX_TOKENS = EVALUATE_BOUNDS.defaultMaxTokens;

/** A graph that keeps every token on small: its answers are small's, which the chat API gives too. */
const SMALL_ALONE = {
  schemaVersion: 1,
  kind: 'tokenrouter.graph',
  name: 'small-alone',
  nodes: [
    { id: 'start', type: 'start', params: { model: 'small' }, position: { x: 140, y: 70 } },
    { id: 'stay', type: 'stay', params: { model: 'small', priority: 10 }, position: { x: 140, y: 220 } },
  ],
  edges: [],
};

async function main(): Promise<void> {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  execSync('npm run build:web', { cwd: ROOT, stdio: 'ignore' });
  const srv = await startTestServer({ latency: { small: 1, large: 3 } });
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-e2e-task-'));
  const browser = await launch();
  try {
    // The task: small's answers, graded on their third and fourth digits; right on even problems, wrong on odd ones.
    const lines: unknown[] = [];
    for (let i = 0; i < N; i++) {
      const messages = [{ role: 'user', content: `${20 + i}*${4 + i}` }];
      const res = await fetch(`${srv.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ model: 'small', messages, max_tokens: MAX_TOKENS, temperature: 0 }),
      });
      assert.equal(res.status, 200);
      const text = ((await res.json()) as { choices: { message: { content: string } }[] }).choices[0].message.content;
      const pair = text.slice(2, 4);
      assert.match(pair, /^\d\d$/);
      lines.push(i % 2 === 0 ? { messages, answer: pair } : { prompt: messages[0].content, answer: `${pair[0]}${(Number(pair[1]) + 1) % 10}` });
    }
    const dir = path.join(tmp, 'digits');
    fs.mkdirSync(dir);
    fs.writeFileSync(
      path.join(dir, 'task.json'),
      JSON.stringify({ name: 'digits-3-4', description: 'the third and fourth digits', grader: { kind: 'regex', pattern: '^\\d\\d(?<answer>\\d\\d)' } }),
    );
    fs.writeFileSync(path.join(dir, 'validation.jsonl'), `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);

    const { page, errors } = await openDesigner(browser, srv.url);
    await page.evaluate((g) => window.__designer!.store.importJson(JSON.stringify(g)), SMALL_ALONE);
    await page.waitForFunction(() => window.__designer!.graph().name === 'small-alone' && window.__designer!.errors().length === 0);
    await page.click('[data-testid="tab-evaluate"]');
    // the default bundled task first, with its validation set's size
    await page.waitForFunction(() => document.querySelector('[data-testid="ev-problems"]')?.getAttribute('max') === '1000');
    assert.equal(await page.locator('[data-testid="ev-task"]').inputValue(), 'word-problems');

    // A path that holds no task says so at once.
    await page.selectOption('[data-testid="ev-task"]', { label: 'task folder on the server…' });
    await page.fill('[data-testid="ev-task-path"]', path.join(tmp, 'nowhere'));
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => window.__designer!.evaluation().status === 'error');
    assert.match(await page.locator('[data-testid="ev-status"]').innerText(), /no file or folder at .*nowhere/);

    // The task folder: its bounds, then the run and the grade.
    await page.fill('[data-testid="ev-task-path"]', dir);
    await page.keyboard.press('Enter');
    await page.waitForFunction((n) => document.querySelector('[data-testid="ev-problems"]')?.getAttribute('max') === String(n), N);
    assert.equal(await page.locator('[data-testid="ev-problems"]').inputValue(), String(N), "the problem count comes down to the task's set");
    await page.screenshot({ path: path.join(ARTIFACTS, 'evaluate-task-1-picked.png') });
    await page.click('[data-testid="ev-run"]');
    await page.waitForFunction(() => window.__designer!.evaluation().status !== 'running' && window.__designer!.evaluation().result !== null, undefined, {
      timeout: 60_000,
    });
    const ev = await page.evaluate(() => window.__designer!.evaluation());
    assert.equal(ev.status, 'done', `evaluation: ${ev.message}`);
    assert.equal(ev.result!.task, 'digits-3-4');
    assert.equal(ev.result!.correct, N / 2, 'right exactly where the reference is the captured pair');
    const shown = await page.locator('[data-testid="ev-accuracy"]').innerText();
    assert.match(shown, new RegExp(`^50\\.0% \\(${N / 2}/${N} of task digits-3-4, graded by regex\\)$`));
    await page.locator('[data-testid="ev-accuracy"]').scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(ARTIFACTS, 'evaluate-task-2-score.png') });
    assert.deepEqual(errors, [], 'no page errors');
    console.log(`evaluate-task e2e: ok (${shown})`);
  } finally {
    await browser.close();
    await srv.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error('evaluate-task e2e: FAILED\n', e);
  process.exitCode = 1;
});
