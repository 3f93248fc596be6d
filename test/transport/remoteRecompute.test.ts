// A lost replica under onReplicaLoss "recompute": the requests away from it when it died go on, re-prefilled on the other replica, token for token as the oracle says (small local, or remote too).
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRealClock } from '../../runtime/clock/clock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import type { RequestResult } from '../../runtime/entry/requestState.ts';
import { RemoteEngine, RemoteMesh } from '../../runtime/transport/nats/remoteEngine.ts';
import { runOracle } from '../support/sequentialOracle.ts';
import { startNatsServer, type NatsServerProcess } from '../support/rigs/natsServerProcess.ts';
import { everyN } from '../core/everyN.ts';
import { caseRunner } from '../core/threadSim.ts';
import { HAVE_NATS, startReplica, until, type TestReplica } from './helpers.ts';

const EVERY = fileURLToPath(new URL('../core/everyN.ts', import.meta.url));
const NAMES = ['small', 'large'];

describe.skipIf(!HAVE_NATS)('a lost replica with onReplicaLoss "recompute"', () => {
  let nats: NatsServerProcess;
  const replicas: TestReplica[] = [];
  beforeAll(async () => {
    nats = await startNatsServer();
  }, 30_000);
  afterAll(async () => {
    for (const r of replicas) await r.close().catch(() => {});
    await nats?.stop();
  });

  /**
   * 24 staggered requests (small hands to large every 400th step); replica a dies once 8 that have
   * been to large decode on small. `small`: in the entry's process, or a remote engine too (then
   * the handoffs go sub-server to sub-server, and small's replica re-places the spared requests).
   */
  async function crashMidway(onReplicaLoss: 'fail' | 'recompute', small: 'local' | 'remote' = 'local') {
    for (const r of replicas.splice(0)) await r.close();
    const a = await startReplica(nats.url, 'large', 'a', { runner: caseRunner('large', 1, -1) });
    const b = await startReplica(nats.url, 'large', 'b', { runner: caseRunner('large', 1, -1) });
    replicas.push(a, b);
    const mesh = small === 'remote' ? new RemoteMesh() : undefined;
    if (mesh) replicas.push(await startReplica(nats.url, 'small', 's', { runner: caseRunner('small', 0, -1) }));
    const engine = await RemoteEngine.connect({ model: 'large', nats: nats.url, heartbeatTimeoutMs: 200, onReplicaLoss, mesh, log: () => {} });
    const smallEngine = mesh ? await RemoteEngine.connect({ model: 'small', nats: nats.url, heartbeatTimeoutMs: 2000, mesh, log: () => {} }) : null;
    await until(() => engine.replicaViews().length === 2, 3000, 'both replicas');
    const cluster = new Cluster({
      clock: createRealClock(),
      mode: 'async-delayed',
      maxConcurrency: 32,
      checkInvariants: true,
      maxWaitMs: 5,
      models: [
        smallEngine
          ? { name: 'small', thread: smallEngine, maxBatch: 8, threshold: 1 }
          : { name: 'small', runner: caseRunner('small', 0, -1), maxBatch: 8, threshold: 1, kvCapacityTokens: Infinity },
        { name: 'large', thread: engine, maxBatch: 8, threshold: 1 },
      ],
    });
    const alg = everyN(400);
    const algorithmRef = { key: alg.name, source: { kind: 'module' as const, module: EVERY, export: 'everyN', args: [400] } };
    const requests = Array.from({ length: 24 }, (_, i) => ({ id: `r${i}`, prompt: [1 + (i % 7), 2 + (i % 5), 3], maxTokens: 1200 }));
    const pending: Promise<RequestResult>[] = [];
    for (const r of requests) {
      pending.push(cluster.submit({ ...r, algorithm: alg, algorithmRef }).done);
      await new Promise((res) => setTimeout(res, 4));
    }
    const visited = () => [...cluster.activeRequests()].filter((q) => q.whereabouts.model === 'small' && q.producedBy.includes(2));
    await expect.poll(() => visited().length >= 8, { timeout: 15_000, interval: 1 }).toBe(true);
    await a.crash();
    const results = await Promise.all(pending);
    await engine.close();
    await smallEngine?.close();
    const oracleRunners = Object.fromEntries(NAMES.map((n, i) => [n, caseRunner(n, i, -1)]));
    for (const r of results.filter((q) => q.status === 'done')) {
      const want = await runOracle(alg, oracleRunners, requests.find((q) => q.id === r.id)!);
      expect(r.tokens, r.id).toEqual(want.tokens);
      expect(r.producedBy, r.id).toEqual(want.producedBy);
    }
    const failed = results.filter((r) => r.status === 'failed');
    for (const f of failed) expect(f.error?.message).toMatch(/replica a of model large is gone/);
    const { failedOnLoss, spared, recomputed } = engine.stats;
    console.log(
      `[remote-recompute] ${onReplicaLoss}, small ${small}: at the loss ${failedOnLoss} failed, ${spared} spared (${recomputed} of them re-prefilled on b); ${failed.length} failed in all`,
    );
    return { failed: failed.length, failedOnLoss, spared, recomputed, smallReplica: mesh ? replicas[2].server.peerStats : null };
  }

  it('requests away at small when their home replica died re-prefill on the other; only those decoding there fail', async () => {
    const { failed, failedOnLoss, spared, recomputed } = await crashMidway('recompute');
    // requests homed on a that were decoding on small at the crash came back to large and re-prefilled on b (and equal the oracle, above)
    expect(spared).toBeGreaterThan(0);
    expect(recomputed).toBeGreaterThan(0);
    expect(failed).toBe(failedOnLoss);
  }, 60_000);

  it('small remote too: the small sub-server re-places the requests away from the lost replica on the other, with their whole sequence', async () => {
    const { failed, failedOnLoss, spared, recomputed, smallReplica } = await crashMidway('recompute', 'remote');
    expect(spared).toBeGreaterThan(0);
    expect(recomputed).toBeGreaterThan(0);
    // re-placed on b by small's replica itself, which sent every other handoff straight to large too (the entry heard where from the moved events)
    expect(smallReplica!.recomputed).toBe(recomputed);
    expect(smallReplica!.viaEntry).toBe(0);
    expect(smallReplica!.direct).toBeGreaterThanOrEqual(24);
    expect(failed).toBe(failedOnLoss);
  }, 60_000);

  it('"fail" fails every request homed on the lost replica, away or not', async () => {
    const { failed, failedOnLoss, spared, recomputed } = await crashMidway('fail');
    expect(spared + recomputed).toBe(0);
    expect(failedOnLoss).toBeGreaterThan(0);
    expect(failed).toBe(failedOnLoss);
  }, 60_000);
});
