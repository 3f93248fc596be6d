// Issue 34 finding 1: SIGTERM to a real `tokenrouter serve` drains it: 503 for new requests, running streams finish or end with an SSE error event, then it exits.
import { afterEach, describe, expect, it } from 'vitest';
import { call, expectNothingLeft, startRig, streamChat, type Rig, type StreamResult } from './harness.ts';
import { spawnServe, type ServeProcess } from './serveProcess.ts';

let srv: ServeProcess | undefined;
let rig: Rig | undefined;
afterEach(async () => {
  await srv?.kill();
  await rig?.close();
  srv = undefined;
  rig = undefined;
});

/** Status and headers of one request, or status 0 when the connection is refused or cut. */
async function probe(url: string, init?: RequestInit): Promise<{ status: number; retryAfter: string | null; body: string }> {
  try {
    const r = await fetch(url, init);
    return { status: r.status, retryAfter: r.headers.get('retry-after'), body: await r.text() };
  } catch {
    return { status: 0, retryAfter: null, body: '' };
  }
}

describe('SIGTERM drains the entry (issue 34 finding 1)', () => {
  it('with 10 streams running: new requests get 503 + Retry-After, /health 503; short streams finish, long ones end with an error event at the grace period; exit 0', async () => {
    const graceMs = 4000;
    // Each step waits maxWaitMs for a batch of 32 that never fills: ~40 ms a token, so 250 tokens (~10 s) outlast the grace period and 20 (~1 s) do not.
    srv = await spawnServe({ limits: { shutdownGraceMs: graceMs, maxConcurrency: 64 }, scheduling: { thresholds: { small: 32 }, maxWaitMs: 25 } });
    const s = srv;
    const chat = `${s.url}/v1/chat/completions`;
    const started: Promise<void>[] = [];
    const streams: Promise<StreamResult>[] = [];
    for (let i = 0; i < 10; i++) {
      let mark!: () => void;
      started.push(new Promise<void>((r) => (mark = r)));
      const long = i % 2 === 1;
      streams.push(
        streamChat(
          s.url,
          { model: 'small', messages: [{ role: 'user', content: `${21 + i}*${4 + i}` }], max_tokens: long ? 250 : 20, ignore_eos: true },
          {
            hangUp: (chunks) => {
              if (chunks >= 1) mark();
              return false;
            },
          },
        ),
      );
    }
    await Promise.all(started);
    const t0 = performance.now();
    s.child.kill('SIGTERM');

    // the drain is seen from outside: the probe turns 503, and a new request is refused with Retry-After
    let health = await probe(`${s.url}/health`);
    while (health.status === 200 && performance.now() - t0 < 5000) health = await probe(`${s.url}/health`);
    const healthz = await probe(`${s.url}/healthz`);
    const refused = await probe(chat, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'small', messages: [{ role: 'user', content: '1*2' }], max_tokens: 4 }),
    });
    const refusedAtMs = performance.now() - t0;

    const results = await Promise.all(streams.map((p) => p.catch((e: Error) => ({ cut: e.message }) as const)));
    const exit = await s.exited;
    const exitMs = performance.now() - t0;

    const short = results.filter((_, i) => i % 2 === 0) as StreamResult[];
    const long = results.filter((_, i) => i % 2 === 1) as StreamResult[];
    console.log(
      `[shutdown] SIGTERM with 10 streams running (grace ${graceMs} ms): /health ${health.status}, /healthz ${healthz.status} ${healthz.body}, new request ${refused.status} ` +
        `(Retry-After ${refused.retryAfter}) at ${refusedAtMs.toFixed(0)} ms; short streams: ${short.map((r) => (r.done ? `done ${r.e2eMs.toFixed(0)} ms` : JSON.stringify(r))).join(', ')}; ` +
        `long streams: ${long.map((r) => (r.error ? `${r.error.code} after ${r.chunks.length} chunks at ${r.e2eMs.toFixed(0)} ms` : JSON.stringify(r).slice(0, 200))).join(', ')}; ` +
        `exit ${exit.code ?? exit.signal} at ${exitMs.toFixed(0)} ms after SIGTERM`,
    );
    expect(health.status).toBe(503);
    expect(healthz.status).toBe(503);
    expect(JSON.parse(healthz.body)).toMatchObject({ ok: false, draining: true });
    expect(refused.status).toBe(503);
    expect(refused.retryAfter).toBe('1');
    expect(JSON.parse(refused.body).error).toMatchObject({ code: 'unavailable', type: 'server_error' });
    for (const r of results) expect(r, JSON.stringify(r).slice(0, 300)).not.toHaveProperty('cut');
    // every stream either finished or ended with an SSE error event; none was cut bare
    for (const r of short) expect([r.status, r.done, r.finishReason, r.error]).toEqual([200, true, 'length', null]);
    for (const r of long) {
      expect([r.status, r.done, r.aborted]).toEqual([200, false, false]);
      expect(r.error).toMatchObject({ code: 'unavailable', type: 'server_error' });
      expect(r.error?.message).toMatch(/shutting down/);
      expect(r.text.length).toBeGreaterThan(0);
    }
    expect(exit).toEqual({ code: 0, signal: null });
    expect(s.output()).toMatch(/5 of 10 requests finished, 5 ended with an error/);
    // generous bounds: the long streams were ended at the deadline, not long after
    expect(exitMs).toBeGreaterThanOrEqual(graceMs);
    expect(exitMs).toBeLessThan(graceMs + 15_000);
  }, 60_000);

  it('with nothing running, SIGTERM exits at once without waiting for the grace period', async () => {
    srv = await spawnServe({ limits: { shutdownGraceMs: 30_000 } });
    const t0 = performance.now();
    srv.child.kill('SIGTERM');
    const exit = await srv.exited;
    const ms = performance.now() - t0;
    console.log(`[shutdown] idle SIGTERM: exit ${exit.code} after ${ms.toFixed(0)} ms`);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(ms).toBeLessThan(15_000);
    expect(srv.output()).toMatch(/drained: 0 running requests finished/);
  }, 30_000);

  it('a unary answer still running at the deadline gets a JSON 503 with Retry-After, and its request is cancelled everywhere', async () => {
    rig = await startRig({ latency: { small: 20 } });
    const r = rig;
    const unary = call(`${r.url}/v1/completions`, 'POST', { model: 'small', prompt: '12*3=', max_tokens: 200, temperature: 0 });
    await new Promise<void>((resolve) => {
      const check = () => (r.service.cluster.activeCount > 0 ? resolve() : setTimeout(check, 10));
      check();
    });
    const report = await r.server.drain(300);
    const answer = await unary;
    console.log(
      `[shutdown] in-process drain of one unary request: ${JSON.stringify(report)}; answer ${answer.status} (Retry-After ${answer.headers.get('retry-after')})`,
    );
    expect(report).toMatchObject({ running: 1, ended: 1 });
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBe('1');
    expect(answer.json.error?.message).toMatch(/shutting down/);
    await expectNothingLeft(r.service);
  });
});
