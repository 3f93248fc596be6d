// A chat template that raises (or does not parse) answers 400 naming the model, over HTTP; the server keeps serving.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { charTokenizer } from '../../runtime/runner/charTokenizer.ts';
import { startTestServer, type TestServer } from './testService.ts';

// Mistral's template refuses a system message (raise_exception); the char vocabulary maps its [INST] markers to <unk>.
const MISTRAL = fs.readFileSync(path.join(import.meta.dirname, '../fixtures/chat-templates/mistral-7b-instruct-v0.1.jinja'), 'utf8');

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ tokenizer: charTokenizer({ chatTemplate: MISTRAL, modelName: 'small' }) });
});
afterAll(() => t.close());

async function chat(messages: { role: string; content: string }[]) {
  const res = await fetch(`${t.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'small', messages, max_tokens: 4 }),
  });
  return { status: res.status, json: (await res.json()) as { error?: { message: string; type: string; param: string | null; code: string | null } } };
}

describe('chat template errors over HTTP', () => {
  it('a template raise_exception is a 400 naming the model, not a 500', async () => {
    const r = await chat([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: '1+2' },
    ]);
    expect(r.status).toBe(400);
    expect(r.json.error).toEqual({
      message: 'model "small": its chat template failed to render these messages: Conversation roles must alternate user/assistant/user/assistant/...',
      type: 'invalid_request_error',
      param: 'messages',
      code: 'invalid_request',
    });
  });

  it('the same server answers a conversation the template accepts', async () => {
    const r = await chat([{ role: 'user', content: '1+2' }]);
    expect(r.status).toBe(200);
  });

  it('a template that does not parse: the server starts, and chat is a 400 naming the model', async () => {
    const broken = await startTestServer({ tokenizer: charTokenizer({ chatTemplate: '{% for m in messages %}{{ m.content }}', modelName: 'small' }) });
    try {
      const res = await fetch(`${broken.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ model: 'small', messages: [{ role: 'user', content: '1+2' }], max_tokens: 4 }),
      });
      const j = (await res.json()) as { error: { message: string } };
      expect(res.status).toBe(400);
      expect(j.error.message).toMatch(/^model "small": its chat template does not parse: /);
      const plain = await fetch(`${broken.url}/v1/completions`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ model: 'small', prompt: 'Q: 1+2=\nA: ', max_tokens: 4 }),
      });
      expect(plain.status).toBe(200);
    } finally {
      await broken.close();
    }
  });
});
