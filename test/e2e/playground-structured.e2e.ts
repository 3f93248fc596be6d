// Issue 54 item 5: the playground's response format and tools on a real listening server: a schema that is not JSON is named inline and nothing is sent; a valid one goes out as response_format; tool calls show as cards, reasoning apart, cached prompt tokens with the usage, and JSON output indented with each token still in its model's colour.
// The answers with tool calls and reasoning are served to the page through a route (the server side is built in parallel); the first run goes to the real server.
// Run: npx tsx test/e2e/playground-structured.e2e.ts   (builds the web app first; screenshots test-artifacts/playground-*.png)
import { execSync } from 'node:child_process';
import { createRequire } from 'node:module';
import type { AxeResults, ElementContext } from 'axe-core';
import type { Page, Request } from 'playwright-core';
import { startTestServer } from '../http/testService.ts';
import { artifactPath, Checks, launch, openDesigner, ROOT } from './timelineHarness.ts';

declare global {
  interface Window {
    axe?: { run(context: ElementContext, options: object): Promise<AxeResults> };
  }
}

const checks = new Checks();
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

/** axe-core on the playground: nothing serious or critical (as a11y.e2e.ts checks the rest of the page). */
async function axe(page: Page, where: string): Promise<void> {
  if (!(await page.evaluate(() => window.axe !== undefined))) await page.addScriptTag({ path: AXE });
  // the pointer left on Run would have axe judge the button's hover colours
  await page.mouse.move(0, 0);
  const bad = await page.evaluate(async () => {
    const r = await window.axe!.run({ include: [['[data-testid="playground"]']] }, { resultTypes: ['violations'] });
    return r.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  });
  checks.check(`axe: ${where} has no serious or critical violation`, bad.length === 0, bad);
}

const token = (text: string, model: string) => ({
  id: 7,
  text,
  model,
  signals: { entropy: 0.2, maxProb: 0.9, margin: 0.7, heads: {} },
  decision: 'stay',
  kept: true,
});
const sse = (chunks: unknown[]) => chunks.map((c) => `data: ${typeof c === 'string' ? c : JSON.stringify(c)}\n\n`).join('');
const choice = (delta: Record<string, unknown>, finish: string | null = null) => ({
  id: 'chatcmpl-e2e',
  object: 'chat.completion.chunk',
  choices: [{ index: 0, delta, finish_reason: finish }],
});

