// The server's log: an access line per request only when "accessLog" is on (with the key's name, never the key or a query), and a line for every deploy, activation, rollback and delete.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startTestServer, until, type TestServer } from './testService.ts';

let t: TestServer | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await t?.close();
  t = undefined;
});

const logged = () => {
  const lines: string[] = [];
  vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void lines.push(a.map(String).join(' ')));
  return lines;
};
const chat = (key?: string) => ({
  method: 'POST',
  headers: { 'Content-Type': 'application/json', ...(key ? { Authorization: `Bearer ${key}` } : {}) },
  body: JSON.stringify({ model: 'small', messages: [{ role: 'user', content: '1*2' }], max_tokens: 3 }),
});

describe('access log', () => {
  it('off by default: no line per request', async () => {
    t = await startTestServer();
    const lines = logged();
    expect((await fetch(`${t.url}/v1/chat/completions`, chat())).status).toBe(200);
    await new Promise((r) => setTimeout(r, 100));
    expect(lines.filter((l) => l.startsWith('[access]'))).toEqual([]);
  });

  it('on: method, path without query, status, time and the key name, never the key', async () => {
    t = await startTestServer({ config: { accessLog: true, apiKeys: [{ name: 'alice', key: 'sk-secret-alice' }] } });
    const lines = logged();
    expect((await fetch(`${t.url}/v1/chat/completions?token=abc`, chat('sk-secret-alice'))).status).toBe(200);
    expect((await fetch(`${t.url}/v1/models`)).status).toBe(401);
    await until(() => lines.filter((l) => l.startsWith('[access]')).length >= 2);
    const access = lines.filter((l) => l.startsWith('[access]'));
    expect(access[0]).toMatch(/^\[access\] \S+ POST \/v1\/chat\/completions 200 \d+\.\dms key=alice$/);
    expect(access[1]).toMatch(/^\[access\] \S+ GET \/v1\/models 401 \d+\.\dms$/);
    expect(access.join('\n')).not.toMatch(/sk-secret|token=abc/);
  });
});

describe('registry changes are logged', () => {
  it('deploy, activate, rollback and delete each print one line', async () => {
    t = await startTestServer();
    const lines = logged();
    const admin = (path: string, body?: unknown, method = 'POST') =>
      fetch(`${t!.url}/admin/algorithms/${path}`, {
        method,
        headers: { 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    expect((await admin('mine/versions', { builtin: 'r-stitch', activate: true })).status).toBe(201);
    expect((await admin('mine/versions', { builtin: 'r-stitch', params: { tau: 0.05 }, replace: true })).status).toBe(201);
    expect((await admin('mine/activate', { version: 2 })).status).toBe(200);
    expect((await admin('mine/rollback', {})).status).toBe(200);
    expect((await admin('mine', undefined, 'DELETE')).status).toBe(200);
    expect(lines.filter((l) => l.startsWith('[tokenrouter]'))).toEqual([
      '[tokenrouter] deployed mine v1 (built-in r-stitch), now active',
      '[tokenrouter] deployed mine v2 (built-in r-stitch)',
      '[tokenrouter] activated mine v2',
      '[tokenrouter] rolled back mine to v1',
      '[tokenrouter] deleted mine (2 versions)',
    ]);
  });
});
