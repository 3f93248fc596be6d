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
  it('times real HTTP requests at the server and subtracts each one\'s own time in the cluster', async () => {
    let clock = 0;
    const profile = new EntryProfile(() => clock);
    const app = express();
    app.use('/v1', profile.middleware);
    let n = 0;
    const ids = ['chatcmpl-a', 'chatcmpl-b', 'chatcmpl-c', 'chatcmpl-d'];
    app.post('/v1/chat/completions', (_req, res) => {
      // entry work and engine time together, as the clock sees it: 30 ms, the fourth 60
      clock += n === 3 ? 60 : 30;
      res.set('X-Request-Id', ids[n++]).json({ ok: true });
    });
    app.post('/v1/fail', (_req, res) => {
      clock += 500;
      res.status(400).set('X-Request-Id', 'chatcmpl-x').json({});
    });
    app.post('/v1/completions', (_req, res) => {
      clock += 40; // two choices, run as chatcmpl-n-0 and chatcmpl-n-1
      res.set('X-Request-Id', 'cmpl-n').json({ ok: true });
    });
    const server = http.createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const send = (path: string) => fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    try {
      for (let i = 0; i < 4; i++) await send('/v1/chat/completions');
      await send('/v1/fail');
      await send('/v1/completions');
    } finally {
      await new Promise((r) => server.close(r));
    }
    // answered at 30, 60, 90, 150 ms on the clock, the refused one at 650, the two-choice one at 690
    const end = (id: string, t: number, admittedAt: number): TraceEvent => ({ type: 'request-end', t, requestId: id, status: 'done', tokens: [1], runs: [], handoffs: 0, admittedAt, firstTokenAt: null });
    expect(profile.cost([], 60_000)).toBeNull();
    // each request less its own time in the cluster: a (30 − 22) and d (60 − 35); b and c ended outside what the trace holds, an evaluation's request has no wall
    const events = [end('chatcmpl-a', 30, 8), end('ev1-0', 40, 0), end('chatcmpl-d', 150, 115), end('chatcmpl-x', 650, 640)];
    expect(profile.cost(events, 60_000)).toEqual({ perRequestMs: (8 + 25) / 2, requests: 2 });
    // the window: 60 ms back from the last answer (690) leaves a and d out
    expect(profile.cost(events, 60)).toBeNull();
    // several choices: first admitted to last ended (40 − 30 in the cluster of a 40 ms wall)
    expect(profile.cost([end('cmpl-n-0', 680, 655), end('cmpl-n-1', 685, 660)], 60)).toEqual({ perRequestMs: 10, requests: 1 });
  });
});
