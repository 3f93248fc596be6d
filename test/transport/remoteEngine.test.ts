// The remote engine's parts on their own: the ordered link under loss, connect errors, placement by capacity, an entry's state freed when it leaves.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRealClock } from '../../runtime/clock/clock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import { decodeFrame, NatsLink } from '../../runtime/transport/nats/natsLink.ts';
import type { LinkFrame } from '../../runtime/transport/nats/natsConnection.ts';
import { RemoteEngine } from '../../runtime/transport/nats/remoteEngine.ts';
import { buildAlgorithm } from '../../runtime/registry/algorithmSource.ts';
import { parseServerConfig } from '../../runtime/config/serverConfig.ts';
import { startNatsServer, type NatsServerProcess } from '../support/rigs/natsServerProcess.ts';
import { HAVE_NATS, sleep, startReplica, until, type TestReplica } from './helpers.ts';

describe('NatsLink', () => {
  /** Two links wired back to back through `wire`, which may drop frames. */
  function pair(wire: (bytes: Uint8Array, deliver: () => void) => void) {
    let a!: NatsLink;
    let b!: NatsLink;
    a = new NatsLink({ session: 'a', resendMs: 30, ackMs: 5, publish: (bytes) => wire(bytes, () => b.receive(decodeFrame(bytes)!)) });
    b = new NatsLink({ session: 'b', resendMs: 30, ackMs: 5, publish: (bytes) => wire(bytes, () => a.receive(decodeFrame(bytes)!)) });
    return { a, b };
  }

  it('delivers every message once and in order when frames are lost, by resending what was not acked', async () => {
    let n = 0;
    // an outage: frames 60 to 120 either way vanish, acks included, and then every 13th
    const { a, b } = pair((_bytes, deliver) => {
      n++;
      if ((n < 60 || n > 120) && n % 13 !== 0) setImmediate(deliver);
    });
    const got: unknown[] = [];
    b.on('message', (m) => got.push(m));
    // one to three messages a turn: frames carry several
    for (let i = 0; i < 200; i++) {
      a.postMessage({ i, big: Infinity });
      if (i % 3 !== 1) await new Promise((r) => setImmediate(r));
    }
    await until(() => got.length >= 200, 5000, 'all messages');
    await sleep(100);
    expect(got).toEqual(Array.from({ length: 200 }, (_, i) => ({ i, big: Infinity })));
    expect(a.stats.resent).toBeGreaterThan(0);
    expect(b.stats.dropped).toBeGreaterThan(0);
    a.close();
    b.close();
  });

  it("a turn's messages travel as one frame carrying the ack; a frame too big for NATS splits into one per message", async () => {
    const frames: LinkFrame[] = [];
    const { a, b } = pair((bytes, deliver) => {
      frames.push(decodeFrame(bytes)!);
      deliver();
    });
    const got: unknown[] = [];
    a.on('message', (m) => got.push(m));
    b.postMessage('b1');
    await until(() => got.length === 1, 1000, 'the first message');
    a.postMessage('a1');
    a.postMessage('a2');
    b.postMessage({ big: 'x'.repeat(200_000) });
    b.postMessage({ big: 'y'.repeat(200_000) });
    await until(() => got.length === 3, 1000, 'both big messages');
    const numbered = frames.filter((f) => f.seq !== undefined);
    const fromA = numbered.filter((f) => f.session === 'a');
    expect(fromA.map((f) => f.messages)).toEqual([['a1', 'a2']]);
    // a has b's first frame: its frame acks it without a frame of its own
    expect(fromA[0].ack).toBe(1);
    expect(numbered.filter((f) => f.session === 'b').map((f) => [f.seq, f.messages?.length])).toEqual([
      [1, 1],
      [2, 1],
      [3, 1],
    ]);
    expect(got.map((m) => (typeof m === 'string' ? m : (m as { big: string }).big.length))).toEqual(['b1', 200_000, 200_000]);
    a.close();
    b.close();
  });

  it('a peer that starts a new session is numbered afresh', () => {
    const got: unknown[] = [];
    const b = new NatsLink({ session: 'b', publish: () => {} });
    b.on('message', (m) => got.push(m));
    b.receive({ session: 'x', seq: 1, messages: ['one'] });
    b.receive({ session: 'x', seq: 2, messages: ['two'] });
    b.receive({ session: 'y', seq: 1, messages: ['again'] });
    b.receive({ session: 'y', seq: 1, messages: ['duplicate'] });
    expect(got).toEqual(['one', 'two', 'again']);
    b.close();
  });
});