const SCHEMA = {
  title: 'Forecast',
  type: 'object',
  properties: { city: { type: 'string' }, days: { type: 'array', items: { type: 'integer' } } },
  required: ['city', 'days'],
};
// The answer {"city": "Paris", "days": [1, 2]} as two models wrote it, compact as a grammar-constrained model writes JSON.
const PIECES: [string, string][] = [
  ['{"', 'small'],
  ['city', 'small'],
  ['":"', 'small'],
  ['Paris', 'large'],
  ['","', 'small'],
  ['days', 'small'],
  ['":[', 'small'],
  ['1', 'large'],
  [',', 'small'],
  ['2', 'large'],
  [']}', 'small'],
];
const JSON_ANSWER = sse([
  {
    ...choice({ role: 'assistant', reasoning_content: 'The user wants a forecast. ' }),
    tokenrouter: { tokens: [token('The user wants a forecast. ', 'large')] },
  },
  {
    ...choice({ reasoning_content: 'Paris, two days, as the schema asks.' }),
    tokenrouter: { tokens: [token('Paris, two days, as the schema asks.', 'small')] },
  },
  ...PIECES.map(([text, model]) => ({ ...choice({ content: text }), tokenrouter: { tokens: [token(text, model)] } })),
  choice({}, 'stop'),
  { id: 'chatcmpl-e2e', choices: [], usage: { prompt_tokens: 42, completion_tokens: 11, total_tokens: 53, prompt_tokens_details: { cached_tokens: 32 } } },
  '[DONE]',
]);
const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } }, required: ['city'] },
    },
  },
  { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string' } } } } },
];
// Two calls streamed as OpenAI does: each call named in its first piece, its arguments in pieces after.
const TOOL_ANSWER = sse([
  choice({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_w1', type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
  choice({ tool_calls: [{ index: 0, function: { arguments: '{"city": "Par' } }] }),
  choice({ tool_calls: [{ index: 0, function: { arguments: 'is", "unit": "c"}' } }] }),
  choice({ tool_calls: [{ index: 1, id: 'call_t2', type: 'function', function: { name: 'get_time', arguments: '{"zone":"Europe/Paris"}' } }] }),
  choice({}, 'tool_calls'),
  { id: 'chatcmpl-e2e', choices: [], usage: { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150, prompt_tokens_details: { cached_tokens: 0 } } },
  '[DONE]',
]);

async function runAndWait(page: Page): Promise<string> {
  await page.click('[data-testid="playground-run"]');
  await page.waitForFunction(() => ['done', 'error'].includes(window.__designer!.playground().status), undefined, { timeout: 60_000 });
  return page.evaluate(() => window.__designer!.playground().status);
}

async function main(): Promise<void> {
  if (!process.env.SKIP_BUILD) execSync('npm run build:web', { cwd: ROOT, stdio: 'ignore' });
  const srv = await startTestServer();
  const browser = await launch();
  try {
    const { page, errors } = await openDesigner(browser, srv.url);
    const sent: Request[] = [];
    page.on('request', (r) => {
      if (r.url().endsWith('/v1/chat/completions')) sent.push(r);
    });
    await page.click('[data-testid="tab-playground"]');

    // 1. A plain run on the real server: the stream (now asking for usage) still works and its usage shows.
    const plain = await runAndWait(page);
    checks.check('a plain run on the real server ends done', plain === 'done', await page.locator('[data-testid="playground-status"]').innerText());
    checks.check('the real server sent tokens', (await page.locator('[data-testid="pg-token"]').count()) > 0);
    const plainUsage = await page
      .locator('[data-testid="pg-usage"]')
      .innerText()
      .catch(() => '');
    checks.check('the usage the real server closes the stream with is shown', /prompt \d+/.test(plainUsage), plainUsage);
    const firstBody = sent[0]?.postDataJSON() as Record<string, unknown> | undefined;
    checks.check(
      'no response_format or tools unless asked',
      firstBody !== undefined && !('response_format' in firstBody) && !('tools' in firstBody),
      firstBody,
    );

    // 2. A schema that is not JSON: named inline, and Run sends nothing.
    await page.click('[data-testid="pg-options"] summary');
    await page.selectOption('[data-testid="pg-format"]', 'json_schema');
    const example = await page.inputValue('[data-testid="pg-schema"]');
    checks.check(
      'picking JSON schema starts from an example schema that parses',
      example.trim() !== '' && (await page.locator('[data-testid="pg-schema-error"]').count()) === 0,
      example,
    );
    await page.fill('[data-testid="pg-schema"]', '{\n  "type": "object",\n  "properties": { "city": { "type": "string" }, }\n}');
    const error = page.locator('[data-testid="pg-schema-error"]');
    await error.waitFor();
    const errorText = await error.innerText();
    checks.check('the inline error names the schema and the problem, with its place', /^Schema: not valid JSON: .*line 3/.test(errorText), errorText);
    checks.check('the schema field is marked invalid', (await page.getAttribute('[data-testid="pg-schema"]', 'aria-invalid')) === 'true');
    const before = sent.length;
    const refused = await runAndWait(page);
    checks.check('Run with a bad schema sends nothing', refused === 'error' && sent.length === before, { status: refused, sent: sent.length - before });
    checks.check('the status says it was not sent', /Not sent: Schema/.test(await page.locator('[data-testid="playground-status"]').innerText()));
    checks.check('no timeline link for a run that was not sent', (await page.locator('[data-testid="playground-timeline-link"]').count()) === 0);
    await page.locator('[data-testid="playground"]').screenshot({ path: artifactPath('playground-schema-error.png') });

    // 3. A valid schema goes out as response_format; the answer is JSON, laid out, each token in its model's colour.
    let answer = JSON_ANSWER;
    await page.route('**/v1/chat/completions', (route) =>
      route.fulfill({ status: 200, headers: { 'content-type': 'text/event-stream', 'x-request-id': 'chatcmpl-e2e' }, body: answer }),
    );
    await page.fill('[data-testid="pg-schema"]', JSON.stringify(SCHEMA, null, 2));
    await error.waitFor({ state: 'detached' });
    const ok = await runAndWait(page);
    const body = sent[sent.length - 1].postDataJSON() as Record<string, unknown>;
    checks.check('the run is done', ok === 'done');
    checks.check(
      'the body carries response_format json_schema with the schema, named after its title, strict',
      JSON.stringify(body.response_format) === JSON.stringify({ type: 'json_schema', json_schema: { name: 'Forecast', schema: SCHEMA, strict: true } }),
      body.response_format,
    );
    checks.check('the stream asks for the usage', JSON.stringify(body.stream_options) === '{"include_usage":true}', body.stream_options);
    const output = page.locator('[data-testid="playground-output"]');
    const shown = await output.evaluate((el) => [...el.childNodes].map((n) => n.textContent ?? '').join(''));
    const expected = JSON.stringify(JSON.parse(PIECES.map(([t]) => t).join('')), null, 2);
    checks.check('the JSON answer is pretty-printed', shown === expected && (await output.getAttribute('data-pretty')) === 'true', shown);
    const colours = await page
      .locator('[data-testid="pg-token"]')
      .evaluateAll((els) => els.map((e) => [e.textContent, e.getAttribute('data-model'), getComputedStyle(e).borderBottomColor]));
    const paris = colours.find(([t]) => t === 'Paris');
    const key = colours.find(([t]) => t === 'city');
    checks.check('each token keeps its model and colour in the laid-out JSON', paris?.[1] === 'large' && key?.[1] === 'small' && paris[2] !== key[2], {
      paris,
      key,
    });
    const reasoning = page.locator('[data-testid="pg-reasoning"]');
    checks.check(
      'the reasoning is shown apart, folded',
      (await reasoning.count()) === 1 && !(await page.locator('[data-testid="pg-reasoning-text"]').isVisible()),
    );
    checks.check('the reasoning is not in the answer', !shown.includes('forecast'));
    await reasoning.locator('summary').click();
    const thought = await page.locator('[data-testid="pg-reasoning-text"]').innerText();
    checks.check('unfolded, the reasoning reads whole', thought === 'The user wants a forecast. Paris, two days, as the schema asks.', thought);
    await reasoning.screenshot({ path: artifactPath('playground-reasoning.png') });
    const thoughtModels = await page
      .locator('[data-testid="pg-reasoning-text"] [data-model]')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-model')));
    checks.check(
      "the thought's tokens keep their models, and are not counted among the answer's",
      thoughtModels.join() === 'large,small' && (await page.evaluate(() => window.__designer!.playground().tokens.length)) === PIECES.length,
      thoughtModels,
    );
    const usage = await page.locator('[data-testid="pg-usage"]').innerText();
    checks.check('usage shows the cached prompt tokens', /prompt 42 \(32 cached\) · completion 11/.test(usage), usage);
    await page.locator('[data-testid="playground"]').screenshot({ path: artifactPath('playground-json.png') });
    await output.scrollIntoViewIfNeeded();
    await output.screenshot({ path: artifactPath('playground-json-output.png') });
    await page.uncheck('[data-testid="pg-pretty"]');
    const raw = await output.evaluate((el) => [...el.childNodes].map((n) => n.textContent ?? '').join(''));
    checks.check('"pretty JSON" off shows the tokens as they came', raw === PIECES.map(([t]) => t).join(''), raw);
    await page.check('[data-testid="pg-pretty"]');

    // 4. Tools with a named tool choice; the calls come back streamed in pieces and show as cards.
    answer = TOOL_ANSWER;
    await page.selectOption('[data-testid="pg-format"]', 'none');
    await page.fill('[data-testid="pg-tools"]', JSON.stringify(TOOLS, null, 2));
    await page.selectOption('[data-testid="pg-tool-choice"]', 'function:get_weather');
    const toolRun = await runAndWait(page);
    checks.check(
      'the tool run is done (a chunk with content: null beside tool calls is read)',
      toolRun === 'done',
      await page.locator('[data-testid="playground-status"]').innerText(),
    );
    const toolBody = sent[sent.length - 1].postDataJSON() as Record<string, unknown>;
    checks.check(
      'the body carries the tools and the named tool choice, and no response_format',
      JSON.stringify(toolBody.tools) === JSON.stringify(TOOLS) &&
        JSON.stringify(toolBody.tool_choice) === JSON.stringify({ type: 'function', function: { name: 'get_weather' } }) &&
        !('response_format' in toolBody),
      { tools: toolBody.tools, tool_choice: toolBody.tool_choice },
    );
    const cards = await page.locator('[data-testid="pg-tool-call"]').evaluateAll((els) =>
      els.map((e) => ({
        name: e.querySelector('[data-testid="pg-tool-name"]')?.textContent,
        args: e.querySelector('[data-testid="pg-tool-args"]')?.textContent,
      })),
    );
    checks.check('two tool-call cards, in order, named', cards.map((c) => c.name).join() === 'get_weather,get_time', cards);
    checks.check('the pieced arguments are whole and pretty-printed', cards[0]?.args === JSON.stringify({ city: 'Paris', unit: 'c' }, null, 2), cards[0]?.args);
    checks.check('the finish reason says tool_calls', /tool_calls/.test(await page.locator('[data-testid="playground-status"]').innerText()));
    checks.check('no empty answer box beside the calls', (await page.locator('[data-testid="playground-output"]').count()) === 0);
    await page.locator('[data-testid="playground"]').screenshot({ path: artifactPath('playground-tool-calls.png') });
    await axe(page, 'the playground with options open and tool-call cards');

    // 5. A tool choice naming a function the tools no longer have is named inline too.
    await page.fill('[data-testid="pg-tools"]', JSON.stringify(TOOLS.slice(1)));
    const choiceError = await page.locator('[data-testid="pg-tool_choice-error"]').innerText();
    checks.check('a tool choice naming a missing function is named inline', /Tool choice: names "get_weather"/.test(choiceError), choiceError);
    await page.screenshot({ path: artifactPath('playground-tool-choice-error.png') });
    await axe(page, 'the playground with a field error');
    checks.check('no page errors', errors.length === 0, errors);
  } finally {
    await browser.close();
    await srv.close();
  }
  checks.finish();
}

main().catch((e) => {
  console.error('playground-structured e2e: FAILED\n', e);
  process.exitCode = 1;
});
