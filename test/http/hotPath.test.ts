// Per-request work the entry does not repeat: a request for a model by name skips the algorithm registry.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startTestServer, type TestServer } from './testService.ts';

let t: TestServer | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe('entry hot path', () => {
  it('a request for a model by name never reads the algorithm registry (a database read per request)', async () => {
    t = await startTestServer();
    const active = vi.spyOn(t.service.registry, 'active');
    const res = await fetch(`${t.url}/v1/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'small', prompt: '2+2=', max_tokens: 4, temperature: 0 }),
    });
    expect(res.status).toBe(200);
    expect(active).not.toHaveBeenCalled();
  });
});
