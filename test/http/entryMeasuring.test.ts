// The entry's per-request measurement for predictions is off on a plain server and on while an evaluation runs or a prediction check watches (real HTTP).
import { afterEach, describe, expect, it } from 'vitest';
import { entryProfileOf } from '../../runtime/eval/entryProfile.ts';
import { startTestServer, type TestServer } from './testService.ts';

let t: TestServer | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
const chat = async (url: string) => {
  const r = await post(`${url}/v1/chat/completions`, { model: 'r-stitch', messages: [{ role: 'user', content: '12*3' }], max_tokens: 6 });
  expect(r.status).toBe(200);
  // Server-Timing is every answer's, measuring or not
  expect(r.headers.get('server-timing')).toMatch(/^total;dur=[\d.]+$/);
  await r.arrayBuffer();
};

describe('the entry measurement of the prediction feature', () => {
  it('is off on a server nobody evaluates or checks on, and on while a prediction check watches', async () => {
    t = await startTestServer();
    const profile = entryProfileOf(t.service);
    for (let i = 0; i < 3; i++) await chat(t.url);
    expect(profile.measuring).toBe(false);
    expect(profile.cost(60_000)).toBeNull();
    const check = await fetch(`${t.url}/admin/prediction-check?algorithm=r-stitch&windowMs=5000`);
    expect(check.status, await check.text()).toBe(200);
    expect(profile.measuring).toBe(true);
    for (let i = 0; i < 3; i++) await chat(t.url);
    expect(profile.cost(60_000)?.requests).toBe(3);
  });

  it('is on while an evaluation runs: live requests beside it are timed', async () => {
    t = await startTestServer({ latency: { small: 4, large: 8 } });
    const profile = entryProfileOf(t.service);
    await chat(t.url);
    expect(profile.cost(60_000)).toBeNull();
    const run = await post(`${t.url}/admin/evaluate`, { model: 'r-stitch', problems: 8, concurrency: 2, maxTokens: 24 });
    expect(run.status).toBe(200);
    const reader = run.body!.getReader();
    // the first line (started) is out: the run is going
    await reader.read();
    expect(profile.measuring).toBe(true);
    await chat(t.url);
    expect(profile.cost(60_000)?.requests).toBe(1);
    await reader.cancel();
  });
});
