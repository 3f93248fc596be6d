// min_tokens and ignore_eos (vLLM's extensions): no EOS and no stop string before the minimum, over real HTTP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './testService.ts';

let t: TestServer;
beforeAll(async () => {
  // One token in five is EOS: without a minimum, requests end early.
  t = await startTestServer({ eosRate: 0.2 });
});
afterAll(() => t.close());

async function complete(body: Record<string, unknown>) {
  const r = await fetch(`${t.url}/v1/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt: 'Q: 7*8=\nA: ', temperature: 0, ...body }),
  });
  const json = (await r.json()) as {
    choices?: { text: string; finish_reason: string }[];
    usage?: { completion_tokens: number };
    error?: { param: string; message: string };
  };
  return { status: r.status, json };
}

describe('min_tokens / ignore_eos', () => {
  it('without them most requests stop early; with ignore_eos every one runs to max_tokens, on one model and across models', async () => {
    for (const model of ['small', 'r-stitch']) {
      let early = 0;
      for (let i = 0; i < 12; i++) {
        const prompt = `Q: ${i}*${i + 3}=\nA: `;
        const free = await complete({ model, prompt, max_tokens: 40 });
        if (free.json.choices![0].finish_reason === 'stop') early++;
        const full = await complete({ model, prompt, max_tokens: 40, ignore_eos: true });
        expect(full.status).toBe(200);
        expect([full.json.usage!.completion_tokens, full.json.choices![0].finish_reason]).toEqual([40, 'length']);
        // Greedy: the text up to the first EOS is the same with and without the minimum.
        expect(full.json.choices![0].text.startsWith(free.json.choices![0].text)).toBe(true);
      }
      expect(early, model).toBeGreaterThan(8);
    }
  });

  it('min_tokens: at least that many tokens, and a stop string inside them does not end the request', async () => {
    for (let i = 0; i < 10; i++) {
      const r = await complete({ model: 'small', prompt: `Q: ${i}*9=\nA: `, max_tokens: 60, min_tokens: 25 });
      expect(r.json.usage!.completion_tokens).toBeGreaterThanOrEqual(25);
    }
    // Digits are most of the vocabulary: a one-digit stop string turns up within the first 20 tokens.
    const held = await complete({ model: 'small', max_tokens: 60, stop: ['7'], min_tokens: 20 });
    const text = held.json.choices![0].text;
    expect(held.json.usage!.completion_tokens).toBeGreaterThanOrEqual(20);
    expect(text.slice(0, 18)).toContain('7');
    const free = await complete({ model: 'small', max_tokens: 60, stop: ['7'] });
    expect(free.json.choices![0].text.length).toBeLessThan(text.indexOf('7') + 1);
    expect(free.json.choices![0].finish_reason).toBe('stop');
  });

  it('min_tokens above max_tokens, or of the wrong type, is refused with the parameter named', async () => {
    const r = await complete({ model: 'small', max_tokens: 10, min_tokens: 11 });
    expect(r.status).toBe(400);
    expect(r.json.error!.param).toBe('min_tokens');
    const w = await complete({ model: 'small', max_tokens: 10, ignore_eos: 'yes' });
    expect(w.status).toBe(400);
    expect(w.json.error!.param).toBe('ignore_eos');
  });
});
