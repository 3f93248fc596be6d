// Overload at the entry: past scheduling.slo.maxQueueDelayMs the server answers 429 with Retry-After (OpenAI error shape) and counts it in /metrics.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LoadShedder } from '../../runtime/http/loadShedder.ts';
import { startTestServer, type TestServer } from './testService.ts';

describe('LoadShedder', () => {
  it('predicts the wait from the queue and the admission rate, and sheds only past the bound', () => {
    const entry = { queuedCount: 0, clock: { now: () => 1000 } };
    const s = new LoadShedder(entry, 500);
    const admitted = (t: number) => s.onEvent({ type: 'request-state', t, requestId: `r${t}`, model: null, state: 'admitted' });
    // 10 admissions over the last second: 1 per 100 ms.
    for (let t = 0; t < 1000; t += 100) admitted(t);
    entry.queuedCount = 3;
    expect(s.decide()).toBeNull(); // (3 + 1) × 100 ms = 400 ms ≤ 500
    entry.queuedCount = 30;
    const d = s.decide()!;
    expect(d.predictedDelayMs).toBeCloseTo(3100, 0);
    expect(d.retryAfterS).toBe(3);
    expect(() => s.check()).toThrow(/predicted queueing delay 3100 ms exceeds/);
    expect(s.shed).toBe(1);
  });

  it('does not shed before any admission rate is known', () => {
    const s = new LoadShedder({ queuedCount: 100, clock: { now: () => 0 } }, 1);
    expect(s.decide()).toBeNull();
  });
});

describe('429 from the server', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ config: { limits: { maxConcurrency: 1 }, scheduling: { slo: { maxQueueDelayMs: 100 } } }, latency: { small: 5, large: 5 } });
  });
  afterAll(() => t.close());

  const ask = () =>
    fetch(`${t.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'small', prompt: 'hi', max_tokens: 16 }),
    });

  it('refuses requests whose predicted wait exceeds the bound, with Retry-After, and /metrics counts them', async () => {
    // A few requests one after another give the shedder its admission rate (one per ~80 ms here).
    for (let i = 0; i < 3; i++) expect((await ask()).status).toBe(200);
    const burst = await Promise.all(Array.from({ length: 20 }, ask));
    const refused = burst.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    expect(burst.filter((r) => r.status === 200).length).toBeGreaterThan(0);
    const r = refused[0];
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const body = (await r.json()) as { error: { type: string; code: string; message: string } };
    expect(body.error).toMatchObject({ type: 'rate_limit_error', code: 'overloaded' });
    expect(body.error.message).toMatch(/maxQueueDelayMs/);
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    expect(metrics).toMatch(new RegExp(`^tokenrouter_requests_shed_total ${refused.length}$`, 'm'));
    await Promise.all(burst.map((b) => b.text().catch(() => '')));
  });
});
