// The tiny fixture family's ONNX models behind a real listening server: logprobs, n, penalties and logit_bias have the effect OpenAI defines.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServerConfig } from '../../runtime/config/serverConfig.ts';
import { GREEDY } from '../../runtime/runner/modelRunner.ts';
import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { startServer, type RunningServer } from '../../runtime/http/createServer.ts';
import { TokenRouterService } from '../../runtime/http/tokenRouterService.ts';
import type { ChatTokenLogprob, CompletionLogprobs } from '../../shared/api/openaiAnswer.ts';
import { TINY_FAMILY_DIR, tinyModelDir } from '../support/tinyFamily.ts';

let service: TokenRouterService;
let server: RunningServer;
let client: OpenAI;
let dataDir: string;

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-sampled-'));
  service = await TokenRouterService.start(parseServerConfig({ port: 0, dataDir, modelsDir: TINY_FAMILY_DIR, memory: { budgetMiB: 1024 } }));
  server = await startServer(service, 0, '127.0.0.1');
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
}, 60_000);
afterAll(async () => {
  await server.close();
  await service.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

interface Reply {
  choices: { index: number; text?: string; message?: { content: string }; logprobs: { content: ChatTokenLogprob[] } | CompletionLogprobs | null }[];
  usage: { prompt_tokens: number; completion_tokens: number };
  tokenrouter: { tokens: { id: number; text: string; model: string }[]; tokens_by_model: Record<string, number> };
}

async function post(p: string, body: Record<string, unknown>): Promise<Reply> {
  const res = await fetch(server.url + p, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ tokenrouter_tokens: true, ...body }),
  });
  const text = await res.text();
  expect(res.status, text.slice(0, 300)).toBe(200);
  return JSON.parse(text) as Reply;
}

const QUESTION = [{ role: 'user', content: '47*86' }];
const chatBody = (extra: Record<string, unknown>) => ({ model: 'r-stitch', messages: QUESTION, max_tokens: 24, temperature: 0, ...extra });
const chatLogprobs = (r: Reply, i = 0) => (r.choices[i].logprobs as { content: ChatTokenLogprob[] }).content;
const texts = (r: Reply) => r.choices.map((c) => c.message?.content ?? c.text ?? '');

