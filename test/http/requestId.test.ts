// One request, one id: the id the API answers is the one in the trace and the timeline; X-Request-Id is honoured and echoed (real HTTP).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './testService.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ traced: true });
});
afterAll(async () => {
  await t.close();
});

async function post(route: string, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${t.url}/v1/${route}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify({ temperature: 0, max_tokens: 8, ...body }),
  });
}

/** Request ids the trace knows, from its JSON-lines export. */
async function tracedIds(): Promise<Set<string>> {
  const text = await (await fetch(`${t.url}/admin/trace?format=jsonl`)).text();
  const ids = new Set<string>();
  for (const line of text.split('\n')) {
    if (!line) continue;
    const e = JSON.parse(line) as { type: string; requestId?: string; requestIds?: string[] };
    if (e.requestId) ids.add(e.requestId);
    for (const id of e.requestIds ?? []) ids.add(id);
  }
  return ids;
}

describe('request ids', () => {
  it('the id of a chat answer and of a completion is the id the trace records, and the response header says it', async () => {
    const chat = await post('chat/completions', { model: 'r-stitch', messages: [{ role: 'user', content: '7*8' }] });
    const chatBody = (await chat.json()) as { id: string };
    expect(chatBody.id).toMatch(/^chatcmpl-/);
    expect(chat.headers.get('x-request-id')).toBe(chatBody.id);
    const text = await post('completions', { model: 'small', prompt: 'Q: 7*8=\nA: ' });
    const textBody = (await text.json()) as { id: string };
    const ids = await tracedIds();
    expect(ids.has(chatBody.id)).toBe(true);
    expect(ids.has(textBody.id)).toBe(true);
    // no second naming scheme beside the API's: these two are the only requests so far
    expect([...ids].sort()).toEqual([chatBody.id, textBody.id].sort());
  });

  it('an incoming X-Request-Id is the request id everywhere, streamed too; with n > 1 each choice is id-k', async () => {
    const r = await post('chat/completions', { model: 'r2r', messages: [{ role: 'user', content: '12*34' }], stream: true }, { 'X-Request-Id': 'client-42.a' });
    expect(r.headers.get('x-request-id')).toBe('client-42.a');
    const sse = await r.text();
    const chunks = sse
      .split('\n\n')
      .filter((l) => l.startsWith('data: {'))
      .map((l) => JSON.parse(l.slice(6)) as { id: string });
    expect(chunks.length).toBeGreaterThan(1);
    expect(new Set(chunks.map((c) => c.id))).toEqual(new Set(['client-42.a']));
    const n = await post('completions', { model: 'small', prompt: 'Q: 1+2=\nA: ', n: 2, temperature: 1, seed: 5 }, { 'X-Request-Id': 'client-43' });
    expect(((await n.json()) as { id: string }).id).toBe('client-43');
    const ids = await tracedIds();
    for (const id of ['client-42.a', 'client-43-0', 'client-43-1']) expect(ids.has(id), id).toBe(true);
  });

  it('a malformed X-Request-Id is a 400 naming the header, and one still in flight is refused', async () => {
    const bad = await post('completions', { model: 'small', prompt: 'x' }, { 'X-Request-Id': 'has space' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { param: string } }).error.param).toBe('X-Request-Id');
    // the first is surely in flight once its first chunk has arrived
    const first = await post('completions', { model: 'small', prompt: 'x', max_tokens: 200, stream: true }, { 'X-Request-Id': 'dup-1' });
    const reader = first.body!.getReader();
    await reader.read();
    const second = await post('completions', { model: 'small', prompt: 'x' }, { 'X-Request-Id': 'dup-1' });
    expect(second.status).toBe(400);
    expect(((await second.json()) as { error: { message: string } }).error.message).toMatch(/already in flight/);
    await reader.cancel();
  });
});
