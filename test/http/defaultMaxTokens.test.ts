// Without max_tokens a request runs as vLLM's do: to the end of the context window, capped by limits.maxTokens (real HTTP).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './testService.ts';

type Answer = { choices: { finish_reason: string }[]; usage: { prompt_tokens: number; completion_tokens: number } };

async function post(t: TestServer, route: string, body: Record<string, unknown>): Promise<Answer> {
  const r = await fetch(`${t.url}/v1/${route}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ temperature: 0, ...body }),
  });
  expect(r.status).toBe(200);
  return (await r.json()) as Answer;
}

describe('default max_tokens', () => {
  // The simulated models never draw EOS and have a 256-token window; the server caps output at 100.
  let capped: TestServer;
  let open: TestServer;
  beforeAll(async () => {
    capped = await startTestServer({ config: { limits: { maxTokens: 100 } } });
    open = await startTestServer({ config: { limits: { maxTokens: 256 } } });
  });
  afterAll(async () => {
    await capped.close();
    await open.close();
  });

  it('chat and completions without max_tokens generate past 16, up to limits.maxTokens', async () => {
    for (const model of ['small', 'r-stitch']) {
      const chat = await post(capped, 'chat/completions', { model, messages: [{ role: 'user', content: '7*8' }] });
      expect([chat.usage.completion_tokens, chat.choices[0].finish_reason]).toEqual([100, 'length']);
      const text = await post(capped, 'completions', { model, prompt: 'Q: 7*8=\nA: ' });
      expect([text.usage.completion_tokens, text.choices[0].finish_reason]).toEqual([100, 'length']);
    }
  });

  it('when the cap is beyond the window, the rest of the context window (maxContext − prompt tokens)', async () => {
    const text = await post(open, 'completions', { model: 'small', prompt: 'Q: 12*34=\nA: ' });
    expect(text.usage.prompt_tokens).toBeGreaterThan(0);
    expect(text.usage.completion_tokens).toBe(256 - text.usage.prompt_tokens);
    const chat = await post(open, 'chat/completions', { model: 'small', messages: [{ role: 'user', content: '12*34' }] });
    expect(chat.usage.completion_tokens).toBe(256 - chat.usage.prompt_tokens);
  });

  it('an explicit max_tokens still wins, and one above the cap is still refused', async () => {
    const text = await post(capped, 'completions', { model: 'small', prompt: 'Q: 1+1=\nA: ', max_tokens: 5 });
    expect(text.usage.completion_tokens).toBe(5);
    const r = await fetch(`${capped.url}/v1/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'small', prompt: 'x', max_tokens: 101 }),
    });
    expect(r.status).toBe(400);
  });
});
