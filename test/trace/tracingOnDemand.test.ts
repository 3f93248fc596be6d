// Tracing runs only while something reads it: no trace events without a reader; a live-feed client switches it on for every engine, config first (real HTTP and WebSocket).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import type { LiveMessage } from '../../shared/api/live.ts';
import type { TraceEvent } from '../../shared/trace.ts';
import { parseServerConfig } from '../../runtime/config/serverConfig.ts';
import { startServer, type RunningServer } from '../../runtime/server/createServer.ts';
import { TokenRouterService } from '../../runtime/serve/tokenRouterService.ts';
import { MODELS_DIR } from '../runner/helpers.ts';
import { startTestServer } from '../server/testService.ts';

const chat = (url: string, model: string) =>
  fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ model, messages: [{ role: 'user', content: '12*34' }], max_tokens: 12, temperature: 0 }) }).then((r) => r.json());

/** A live-feed client collecting every message it gets. */
async function liveClient(url: string): Promise<{ messages: LiveMessage[]; close(): void; until(f: (m: LiveMessage[]) => boolean): Promise<void> }> {
  const ws = new WebSocket(url.replace('http', 'ws') + '/live');
  const messages: LiveMessage[] = [];
  ws.on('message', (d) => messages.push(JSON.parse(String(d)) as LiveMessage));
  await new Promise((res, rej) => (ws.once('open', res), ws.once('error', rej)));
  return {
    messages,
    close: () => ws.close(),
    until: async (f) => {
      for (let i = 0; i < 200 && !f(messages); i++) await new Promise((r) => setTimeout(r, 25));
      expect(f(messages), JSON.stringify(messages.map((m) => (m.type === "snapshot" || m.type === "events" ? [m.type, m.events.map((e) => e.type + ("model" in e ? ":" + String(e.model) : ""))] : m.type))).slice(0, 600)).toBe(true);
    },
  };
}

const eventsOf = (ms: LiveMessage[]): TraceEvent[] => ms.flatMap((m) => (m.type === 'snapshot' || m.type === 'events' ? m.events : []));

describe('tracing without a reader (engines on the entry thread)', () => {
  it('produces no trace event; a reader switches it on with the config first, and off again when it leaves', async () => {
    const t = await startTestServer();
    try {
      await chat(t.url, 'r-stitch');
      expect(t.service.trace.events).toHaveLength(0);
      expect(t.service.cluster.trace).toBeUndefined();
      const seen: TraceEvent[] = [];
      const stop = t.service.trace.subscribe((e) => seen.push(e));
      expect(seen[0]?.type).toBe('config');
      await chat(t.url, 'r-stitch');
      const types = new Set(seen.map((e) => e.type));
      for (const ty of ['batch', 'handoff', 'request-state', 'request-end']) expect(types.has(ty as TraceEvent['type']), ty).toBe(true);
      stop();
      const before = t.service.trace.events.length;
      await chat(t.url, 'r-stitch');
      expect(t.service.trace.events.length).toBe(before);
    } finally {
      await t.close();
    }
  });
});

const HAVE_ONNX = fs.existsSync(path.join(MODELS_DIR, 'small', 'onnx', 'model.onnx'));

describe.runIf(HAVE_ONNX)('tracing without a reader (each model in its engine thread)', () => {
  let service: TokenRouterService;
  let server: RunningServer;
  beforeAll(async () => {
    const config = parseServerConfig({ port: 0, dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'tr-tracing-')), modelsDir: MODELS_DIR, models: [{ name: 'small' }, { name: 'large' }], defaultAlgorithm: 'r2r' });
    service = await TokenRouterService.start(config);
    server = await startServer(service, 0, '127.0.0.1');
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await service?.close();
  });

  it('no engine thread sends trace events until a live client connects; the client sees the config, then batches from every engine that wrote', async () => {
    const traced = vi.spyOn(service.cluster, 'traced');
    await chat(server.url, 'r2r');
    expect(traced).not.toHaveBeenCalled();
    expect(service.trace.events).toHaveLength(0);
    const live = await liveClient(server.url);
    try {
      await live.until((ms) => ms.some((m) => m.type === 'snapshot'));
      expect(live.messages[0].type).toBe('snapshot');
      expect(eventsOf(live.messages)[0].type).toBe('config');
      const answer = (await chat(server.url, 'r2r')) as { tokenrouter: { tokens_by_model: Record<string, number> } };
      const wrote = Object.entries(answer.tokenrouter.tokens_by_model).filter(([, n]) => n > 0).map(([m]) => m).sort();
      expect(wrote.length).toBeGreaterThan(0);
      await live.until((ms) => eventsOf(ms).some((e) => e.type === 'request-end'));
      expect([...new Set(eventsOf(live.messages).flatMap((e) => (e.type === 'batch' ? [e.model] : [])))].sort()).toEqual(expect.arrayContaining(wrote));
      expect(eventsOf(live.messages).filter((e) => e.type === 'config')).toHaveLength(1);
      expect(traced).toHaveBeenCalled();
    } finally {
      live.close();
    }
    // the last reader gone, the engines stop tracing: a request after it sends none
    for (let i = 0; i < 100 && service.cluster.trace !== undefined; i++) await new Promise((r) => setTimeout(r, 20));
    expect(service.cluster.trace).toBeUndefined();
    await new Promise((r) => setTimeout(r, 50));
    traced.mockClear();
    await chat(server.url, 'r2r');
    expect(traced).not.toHaveBeenCalled();
  }, 60_000);
});
