// The per-token array of non-streamed answers is opt-in (tokenrouter_tokens: true); attribution totals stay (real HTTP).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestAttributionSchema, tokenAttributionSchema } from '../../shared/api/openai.ts';
import { startTestServer, type TestServer } from './testService.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

type Answer = { usage: { completion_tokens: number }; tokenrouter: { tokens?: { model: string }[]; tokens_by_model: Record<string, number>; handoffs: number } };

async function post(body: Record<string, unknown>): Promise<Answer> {
  const r = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ model: 'r2r', messages: [{ role: 'user', content: '347*26' }], max_tokens: 24, temperature: 0, ...body }) });
  expect(r.status).toBe(200);
  return (await r.json()) as Answer;
}

describe('tokenrouter.tokens in non-streamed answers', () => {
  it('is left out unless asked for; tokens_by_model and handoffs are always there', async () => {
    const plain = await post({});
    expect(plain.tokenrouter.tokens).toBeUndefined();
    expect(Object.values(plain.tokenrouter.tokens_by_model).reduce((a, b) => a + b, 0)).toBe(plain.usage.completion_tokens);
    expect(typeof plain.tokenrouter.handoffs).toBe('number');
    const asked = await post({ tokenrouter_tokens: true });
    expect(asked.tokenrouter.tokens).toHaveLength(asked.usage.completion_tokens);
    // the wire matches the shared schemas that the designer parses with
    expect(requestAttributionSchema.safeParse(asked.tokenrouter).error).toBeUndefined();
    for (const tok of asked.tokenrouter.tokens!) expect(tokenAttributionSchema.strict().safeParse(tok).error).toBeUndefined();
    expect(asked.tokenrouter.tokens!.filter((x) => x.model === 'small').length).toBe(asked.tokenrouter.tokens_by_model.small);
  });

  it('streamed chunks still carry their tokens (the playground reads them)', async () => {
    const r = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ model: 'r2r', messages: [{ role: 'user', content: '347*26' }], max_tokens: 24, temperature: 0, stream: true }) });
    const chunks = (await r.text()).split('\n\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)) as { tokenrouter?: { tokens?: unknown[] } });
    expect(chunks.reduce((n, c) => n + (c.tokenrouter?.tokens?.length ?? 0), 0)).toBe(24);
  });
});