function expectDistribution(lp: ChatTokenLogprob, k: number) {
  expect(lp.top_logprobs).toHaveLength(k);
  const ps = lp.top_logprobs.map((x) => Math.exp(x.logprob));
  expect(ps.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(1 + 1e-6);
  for (let i = 1; i < ps.length; i++) expect(ps[i]).toBeLessThanOrEqual(ps[i - 1] + 1e-12);
  for (const x of lp.top_logprobs) expect(x.bytes).toEqual([...Buffer.from(x.token, 'utf8')]);
  expect(lp.logprob).toBeLessThanOrEqual(0);
}

describe('logprobs', () => {
  it('chat, greedy: one entry per output token, the writing model named, the chosen token the most likely of its distribution', async () => {
    const r = await post('/v1/chat/completions', chatBody({ logprobs: true, top_logprobs: 5 }));
    const lps = chatLogprobs(r);
    expect(lps).toHaveLength(r.usage.completion_tokens);
    expect(lps.map((x) => x.token).join('')).toBe(r.choices[0].message!.content);
    const counts: Record<string, number> = {};
    lps.forEach((lp, i) => {
      expectDistribution(lp, 5);
      // temperature 0: the sampled token is the argmax of the writing model's distribution
      expect(lp.token).toBe(lp.top_logprobs[0].token);
      expect(lp.logprob).toBeCloseTo(lp.top_logprobs[0].logprob, 12);
      expect(lp.tokenrouter_model).toBe(r.tokenrouter.tokens[i].model);
      counts[lp.tokenrouter_model] = (counts[lp.tokenrouter_model] ?? 0) + 1;
    });
    expect(counts).toEqual(r.tokenrouter.tokens_by_model);
  });

  it("the numbers are the model's own: the first token's top logprobs equal a direct forward pass", async () => {
    const r = await post('/v1/completions', { model: 'small', prompt: 'Q: 47*86=\nA: ', max_tokens: 3, temperature: 0, logprobs: 5 });
    const runner = await OnnxRunner.load(tinyModelDir('small'));
    try {
      const ids = service.tokenizer.encode('Q: 47*86=\nA: ', true);
      const out = await runner.step([{ cacheId: 1, requestId: 'x', tokens: ids, position: 0, sampling: GREEDY, wants: { topK: 5, hidden: false, heads: [] } }]);
      const lp = r.choices[0].logprobs as CompletionLogprobs;
      const direct = out.rows[0];
      const got = Object.entries(lp.top_logprobs[0]).sort((a, b) => b[1] - a[1]);
      expect(got.map(([tok]) => tok)).toEqual(direct.topIds.map((id) => service.tokenizer.decode([id])));
      got.forEach(([, logprob], i) => expect(logprob).toBeCloseTo(Math.log(direct.topProbs[i]), 9));
      expect(lp.token_logprobs[0]).toBeCloseTo(Math.log(direct.tokenProb), 9);
    } finally {
      await runner.close();
    }
  });

  it('chat, sampled: the chosen token carries the logprob its top list gives it', async () => {
    const r = await post('/v1/chat/completions', chatBody({ temperature: 1.2, seed: 11, logprobs: true, top_logprobs: 20 }));
    let found = 0;
    for (const lp of chatLogprobs(r)) {
      expectDistribution(lp, 20);
      const same = lp.top_logprobs.find((x) => x.token === lp.token);
      if (same) {
        found++;
        expect(lp.logprob).toBeCloseTo(same.logprob, 12);
      }
    }
    expect(found).toBeGreaterThan(0);
  });

  it('completions: tokens, token_logprobs, top_logprobs (with the sampled token) and text_offset line up with the text', async () => {
    const r = await post('/v1/completions', { model: 'r-stitch', prompt: 'Q: 12*34=\nA: ', max_tokens: 16, temperature: 0.7, seed: 3, logprobs: 2 });
    const lp = r.choices[0].logprobs as CompletionLogprobs;
    const text = r.choices[0].text!;
    expect(lp.tokens.join('')).toBe(text);
    expect(lp.token_logprobs).toHaveLength(lp.tokens.length);
    expect(lp.tokenrouter_models).toEqual(r.tokenrouter.tokens.map((t) => t.model));
    lp.tokens.forEach((tok, i) => {
      expect(lp.text_offset[i]).toBe(lp.tokens.slice(0, i).join('').length);
      const top = lp.top_logprobs[i];
      expect(Object.keys(top).length).toBeGreaterThanOrEqual(2);
      expect(Object.keys(top).length).toBeLessThanOrEqual(3);
      expect(top[tok]).toBeCloseTo(lp.token_logprobs[i], 12);
      expect(Object.values(top).reduce((a, b) => a + Math.exp(b), 0)).toBeLessThanOrEqual(1 + 1e-6);
    });
  });

  it('streamed chunks carry their tokens’ logprobs: together they equal the non-streamed ones', async () => {
    const body = chatBody({ temperature: 0.9, seed: 5, logprobs: true, top_logprobs: 3 });
    const whole = await post('/v1/chat/completions', body);
    const res = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ ...body, stream: true }),
    });
    const events = (await res.text()).split('\n\n').filter((l) => l.startsWith('data: {'));
    const streamed: ChatTokenLogprob[] = [];
    for (const e of events) {
      const c = JSON.parse(e.slice(6)) as { choices: { logprobs: { content: ChatTokenLogprob[] } | null }[] };
      for (const ch of c.choices) if (ch.logprobs) streamed.push(...ch.logprobs.content);
    }
    expect(streamed.length).toBe(whole.usage.completion_tokens);
    const want = chatLogprobs(whole);
    expect(streamed.map((x) => [x.token, x.tokenrouter_model, x.top_logprobs.map((y) => y.token)])).toEqual(
      want.map((x) => [x.token, x.tokenrouter_model, x.top_logprobs.map((y) => y.token)]),
    );
    // the numbers agree up to float noise: a batch of another shape rounds the logits' last bits differently
    streamed.forEach((x, i) => expect(x.logprob).toBeCloseTo(want[i].logprob, 5));
  });

  it('the official openai client reads logprobs, non-streamed and streamed', async () => {
    const params = {
      model: 'r-stitch',
      messages: [{ role: 'user' as const, content: '5*67' }],
      max_tokens: 12,
      temperature: 0,
      seed: 9,
      logprobs: true,
      top_logprobs: 4,
    };
    const r = await client.chat.completions.create(params);
    const content = r.choices[0].logprobs!.content!;
    expect(content.length).toBe(r.usage!.completion_tokens);
    expect(content.map((c) => c.token).join('')).toBe(r.choices[0].message.content);
    for (const c of content) {
      expect(c.top_logprobs).toHaveLength(4);
      expect(c.logprob).toBeCloseTo(c.top_logprobs[0].logprob, 12);
    }
    const s = await client.chat.completions.create({ ...params, stream: true });
    const streamed: OpenAI.ChatCompletionTokenLogprob[] = [];
    for await (const chunk of s) streamed.push(...(chunk.choices[0]?.logprobs?.content ?? []));
    expect(streamed.map((c) => c.token)).toEqual(content.map((c) => c.token));
    streamed.forEach((c, i) => expect(c.logprob).toBeCloseTo(content[i].logprob, 5));
  });
});

