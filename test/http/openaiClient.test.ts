// The official openai client against a real listening server: chat, completions, streaming, usage, attribution.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './testService.ts';

let t: TestServer;
let client: OpenAI;

beforeAll(async () => {
  t = await startTestServer();
  client = new OpenAI({ baseURL: `${t.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});
afterAll(() => t.close());

/** A lean streamed chunk's extension: its tokens by the model that wrote them. */
type Lean = { tokenrouter?: { models?: Record<string, number> } };
type Ext = { tokenrouter: { tokens_by_model: Record<string, number>; handoffs: number; algorithm: string; tokens: { model: string; text: string }[] } };

describe('OpenAI-compatible API', () => {
  it('lists deployed algorithms and single models', async () => {
    const list = await client.models.list();
    const ids = list.data.map((m) => m.id);
    expect(ids).toEqual(expect.arrayContaining(['r-stitch', 'r2r', 'citer', 'co-llm', 'me', 'small', 'medium', 'large']));
  });

  it('chat completion: text, usage and model attribution agree', async () => {
    // the per-token extension is opt-in; the client passes fields it does not know through as they are
    const r = await client.chat.completions.create({
      model: 'r-stitch',
      messages: [{ role: 'user', content: '12*34' }],
      max_tokens: 40,
      temperature: 0,
      seed: 7,
      tokenrouter_tokens: true,
    } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    const ext = (r as unknown as Ext).tokenrouter;
    const text = r.choices[0].message.content!;
    expect(text.length).toBe(40);
    expect(r.choices[0].finish_reason).toBe('length');
    expect(r.usage!.completion_tokens).toBe(40);
    expect(r.usage!.prompt_tokens).toBe('<s>Q: 12*34\nA: '.length - 2); // <s> is one token
    expect(r.usage!.total_tokens).toBe(r.usage!.prompt_tokens + 40);
    const byModel = Object.values(ext.tokens_by_model).reduce((a, b) => a + b, 0);
    expect(byModel).toBe(r.usage!.completion_tokens);
    expect(ext.tokens.map((x) => x.text).join('')).toBe(text);
    expect(ext.tokens_by_model.small).toBeGreaterThan(0);
    expect(ext.tokens_by_model.large).toBeGreaterThan(0);
    expect(ext.handoffs).toBeGreaterThan(0);
  });

  it('completions endpoint with a text prompt', async () => {
    const r = await client.completions.create({ model: 'small', prompt: 'Q: 5*6=\nA: ', max_tokens: 12, temperature: 0 });
    expect(r.object).toBe('text_completion');
    expect(r.choices[0].text).toHaveLength(12);
    expect(r.usage!.completion_tokens).toBe(12);
    expect((r as unknown as Ext).tokenrouter.tokens_by_model).toEqual({ small: 12 });
  });

  it('streamed text equals the non-streamed text for the same seed (chat and completions, sampling on)', async () => {
    for (const kind of ['chat', 'completion'] as const) {
      const base = { model: 'r-stitch', max_tokens: 50, temperature: 0.8, top_p: 0.9, seed: 1234 };
      let whole: string;
      let streamed = '';
      let usage: OpenAI.CompletionUsage | undefined;
      const models: string[] = [];
      if (kind === 'chat') {
        const r = await client.chat.completions.create({ ...base, messages: [{ role: 'user', content: '77*8' }] });
        whole = r.choices[0].message.content!;
        const s = await client.chat.completions.create({
          ...base,
          messages: [{ role: 'user', content: '77*8' }],
          stream: true,
          stream_options: { include_usage: true },
        });
        for await (const c of s) {
          streamed += c.choices[0]?.delta?.content ?? '';
          for (const [m, n] of Object.entries((c as unknown as Lean).tokenrouter?.models ?? {})) for (let i = 0; i < n; i++) models.push(m);
          if (c.usage) usage = c.usage;
        }
      } else {
        const r = await client.completions.create({ ...base, prompt: 'Q: 77*8=\nA: ' });
        whole = r.choices[0].text;
        const s = await client.completions.create({ ...base, prompt: 'Q: 77*8=\nA: ', stream: true, stream_options: { include_usage: true } });
        for await (const c of s) {
          streamed += c.choices[0]?.text ?? '';
          for (const [m, n] of Object.entries((c as unknown as Lean).tokenrouter?.models ?? {})) for (let i = 0; i < n; i++) models.push(m);
          if (c.usage) usage = c.usage;
        }
      }
      expect(streamed, kind).toBe(whole);
      expect(whole.length, kind).toBe(50);
      expect(usage?.completion_tokens, kind).toBe(50);
      expect(models.length, kind).toBe(50);
      expect(new Set(models), kind).toEqual(new Set(['small', 'large']));
    }
  });

  it('stop strings end the text before the match', async () => {
    const r = await client.completions.create({ model: 'small', prompt: 'Q: 1*1=\nA: ', max_tokens: 60, temperature: 0 });
    const full = r.choices[0].text;
    const stop = full.slice(10, 12);
    const s = await client.completions.create({ model: 'small', prompt: 'Q: 1*1=\nA: ', max_tokens: 60, temperature: 0, stop: [stop] });
    expect(s.choices[0].finish_reason).toBe('stop');
    expect(s.choices[0].text).toBe(full.slice(0, full.indexOf(stop)));
  });
});
