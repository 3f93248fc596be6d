// The active version a name serves is read from the registry once per change: cached in memory, and never stale after a deploy, activate, rollback or delete, concurrent ones included (real HTTP).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startTestServer, type TestServer } from './testService.ts';

let t: TestServer | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

type Json = { error?: { code: string }; tokenrouter?: { version: number | null }; activeVersion?: number; version?: number } & Record<string, unknown>;
const call = async (url: string, method: string, body?: unknown): Promise<{ status: number; json: Json }> => {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Json };
};
const complete = async (s: TestServer, model: string) => call(`${s.url}/v1/completions`, 'POST', { model, prompt: '2*3=', max_tokens: 3, temperature: 0 });
const served = async (s: TestServer, model: string) => (await complete(s, model)).json.tokenrouter?.version;

describe('the active version, cached', () => {
  it('repeated requests for an algorithm read the registry once', async () => {
    t = await startTestServer();
    expect(await served(t, 'r2r')).toBe(1);
    const active = vi.spyOn(t.service.registry, 'active');
    const history = vi.spyOn(t.service.registry, 'activationHistory');
    for (let i = 0; i < 5; i++) expect(await served(t, 'r2r')).toBe(1);
    expect(active).not.toHaveBeenCalled();
    expect(history).not.toHaveBeenCalled();
  });

  it('every admin change is seen by the next request: deploy, activate, rollback, delete', async () => {
    t = await startTestServer();
    const s = t;
    expect(await served(s, 'mine')).toBeUndefined();
    expect((await call(`${s.url}/admin/algorithms/mine/versions`, 'POST', { builtin: 'r-stitch', activate: true })).status).toBe(201);
    expect(await served(s, 'mine')).toBe(1);
    expect((await call(`${s.url}/admin/algorithms/mine/versions`, 'POST', { builtin: 'r-stitch', activate: true, replace: true })).status).toBe(201);
    expect(await served(s, 'mine')).toBe(2);
    expect((await call(`${s.url}/admin/algorithms/mine/activate`, 'POST', { version: 1 })).status).toBe(200);
    expect(await served(s, 'mine')).toBe(1);
    expect((await call(`${s.url}/admin/algorithms/mine/rollback`, 'POST', {})).json.activeVersion).toBe(2);
    expect(await served(s, 'mine')).toBe(2);
    expect((await call(`${s.url}/admin/algorithms/mine`, 'DELETE')).status).toBe(200);
    expect((await complete(s, 'mine')).status).toBe(404);
  });

  it('under concurrent admin calls and requests, each request serves a version that was active while it ran, and the last one stands', async () => {
    t = await startTestServer();
    const s = t;
    for (let v = 0; v < 3; v++)
      await call(`${s.url}/admin/algorithms/mine/versions`, 'POST', { builtin: 'r-stitch', activate: true, ...(v > 0 ? { replace: true } : {}) });
    const stored = new Set([1, 2, 3]);
    for (let round = 0; round < 4; round++) {
      const admin = Array.from({ length: 6 }, (_, i) =>
        i % 3 === 2
          ? call(`${s.url}/admin/algorithms/mine/versions`, 'POST', { builtin: 'r-stitch', activate: true, replace: true }).then((r) =>
              stored.add(r.json.version!),
            )
          : call(`${s.url}/admin/algorithms/mine/activate`, 'POST', { version: 1 + ((round + i) % 3) }),
      );
      const requests = Array.from({ length: 8 }, () => served(s, 'mine'));
      const [, versions] = await Promise.all([Promise.all(admin), Promise.all(requests)]);
      for (const v of versions) expect(stored.has(v!)).toBe(true);
      // once the calls have answered, the next request serves exactly what the registry says is active
      const active = s.service.registry.get('mine')!.activeVersion;
      expect(await served(s, 'mine')).toBe(active);
      expect(s.service.algorithms.resolve('mine').version).toBe(active);
    }
  });
});
