// Each error status, triggered for real over HTTP, in OpenAI's error shape; the server keeps serving.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, until, type TestServer } from './testService.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({
    config: { limits: { maxConcurrency: 2, maxQueue: 1, maxTokens: 100, maxBodyBytes: 64 * 1024 } },
    latency: { small: 20, large: 20 },
  });
});
afterAll(() => t.close());

async function post(path: string, body: unknown, raw = false) {
  const res = await fetch(t.url + path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: raw ? (body as string) : JSON.stringify(body),
  });
  const json = (await res.json()) as { error: { message: string; type: string; param: string | null; code: string | null } };
  return { status: res.status, json, headers: res.headers };
}

function expectErrorShape(j: { error: Record<string, unknown> }) {
  expect(Object.keys(j.error).sort()).toEqual(expect.arrayContaining(['code', 'message', 'param', 'type']));
  expect(typeof j.error.message).toBe('string');
}

describe('HTTP errors', () => {
  it('400 for malformed JSON', async () => {
    const r = await post('/v1/completions', '{"model": "small", "prompt": ', true);
    expect(r.status).toBe(400);
    expectErrorShape(r.json);
    expect(r.json.error.message).toMatch(/not valid JSON/);
  });

  it('400 for wrong types, naming the field', async () => {
    const r = await post('/v1/chat/completions', { model: 'small', messages: 'hi' });
    expect(r.status).toBe(400);
    expect(r.json.error.param).toBe('messages');
    const r2 = await post('/v1/completions', { model: 'small', prompt: 'Q: 1*2=', max_tokens: -5 });
    expect(r2.status).toBe(400);
    expect(r2.json.error.param).toBe('max_tokens');
    const r3 = await post('/v1/completions', { model: 'small', prompt: 'Q: 1*2=', max_tokens: 5000 });
    expect(r3.status).toBe(400);
    expect(r3.json.error.message).toMatch(/at most 100/);
    const r4 = await post('/v1/completions', { model: 'small', prompt: '' });
    expect(r4.status).toBe(400);
  });

  it('404 for an unknown model', async () => {
    const r = await post('/v1/chat/completions', { model: 'gpt-9', messages: [{ role: 'user', content: '1*2' }] });
    expect(r.status).toBe(404);
    expectErrorShape(r.json);
    expect(r.json.error.param).toBe('model');
  });

  it('413 for a body over the limit, 400 naming the window for a prompt over the context window', async () => {
    const big = await post('/v1/completions', { model: 'small', prompt: '1'.repeat(100 * 1024) });
    expect(big.status).toBe(413);
    expectErrorShape(big.json);
    const long = await post('/v1/completions', { model: 'small', prompt: '1'.repeat(300) });
    expect(long.status).toBe(400);
    expect(long.json.error.param).toBe('prompt');
    expect(long.json.error.message).toMatch(/context window is 256/);
  });

  it('429 with Retry-After when the admission queue is full', async () => {
    const body = { model: 'small', prompt: 'Q: 1*2=\nA: ', max_tokens: 30, temperature: 0 };
    const first = [post('/v1/completions', body), post('/v1/completions', body), post('/v1/completions', body)];
    const c = t.service.cluster;
    await until(() => c.activeCount === 2 && c.queuedCount === 1);
    const over = await post('/v1/completions', body);
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toBe('1');
    expect(over.json.error.type).toBe('rate_limit_error');
    const rs = await Promise.all(first);
    expect(rs.map((r) => r.status)).toEqual([200, 200, 200]);
  });

  it('503 when a sub-server is down, and service resumes when it is back', async () => {
    t.service.cluster.setDown('large', true);
    const r = await post('/v1/chat/completions', { model: 'r-stitch', messages: [{ role: 'user', content: '1*2' }], max_tokens: 5 });
    expect(r.status).toBe(503);
    expectErrorShape(r.json);
    const small = await post('/v1/chat/completions', { model: 'small', messages: [{ role: 'user', content: '1*2' }], max_tokens: 5 });
    expect(small.status).toBe(200);
    t.service.cluster.setDown('large', false);
    const ok = await post('/v1/chat/completions', { model: 'r-stitch', messages: [{ role: 'user', content: '1*2' }], max_tokens: 5 });
    expect(ok.status).toBe(200);
  });

  it('404 in JSON for unknown routes', async () => {
    const res = await fetch(t.url + '/v2/nothing');
    expect(res.status).toBe(404);
    expectErrorShape((await res.json()) as { error: Record<string, unknown> });
  });
});