describe("RemoteEngine's options are the config's remote block", () => {
  it('what the config file refuses, connect() refuses with the same words, before reaching NATS', async () => {
    const bad = { nats: 'localhost:4222', heartbeatTimeoutMs: 10 };
    expect(() => parseServerConfig({ models: [{ name: 'large', remote: bad }] })).toThrow(
      /models\.0\.remote\.nats: a nats:\/\/ URL[\s\S]*models\.0\.remote\.heartbeatTimeoutMs: Too small/,
    );
    await expect(RemoteEngine.connect({ model: 'large', ...bad })).rejects.toThrow(
      /model large: remote\.nats: a nats:\/\/ URL.*; remote\.heartbeatTimeoutMs: Too small/,
    );
    // a key of the removed per-step runner is refused by name, as in the file
    await expect(RemoteEngine.connect({ model: 'large', nats: 'nats://127.0.0.1:1', pipelineDepth: 2 } as never)).rejects.toThrow(
      /remote\.pipelineDepth: remote\.pipelineDepth was removed/,
    );
  });
});

/** The large model alone, by reference: the remote engine builds it from data. */
const REF = { key: 'large@1', source: { kind: 'single' as const, model: 'large' } };
const ALG = buildAlgorithm(REF.source);
const LATENCY = { baseMs: 2, perRowMs: 0, perTokenMs: 0 };

describe.skipIf(!HAVE_NATS)('RemoteEngine over a real nats-server', () => {
  let nats: NatsServerProcess;
  const replicas: TestReplica[] = [];
  beforeAll(async () => {
    nats = await startNatsServer();
  }, 30_000);
  afterAll(async () => {
    for (const r of replicas) await r.close().catch(() => {});
    await nats?.stop();
  });

  it('connect() names the missing sub-server when none announces itself', async () => {
    await expect(RemoteEngine.connect({ model: 'nobody', nats: nats.url, connectTimeoutMs: 300, log: () => {} })).rejects.toThrow(
      /no sub-server for model "nobody".*tokenrouter subserver --model nobody/,
    );
  });

  it('places new requests by capacity (three times the KV, three times the requests), and a replica frees what an entry held when it closes', async () => {
    const big = await startReplica(nats.url, 'large', 'big', { kvCapacityTokens: 30_000, latency: LATENCY });
    const small = await startReplica(nats.url, 'large', 'small', { kvCapacityTokens: 10_000, latency: LATENCY });
    replicas.push(big, small);
    const engine = await RemoteEngine.connect({ model: 'large', nats: nats.url, log: () => {} });
    await until(() => engine.replicaViews().length === 2, 3000, 'both replicas');
    const cluster = new Cluster({ clock: createRealClock(), mode: 'async-immediate', models: [{ name: 'large', thread: engine }] });
    const handles = Array.from({ length: 40 }, (_, i) =>
      cluster.submit({ id: `p-${i}`, prompt: [1, 5, 6], maxTokens: 400, algorithm: ALG, algorithmRef: REF }),
    );
    await until(() => big.server.held + small.server.held === 40, 5000, 'all placed');
    expect(big.server.held).toBe(30);
    expect(small.server.held).toBe(10);
    const views = Object.fromEntries(engine.replicaViews().map((v) => [v.name, v.requests]));
    expect(views).toEqual({ big: 30, small: 10 });
    // the entry leaves mid-generation: the replicas free everything it held
    await engine.close();
    await until(() => big.server.held + small.server.held === 0, 3000, 'state freed');
    for (const h of handles) h.cancel();
  }, 30_000);

  it("a replica that crashes holding requests fails exactly those, and the other replica's requests finish", async () => {
    for (const r of replicas.splice(0)) await r.close();
    const a = await startReplica(nats.url, 'large', 'a', { latency: LATENCY });
    const b = await startReplica(nats.url, 'large', 'b', { latency: LATENCY });
    replicas.push(a, b);
    const engine = await RemoteEngine.connect({ model: 'large', nats: nats.url, heartbeatTimeoutMs: 300, log: () => {} });
    await until(() => engine.replicaViews().length === 2, 3000, 'both replicas');
    const cluster = new Cluster({ clock: createRealClock(), mode: 'async-immediate', models: [{ name: 'large', thread: engine }] });
    const handles = Array.from({ length: 8 }, (_, i) => cluster.submit({ id: `c-${i}`, prompt: [1, 5, 6], maxTokens: 150, algorithm: ALG, algorithmRef: REF }));
    await until(() => a.server.held === 4 && b.server.held === 4, 5000, 'spread over both');
    await a.crash();
    const results = await Promise.all(handles.map((h) => h.done));
    const failed = results.filter((r) => r.status === 'failed');
    expect(failed).toHaveLength(4);
    for (const f of failed) expect(f.error?.message).toMatch(/replica a of model large is gone \(no heartbeat/);
    expect(results.filter((r) => r.status === 'done').every((r) => r.tokens.length === 150)).toBe(true);
    expect(engine.replicaViews().map((v) => v.name)).toEqual(['b']);
    expect(engine.down).toBe(false);
    await engine.close();
  }, 30_000);
});
