// A replica takes a peer's handoff only as its entry deployed it: from a listed replica, for an entry it serves, and checked by the protocol's schema.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NatsConnection } from '@nats-io/transport-node';
import { createRealClock } from '../../runtime/clock/clock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import { openNats } from '../../runtime/transport/nats/natsConnection.ts';
import { encodeFrame } from '../../runtime/transport/nats/natsLink.ts';
import { peerSubject } from '../../runtime/transport/nats/natsPeers.ts';
import { RemoteEngine, RemoteMesh } from '../../runtime/transport/nats/remoteEngine.ts';
import { runOracle } from '../support/sequentialOracle.ts';
import { startNatsServer, type NatsServerProcess } from '../support/rigs/natsServerProcess.ts';
import { everyN } from '../core/everyN.ts';
import { caseRunner } from '../core/threadSim.ts';
import { HAVE_NATS, sleep, startReplica, until, type TestReplica } from './helpers.ts';

const EVERY = fileURLToPath(new URL('../core/everyN.ts', import.meta.url));

describe.skipIf(!HAVE_NATS)("peer replicas' frames", () => {
  let nats: NatsServerProcess;
  let nc: NatsConnection;
  const replicas: TestReplica[] = [];
  beforeAll(async () => {
    nats = await startNatsServer();
    nc = await openNats({ servers: nats.url, name: 'test-forger' });
  }, 30_000);
  afterAll(async () => {
    await nc?.close();
    for (const r of replicas) await r.close().catch(() => {});
    await nats?.stop();
  });

  it('frames for an entry it does not serve, from a replica not listed, or malformed are refused and counted; the deployment serves on', async () => {
    const small = await startReplica(nats.url, 'small', 's', { runner: caseRunner('small', 0, -1) });
    const large = await startReplica(nats.url, 'large', 'l', { runner: caseRunner('large', 1, -1) });
    replicas.push(small, large);
    const mesh = new RemoteMesh();
    const engines = await Promise.all(['small', 'large'].map((model) => RemoteEngine.connect({ model, nats: nats.url, mesh, log: () => {} })));
    const cluster = new Cluster({ clock: createRealClock(), mode: 'async-immediate', models: engines.map((e) => ({ name: e.name, thread: e, maxBatch: 8 })) });
    const alg = everyN(3);
    const algorithmRef = { key: alg.name, source: { kind: 'module' as const, module: EVERY, export: 'everyN', args: [3] } };
    // the deployment is begun and the replicas know their peers: a first request goes both ways
    const first = await cluster.submit({ id: 'warm', prompt: [1, 2, 3], maxTokens: 12, algorithm: alg, algorithmRef }).done;
    expect(first.status).toBe('done');

    const to = peerSubject(large.server.subject);
    const handoff = { type: 'arrive', arrivals: [{ spec: { id: 'forged' }, handoff: { tokens: 'not tokens' } }] };
    const ignored = large.server.stats.ignored;
    nc.publish(to, encodeFrame({ session: 'x', reply: small.server.subject, entry: 'no-such-entry', seq: 1, messages: [handoff] }));
    nc.publish(to, encodeFrame({ session: 'y', reply: 'tokenrouter.small.r.intruder.00', entry: mesh.session, seq: 1, messages: [handoff] }));
    await until(() => large.server.stats.ignored === ignored + 2, 3000, 'two frames ignored');

    // the deployment goes on: requests handed back and forth straight between the replicas, as the oracle says
    const requests = Array.from({ length: 6 }, (_, i) => ({ id: `r${i}`, prompt: [1 + i, 2, 3], maxTokens: 40 }));
    const results = await Promise.all(requests.map((r) => cluster.submit({ ...r, algorithm: alg, algorithmRef }).done));
    const oracle = { small: caseRunner('small', 0, -1), large: caseRunner('large', 1, -1) };
    for (const r of results) {
      expect(r.status, r.error?.message).toBe('done');
      expect(r.tokens).toEqual((await runOracle(alg, oracle, requests.find((q) => q.id === r.id)!)).tokens);
    }
    expect(small.server.peerStats.direct + large.server.peerStats.direct).toBeGreaterThan(6 * 10);
    expect(small.server.peerStats.viaEntry + large.server.peerStats.viaEntry).toBe(0);

    // cancelled while they bounce between the replicas: every release reaches wherever the request went
    // (to every replica when the entry has not heard where yet), so neither keeps anything of them
    const bouncing = Array.from({ length: 8 }, (_, i) => cluster.submit({ id: `c${i}`, prompt: [2 + i, 3], maxTokens: 200, algorithm: alg, algorithmRef }));
    await sleep(30);
    for (const h of bouncing) h.cancel();
    expect((await Promise.all(bouncing.map((h) => h.done))).every((r) => r.status === 'cancelled')).toBe(true);
    await until(() => small.server.held + large.server.held === 0, 3000, 'both replicas hold nothing of the cancelled requests');

    // from the listed peer's subject, for this entry, but not a handoff the schema allows (last: a
    // new session on that link numbers it afresh, as a restarted peer's would)
    nc.publish(to, encodeFrame({ session: 'z', reply: small.server.subject, entry: mesh.session, seq: 1, messages: [handoff] }));
    await until(() => large.server.peerStats.malformed === 1, 3000, 'the malformed handoff refused');
    await sleep(50);
    expect(large.server.held).toBe(0);
    expect(large.server.stats.failed).toBe(0);
    for (const e of engines) await e.close();
  }, 30_000);
});
