// The per-token array of non-streamed answers is opt-in (tokenrouter_tokens: true); attribution totals stay (real HTTP).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestAttributionSchema, tokenAttributionSchema } from '../../shared/api/openaiAnswer.ts';
import { startTestServer, type TestServer } from './testService.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

type Answer = {
  usage: { completion_tokens: number };
  tokenrouter: { tokens?: { model: string }[]; tokens_by_model: Record<string, number>; handoffs: number };
};

async function post(body: Record<string, unknown>): Promise<Answer> {
  const r = await fetch(`${t.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'r2r', messages: [{ role: 'user', content: '347*26' }], max_tokens: 24, temperature: 0, ...body }),
  });
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

  type Chunk = {
    id: string;
    object: string;
    created: number;
    model: string;
    choices: { delta: { content?: string }; finish_reason: string | null }[];
    tokenrouter?: { models?: Record<string, number>; tokens?: { model: string; text: string }[]; tokens_by_model?: Record<string, number> };
  };
  const stream = async (body: Record<string, unknown>): Promise<Chunk[]> => {
    const r = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'r2r', messages: [{ role: 'user', content: '347*26' }], max_tokens: 24, temperature: 0, stream: true, ...body }),
    });
    return (await r.text())
      .split('\n\n')
      .filter((l) => l.startsWith('data: {'))
      .map((l) => JSON.parse(l.slice(6)) as Chunk);
  };

  it('streamed chunks are lean by default: OpenAI fields plus which model wrote their tokens; the finish chunk has the totals', async () => {
    const chunks = await stream({});
    const content = chunks.filter((c) => c.choices[0].finish_reason === null);
    const last = chunks.at(-1)!;
    for (const c of content) {
      expect(Object.keys(c).sort()).toEqual(['choices', 'created', 'id', 'model', 'object', 'tokenrouter']);
      expect(Object.keys(c.tokenrouter!)).toEqual(['models']);
    }
    // every token is attributed once, and the chunks' counts add up to the request's tallies
    const summed: Record<string, number> = {};
    for (const c of content) for (const [m, n] of Object.entries(c.tokenrouter!.models!)) summed[m] = (summed[m] ?? 0) + n;
    expect(Object.values(summed).reduce((a, b) => a + b, 0)).toBe(24);
    expect(summed).toEqual(Object.fromEntries(Object.entries(last.tokenrouter!.tokens_by_model!).filter(([, n]) => n > 0)));
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
  });

  it('tokenrouter_tokens: true puts every token, with its model and signals, in the streamed chunks (the playground reads them)', async () => {
    const plain = await stream({});
    const chunks = await stream({ tokenrouter_tokens: true });
    const tokens = chunks.flatMap((c) => c.tokenrouter?.tokens ?? []);
    expect(tokens).toHaveLength(24);
    for (const tok of tokens) expect(tokenAttributionSchema.strict().safeParse(tok).error).toBeUndefined();
    expect(tokens.map((x) => x.text).join('')).toBe(plain.map((c) => c.choices[0].delta.content ?? '').join(''));
  });
});
