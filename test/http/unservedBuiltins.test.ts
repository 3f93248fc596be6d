// Issue 53 item 5: a seeded built-in that does not load on the served models is listed as not served, and the start-up log does not speak of it unless someone asks for it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startTestServer, type TestServer } from './testService.ts';

let t: TestServer | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
  vi.restoreAllMocks();
});

type Listed = { name: string; served: boolean };

describe('built-ins the served models cannot run', () => {
  it('are listed with served: false, and only a request for one logs why', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-unserved-'));
    // A first start on three models seeds every built-in; the second serves two of them.
    await (await startTestServer({ dataDir })).close();
    const logged: string[] = [];
    vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void logged.push(a.join(' ')));
    t = await startTestServer({ dataDir, config: { models: [{ name: 'small' }, { name: 'large' }] } });
    const list = ((await (await fetch(`${t.url}/admin/algorithms`)).json()) as { algorithms: Listed[] }).algorithms;
    const unserved = list.filter((a) => !a.served).map((a) => a.name);
    expect(unserved.length).toBeGreaterThan(0);
    expect(list.find((a) => a.name === 'r-stitch')?.served).toBe(true);
    const ids = ((await (await fetch(`${t.url}/v1/models`)).json()) as { data: { id: string }[] }).data.map((m) => m.id);
    for (const n of unserved) expect(ids).not.toContain(n);
    expect(logged.filter((l) => /no stored version loads/.test(l))).toEqual([]);
    // Asked for: the request is refused and the log says why, once.
    const res = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: unserved[0], messages: [{ role: 'user', content: '1+1' }] }),
    });
    expect(res.status).toBe(404);
    expect(logged.filter((l) => l.includes(`algorithm ${unserved[0]}: no stored version loads`))).toHaveLength(1);
  });
});
