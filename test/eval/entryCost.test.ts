// The entry's cost in a prediction: Little's law over the closed loop, and the per-request time the entry profile measures.
import http from 'node:http';
import express from 'express';
import { describe, expect, it } from 'vitest';
import type { TraceEvent } from '../../shared/trace.ts';
import { EntryProfile } from '../../runtime/eval/entryProfile.ts';
import { closedLoopThroughput } from '../../runtime/eval/predictServing.ts';

describe('closedLoopThroughput', () => {
  // a server whose every request takes 100 ms in the engine at any concurrency: X(n) = n · L / 0.1 s
  const L = 50;
  const X = (n: number) => (n * L) / 0.1;
  it('leaves every client in the engine without an entry cost', () => {
    expect(closedLoopThroughput(8, 0, L, X)).toEqual({ inEngine: 8, tokS: X(8) });
  });
  it('takes the entry time out of the engine by Little\'s law: c · R / (R + d) in flight', () => {
    // 25 ms outside the engine per 100 ms inside: 8 · 100 / 125 = 6.4 in the engine, 64 req/s
    const r = closedLoopThroughput(8, 25, L, X);
    expect(r.inEngine).toBeCloseTo(6.4, 9);
    expect(r.tokS).toBeCloseTo(6.4 * 10 * L, 6);
  });
  it('interpolates between whole concurrencies where X is not linear, and the root satisfies n + X(n)·d/L = c', () => {
    const sat = (n: number) => 1000 * (1 - Math.exp(-n / 3));
    const r = closedLoopThroughput(8, 10, 20, sat);
    const k = Math.floor(r.inEngine);
    expect(r.inEngine).toBeGreaterThan(0);
    expect(r.inEngine).toBeLessThan(8);
    expect(r.tokS).toBeCloseTo(sat(k) + (r.inEngine - k) * (sat(k + 1) - sat(k)), 9);
    expect(r.inEngine + (r.tokS * 10) / 1000 / 20).toBeCloseTo(8, 9);
  });
});

describe('EntryProfile', () => {
  it('times real HTTP requests at the server and subtracts their time in the cluster', async () => {
    let clock = 0;
    const profile = new EntryProfile(() => clock);
    const app = express();
    app.use('/v1', profile.middleware);
    let n = 0;
    app.post('/v1/chat/completions', (_req, res) => {
      clock += n++ === 3 ? 60 : 30; // entry work and engine time together, as the clock sees it: 30 ms, the fourth 60
      res.json({ ok: true });
    });
    app.post('/v1/fail', (_req, res) => {
      clock += 500;
      res.status(400).json({});
    });
    const server = http.createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    try {
      for (let i = 0; i < 4; i++) await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
      await fetch(`http://127.0.0.1:${port}/v1/fail`, { method: 'POST', body: '{}' });
    } finally {
      await new Promise((r) => server.close(r));
    }
    const end = (id: string, t: number, admittedAt: number): TraceEvent => ({ type: 'request-end', t, requestId: id, status: 'done', tokens: [1], runs: [], handoffs: 0, admittedAt, firstTokenAt: null });
    // the cluster held each live request 22 ms; an evaluation's request (not HTTP) is left out
    // (the four answered requests ended at 30, 60, 90 and 150 ms on the clock, the refused one at 650)
    const events = [end('chatcmpl-a', 30, 8), end('chatcmpl-b', 60, 38), end('ev1-0', 90, 0)];
    const cost = profile.cost(events, (id) => !id.startsWith('ev'), 60_000);
    // only the four answered requests count (the refused one is not served traffic): 37.5 − 22 ms
    expect(cost).toEqual({ perRequestMs: 15.5, requests: 2 });
    expect(profile.cost([], () => true, 60_000)).toBeNull();
    // events that reach back only to the last request: the walls before them are left out too (the last request's 60 ms alone)
    const lastOnly = [end('chatcmpl-c', 150, 115)];
    expect(profile.cost(lastOnly, () => true, 60_000)).toEqual({ perRequestMs: 25, requests: 1 });
  });
});