describe('n', () => {
  it('seeded n = 4: distinct choices, the same four again for the same request, streamed too', async () => {
    // an off-task prompt: on arithmetic the bundled models are too sure of themselves for samples to differ
    const body = chatBody({ messages: [{ role: 'user', content: 'hello' }], n: 4, temperature: 1.3, seed: 42, max_tokens: 20 });
    const a = texts(await post('/v1/chat/completions', body));
    const b = texts(await post('/v1/chat/completions', body));
    expect(a).toHaveLength(4);
    expect(new Set(a).size).toBeGreaterThanOrEqual(3);
    expect(b).toEqual(a);
    const other = texts(await post('/v1/chat/completions', { ...body, seed: 43 }));
    expect(other).not.toEqual(a);
    const s = await client.chat.completions.create({
      model: 'r-stitch',
      messages: [{ role: 'user', content: 'hello' }],
      max_tokens: 20,
      temperature: 1.3,
      seed: 42,
      n: 4,
      stream: true,
    });
    const streamed = ['', '', '', ''];
    for await (const chunk of s) for (const c of chunk.choices) streamed[c.index] += c.delta.content ?? '';
    expect(streamed).toEqual(a);
  });
});

/** The most times any one token occurs, and how many distinct tokens there are. */
function repeats(ids: number[]): { most: number; distinct: number } {
  const c = new Map<number, number>();
  for (const t of ids) c.set(t, (c.get(t) ?? 0) + 1);
  return { most: Math.max(...c.values()), distinct: c.size };
}

describe('penalties and logit_bias', () => {
  const long = { model: 'r-stitch', prompt: 'Q: 11*11=\nA: ', max_tokens: 40, ignore_eos: true, temperature: 0 };
  const ids = (r: Reply) => r.tokenrouter.tokens.map((t) => t.id);

  it('frequency_penalty and presence_penalty cut repeated tokens at temperature 0; no penalty repeats', async () => {
    const plain = repeats(ids(await post('/v1/completions', long)));
    const freq = repeats(ids(await post('/v1/completions', { ...long, frequency_penalty: 2 })));
    const pres = repeats(ids(await post('/v1/completions', { ...long, presence_penalty: 2 })));
    expect(plain.most).toBeGreaterThan(4);
    expect(freq.most).toBeLessThan(plain.most);
    expect(freq.distinct).toBeGreaterThan(plain.distinct);
    expect(pres.distinct).toBeGreaterThan(plain.distinct);
    // a negative penalty rewards repeats
    const neg = repeats(ids(await post('/v1/completions', { ...long, frequency_penalty: -2 })));
    expect(neg.most).toBeGreaterThanOrEqual(plain.most);
    expect(neg.distinct).toBeLessThanOrEqual(plain.distinct);
  });

  it('penalties count output tokens only: a prompt full of a token does not penalise it', async () => {
    const prompt = 'Q: 11*11=\nA: ';
    const r = await post('/v1/completions', { ...long, prompt, max_tokens: 1, presence_penalty: 2 });
    const plain = await post('/v1/completions', { ...long, prompt, max_tokens: 1 });
    expect(ids(r)).toEqual(ids(plain));
  });

  it('seeded sampling with penalties replays exactly', async () => {
    const body = { ...long, temperature: 0.9, seed: 77, frequency_penalty: 0.8, presence_penalty: 0.4, logit_bias: { '10': 3 } };
    const a = await post('/v1/completions', body);
    const b = await post('/v1/completions', body);
    expect(ids(b)).toEqual(ids(a));
    const plain = await post('/v1/completions', { ...long, temperature: 0.9, seed: 77 });
    expect(ids(plain)).not.toEqual(ids(a));
  });

  it('logit_bias -100 on the greedy token removes it; +100 forces a token', async () => {
    const plain = ids(await post('/v1/completions', long));
    const greedy = plain[0];
    const banned = ids(await post('/v1/completions', { ...long, logit_bias: { [String(greedy)]: -100 } }));
    expect(banned).not.toContain(greedy);
    expect(banned).toHaveLength(40);
    const seven = service.tokenizer.encode('7', false)[0];
    const forced = await post('/v1/chat/completions', chatBody({ logit_bias: { [String(seven)]: 100 }, max_tokens: 10, logprobs: true, top_logprobs: 1 }));
    expect(ids(forced)).toEqual(new Array(10).fill(seven));
    // logprobs still describe the model's own distribution, not the biased draw
    expect(chatLogprobs(forced).some((lp) => lp.logprob < -0.01)).toBe(true);
  });
});
