// Issue 53 item 17: the playground's chips show a character that spans tokens whole on its first chip and mark the continuation, instead of "��".
// The stream is what a byte-level tokenizer's server sends (each token decoded alone: "�"; the content decoded incrementally: whole
// characters), served to the page through a route so that the case does not need such a model. Screenshot /tmp/ui-playground-chars.png.
// Run: npx tsx test/e2e/playground-chars.e2e.ts   (builds the web app first)
import assert from 'node:assert/strict';
import { execSync } from 'node:child_process';
import { ROOT, launch, openDesigner } from './timelineHarness.ts';
import { startTestServer } from '../http/testService.ts';

const token = (text: string, model: string) => ({
  id: 7,
  text,
  model,
  signals: { entropy: 0.01, maxProb: 0.99, margin: 0.9, heads: {} },
  decision: 'stay',
  kept: true,
});
const chunk = (content: string, tokens: ReturnType<typeof token>[], finish: string | null = null) =>
  `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content }, finish_reason: finish }], tokenrouter: { tokens } })}\n\n`;

async function main(): Promise<void> {
  if (!process.env.SKIP_BUILD) execSync('npm run build:web', { cwd: ROOT, stdio: 'ignore' });
  const srv = await startTestServer();
  const browser = await launch();
  try {
    const { page, errors } = await openDesigner(browser, srv.url);
    await page.route('**/v1/chat/completions', (route) =>
      route.fulfill({
        status: 200,
        headers: { 'content-type': 'text/event-stream', 'x-request-id': 'chatcmpl-e2e' },
        body:
          chunk('Caf', [token('Caf', 'small')]) +
          // é in two tokens, one chunk each: the first decodes to nothing yet
          chunk('', [token('\uFFFD', 'small')]) +
          chunk('é', [token('\uFFFD', 'small')]) +
          chunk(' ', [token(' ', 'large')]) +
          // 日 in three tokens within one chunk, with the next clean token
          chunk('日!', [token('\uFFFD', 'large'), token('\uFFFD', 'large'), token('\uFFFD', 'large'), token('!', 'large')], 'stop') +
          'data: [DONE]\n\n',
      }),
    );
    await page.click('[data-testid="tab-playground"]');
    await page.click('[data-testid="playground-run"]');
    await page.locator('[data-testid="playground-status"][data-status="done"]').waitFor();
    const chips = await page
      .locator('[data-testid="pg-token"]')
      .evaluateAll((els) => els.map((e) => ({ text: e.textContent, cont: e.getAttribute('data-continuation') === 'true' })));
    assert.deepEqual(
      chips.map((c) => (c.cont ? '+' : c.text)),
      ['Caf', 'é', '+', ' ', '日', '+', '+', '!'],
    );
    const output = await page.locator('[data-testid="playground-output"]').innerText();
    assert.ok(!output.includes('\uFFFD'), `no replacement character on the page: ${JSON.stringify(output)}`);
    await page.locator('[data-testid="playground-output"]').screenshot({ path: '/tmp/ui-playground-chars.png' });
    assert.deepEqual(errors, [], 'no page errors');
    console.log('playground-chars e2e: ok (é over two chunks and 日 over three tokens shown whole, continuations marked)');
  } finally {
    await browser.close();
    await srv.close();
  }
}

main().catch((e) => {
  console.error('playground-chars e2e: FAILED\n', e);
  process.exitCode = 1;
});
