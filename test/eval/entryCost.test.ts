// The entry's cost in a prediction: Little's law over the closed loop, and the per-request time the entry profile measures.
import http from 'node:http';
import express from 'express';
import { describe, expect, it } from 'vitest';
import { EntryProfile, spentInCluster } from '../../runtime/eval/entryProfile.ts';
import { closedLoopThroughput } from '../../runtime/eval/predictServing.ts';

describe('closedLoopThroughput', () => {
  // a server whose every request takes 100 ms in the engine at any concurrency: X(n) = n · L / 0.1 s
  const L = 50;
  const X = (n: number) => (n * L) / 0.1;
  it('leaves every client in the engine without an entry cost', () => {
    expect(closedLoopThroughput(8, 0, L, X)).toEqual({ inEngine: 8, tokS: X(8) });
  });
  it("takes the entry time out of the engine by Little's law: c · R / (R + d) in flight", () => {
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
  it("times real HTTP requests at the server and subtracts each one's own time in the cluster, with no trace", async () => {
    let clock = 0;
    const profile = new EntryProfile(() => clock);
    const app = express();
    app.use('/v1', profile.middleware);
    app.post('/v1/chat/completions', (req, res) => {
      // entry work and engine time together, as the clock sees it; the cluster's share as the answer learns it
      const { wall, inCluster } = req.query as Record<string, string>;
      const t0 = clock;
      clock += Number(wall);
      if (inCluster !== undefined) spentInCluster(res, { submittedAt: t0 + 1, endedAt: t0 + 1 + Number(inCluster) });
      res.json({ ok: true });
    });
    app.post('/v1/fail', (_req, res) => {
      clock += 500;
      spentInCluster(res, { submittedAt: clock - 400, endedAt: clock });
      res.status(400).json({});
    });
    app.post('/v1/completions', (_req, res) => {
      const t0 = clock;
      clock += 40;
      // two choices: first admitted at +5, last ended at +35, so 30 in the cluster whatever each took
      spentInCluster(res, { submittedAt: t0 + 10, endedAt: t0 + 35 });
      spentInCluster(res, { submittedAt: t0 + 5, endedAt: t0 + 30 });
      res.json({ ok: true });
    });
    const server = http.createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const send = (path: string) => fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    let stop = () => {};
    try {
      // nothing measures (no evaluation, no prediction check): the request is answered and not timed
      expect(profile.measuring).toBe(false);
      await send('/v1/chat/completions?wall=30&inCluster=22');
      expect(profile.cost(60_000)).toBeNull();
      stop = profile.measureWhile(100);
      expect(profile.measuring).toBe(true);
      await send('/v1/chat/completions?wall=30&inCluster=22');
      await send('/v1/chat/completions?wall=60&inCluster=35');
      await send('/v1/chat/completions?wall=20'); // refused before the cluster: no span, not counted
      expect(profile.cost(60_000)).toEqual({ perRequestMs: (8 + 25) / 2, requests: 2 });
      await send('/v1/fail'); // not a 200: not counted
      await send('/v1/completions');
    } finally {
      await new Promise((r) => server.close(r));
    }
    // measured from 30: answered at 60 and 120 (the one with no span at 140, the refused one at 640), the two-choice one at 680
    expect(profile.cost(60_000)).toEqual({ perRequestMs: (8 + 25 + 10) / 3, requests: 3 });
    // the window: 60 ms back from 680 holds only the two-choice request
    expect(profile.cost(60)).toEqual({ perRequestMs: 10, requests: 1 });
    // the run ended: measuring goes on for the 100 ms asked, then stops
    stop();
    clock += 99;
    expect(profile.measuring).toBe(true);
    clock += 2;
    expect(profile.measuring).toBe(false);
    profile.measureFor(10);
    expect(profile.measuring).toBe(true);
  });
});
