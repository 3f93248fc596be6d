// Streamed chunks: what arrives for one stream in one event-loop turn goes out as one event, and stream_interval gathers tokens per chunk (real HTTP).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServerConfig } from '../../runtime/config/serverConfig.ts';
import { startServer, type RunningServer } from '../../runtime/http/createServer.ts';
import { TokenRouterService } from '../../runtime/http/tokenRouterService.ts';
import { startTestServer, type TestServer } from './testService.ts';
import { TINY_FAMILY_DIR, tinyFamilyPresent } from '../support/tinyFamily.ts';

type Chunk = { choices: { delta?: { content?: string }; text?: string; finish_reason: string | null }[]; tokenrouter?: { models?: Record<string, number> } };

async function streamed(
  url: string,
  body: Record<string, unknown>,
  path = '/v1/chat/completions',
): Promise<{ status: number; chunks: Chunk[]; text: string; finish: string | null; tokens: number }> {
  const r = await fetch(url + path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ stream: true, ...body }) });
  const raw = await r.text();
  if (r.status !== 200) return { status: r.status, chunks: [], text: raw, finish: null, tokens: 0 };
  expect(raw.endsWith('data: [DONE]\n\n')).toBe(true);
  const chunks = raw
    .split('\n\n')
    .filter((l) => l.startsWith('data: {'))
    .map((l) => JSON.parse(l.slice(6)) as Chunk);
  const content = chunks.filter((c) => c.choices[0]?.finish_reason === null);
  const text = content.map((c) => c.choices[0].delta?.content ?? c.choices[0].text ?? '').join('');
  const tokens = content.reduce((n, c) => n + Object.values(c.tokenrouter?.models ?? {}).reduce((a, b) => a + b, 0), 0);
  return { status: r.status, chunks: content, text, finish: chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0].finish_reason ?? null, tokens };
}

describe('stream_interval (simulated models)', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(() => t.close());
  const base = { model: 'r-stitch', messages: [{ role: 'user', content: '347*26' }], max_tokens: 48, temperature: 0.7, seed: 11 };

  it('stream_interval: 4 gives the same text and tokens in fewer chunks; the first chunk still holds one token', async () => {
    const one = await streamed(t.url, base);
    const four = await streamed(t.url, { ...base, stream_interval: 4 });
    expect(four.text).toBe(one.text);
    expect([one.tokens, four.tokens]).toEqual([48, 48]);
    expect(one.chunks).toHaveLength(48);
    expect(four.chunks.length).toBeLessThanOrEqual(1 + Math.ceil(47 / 4));
    expect(four.chunks.length).toBeLessThan(one.chunks.length);
    expect(Object.values(four.chunks[0].tokenrouter!.models!)).toEqual([1]);
    expect([one.finish, four.finish]).toEqual(['length', 'length']);
  });

  it('stop strings stay exact: the streamed text equals the unary text, cut before the match, with finish_reason stop', async () => {
    const unary = (await (
      await fetch(`${t.url}/v1/completions`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ model: 'r-stitch', prompt: 'Q: 347*26=\nA: ', max_tokens: 48, temperature: 0.7, seed: 11 }),
      })
    ).json()) as { choices: { text: string }[] };
    const whole = unary.choices[0].text;
    // a two-character stop taken from the middle of the text, so the cut is known
    const stop = whole.slice(20, 22);
    const cut = whole.slice(0, whole.indexOf(stop));
    for (const interval of [1, 3, 7]) {
      const s = await streamed(
        t.url,
        { model: 'r-stitch', prompt: 'Q: 347*26=\nA: ', max_tokens: 48, temperature: 0.7, seed: 11, stop, stream_interval: interval },
        '/v1/completions',
      );
      expect([s.text, s.finish], `interval ${interval}`).toEqual([cut, 'stop']);
    }
  });

  it('the server setting is the default; a request overrides it; it needs stream: true', async () => {
    const r = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ ...base, stream_interval: 4 }),
    });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: { param: string } }).error.param).toBe('stream_interval');
    const zero = await streamed(t.url, { ...base, stream_interval: 0 });
    expect(zero.status).toBe(400);
    const set = await startTestServer({ config: { limits: { streamInterval: 8 } } });
    try {
      const byConfig = await streamed(set.url, base);
      const overridden = await streamed(set.url, { ...base, stream_interval: 1 });
      expect(byConfig.chunks.length).toBeLessThanOrEqual(1 + Math.ceil(47 / 8));
      expect(overridden.chunks).toHaveLength(48);
      expect(byConfig.text).toBe(overridden.text);
    } finally {
      await set.close();
    }
  });
});

const HAVE_ONNX = tinyFamilyPresent(['small']);

describe.runIf(HAVE_ONNX)('coalescing (the small model in its engine thread)', () => {
  let service: TokenRouterService;
  let server: RunningServer;
  beforeAll(async () => {
    const config = parseServerConfig({
      port: 0,
      dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'tr-coalesce-')),
      modelsDir: TINY_FAMILY_DIR,
      models: [{ name: 'small' }],
      defaultAlgorithm: 'small',
    });
    service = await TokenRouterService.start(config);
    server = await startServer(service, 0, '127.0.0.1');
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await service?.close();
  });

  it('steps the engine thread sent while the entry was busy go out as one chunk per turn, text and order unchanged', async () => {
    const body = { model: 'small', messages: [{ role: 'user', content: '347*26' }], max_tokens: 96, ignore_eos: true, temperature: 0 };
    const free = await streamed(server.url, body);
    expect(free.tokens).toBe(96);
    // The entry's thread is held busy for 150 ms at a time while the engine thread keeps stepping:
    // each time, the steps it posted meanwhile are read in one turn and leave as one chunk.
    let busy = true;
    const hog = () => {
      if (!busy) return;
      const until = performance.now() + 150;
      while (performance.now() < until);
      setTimeout(hog, 5);
    };
    setTimeout(hog, 5);
    const held = await streamed(server.url, body).finally(() => (busy = false));
    expect(held.text).toBe(free.text);
    expect(held.tokens).toBe(96);
    expect(held.finish).toBe('length');
    expect(held.chunks.length).toBeLessThan(free.chunks.length);
    expect(Math.max(...held.chunks.map((c) => c.tokenrouter!.models!.small))).toBeGreaterThan(1);
  }, 60_000);
});
