// The server always keeps a bounded window of recent trace events: a finished request is in /admin/trace of a server nobody watched, from every engine, and the window holds no more than trace.keepEvents (real HTTP and WebSocket).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { LiveMessage } from '../../shared/api/live.ts';
import type { TraceEvent } from '../../shared/trace.ts';
import { parseServerConfig } from '../../runtime/config/serverConfig.ts';
import { startServer, type RunningServer } from '../../runtime/http/createServer.ts';
import { TokenRouterService } from '../../runtime/http/tokenRouterService.ts';
import { startTestServer } from '../http/testService.ts';
import { TINY_FAMILY_DIR, tinyFamilyPresent } from '../support/tinyFamily.ts';

const chat = (url: string, model: string, maxTokens = 12) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: '12*34' }], max_tokens: maxTokens, temperature: 0 }),
  }).then((r) => r.json() as Promise<{ id: string; tokenrouter: { tokens_by_model: Record<string, number> } }>);

/** The trace as GET /admin/trace?format=jsonl exports it. */
async function exported(url: string): Promise<TraceEvent[]> {
  const text = await (await fetch(`${url}/admin/trace?format=jsonl`)).text();
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as TraceEvent);
}

const idsIn = (events: readonly TraceEvent[]) => new Set(events.flatMap((e) => ('requestId' in e ? [e.requestId] : 'requestIds' in e ? e.requestIds : [])));

describe('the trace window on a server nobody watched (engines on the entry thread)', () => {
  it("has a finished request's id and its life in /admin/trace, and a live client's snapshot starts from it", async () => {
    const t = await startTestServer();
    try {
      const answer = await chat(t.url, 'r-stitch');
      const events = await exported(t.url);
      expect(events[0]?.type).toBe('config');
      expect(idsIn(events).has(answer.id)).toBe(true);
      const mine = events.filter((e) => ('requestId' in e && e.requestId === answer.id) || ('requestIds' in e && e.requestIds.includes(answer.id)));
      for (const ty of ['batch', 'request-state', 'request-end'])
        expect(
          mine.some((e) => e.type === ty),
          ty,
        ).toBe(true);
      // the Chrome trace export names it too
      expect(await (await fetch(`${t.url}/admin/trace`)).text()).toContain(answer.id);
      // a timeline opened now starts with it
      const ws = new WebSocket(t.url.replace('http', 'ws') + '/live');
      const first = await new Promise<LiveMessage>((res, rej) => (ws.once('message', (d) => res(JSON.parse(String(d)) as LiveMessage)), ws.once('error', rej)));
      ws.close();
      expect(first.type).toBe('snapshot');
      if (first.type === 'snapshot') expect(idsIn(first.events).has(answer.id)).toBe(true);
    } finally {
      await t.close();
    }
  });

  it('keeps at most trace.keepEvents, the newest, led by the config in force', async () => {
    const t = await startTestServer({ config: { trace: { keepEvents: 1000 } } });
    try {
      const first = await chat(t.url, 'r-stitch', 24);
      let last = first;
      // past 1000 dropped, every event of the first thousand (the first request's among them) has left
      for (let i = 0; i < 300 && t.service.trace.dropped <= 1000; i++) last = await chat(t.url, 'r-stitch', 24);
      expect(t.service.trace.dropped).toBeGreaterThan(1000);
      const events = await exported(t.url);
      expect(events.length).toBeLessThanOrEqual(1001);
      expect(events[0].type).toBe('config');
      const ids = idsIn(events);
      expect(ids.has(last.id)).toBe(true);
      expect(ids.has(first.id)).toBe(false);
    } finally {
      await t.close();
    }
  });

  it('refuses a window out of bounds, naming the key', () => {
    expect(() => parseServerConfig({ trace: { keepEvents: 10 } })).toThrow(/trace\.keepEvents/);
    expect(() => parseServerConfig({ trace: { keepEvents: 1.5 } })).toThrow(/trace\.keepEvents/);
    expect(parseServerConfig({}).trace.keepEvents).toBe(20_000);
  });
});

const HAVE_ONNX = tinyFamilyPresent(['small']);

describe.runIf(HAVE_ONNX)('the trace window on a server nobody watched (each model in its engine thread)', () => {
  let service: TokenRouterService;
  let server: RunningServer;
  beforeAll(async () => {
    const config = parseServerConfig({
      port: 0,
      dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'tr-tracing-')),
      modelsDir: TINY_FAMILY_DIR,
      models: [{ name: 'small' }, { name: 'large' }],
      defaultAlgorithm: 'r2r',
    });
    service = await TokenRouterService.start(config);
    server = await startServer(service, 0, '127.0.0.1');
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await service?.close();
  });

  it('holds the finished request and the batches of every engine thread that wrote, with no reader', async () => {
    const answer = await chat(server.url, 'r2r');
    const wrote = Object.entries(answer.tokenrouter.tokens_by_model)
      .filter(([, n]) => n > 0)
      .map(([m]) => m)
      .sort();
    expect(wrote.length).toBeGreaterThan(0);
    const events = await exported(server.url);
    expect(events.some((e) => e.type === 'request-end' && e.requestId === answer.id)).toBe(true);
    const batchedBy = new Set(events.flatMap((e) => (e.type === 'batch' && e.requestIds.includes(answer.id) ? [e.model] : [])));
    expect([...batchedBy].sort()).toEqual(expect.arrayContaining(wrote));
  }, 60_000);
});
