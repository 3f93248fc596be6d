// The tiny fixture family's ONNX models with the large model remote, or both remote (handing off engine to engine): engine servers behind a real nats-server commit what the sequential oracle commits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NatsConnection } from '@nats-io/transport-node';
import { builtinFactory } from '../../examples/algorithms/index.ts';
import { createRealClock } from '../../runtime/clock/clock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import { openNats } from '../../runtime/transport/nats/natsConnection.ts';
import { RemoteEngine, RemoteMesh } from '../../runtime/transport/nats/remoteEngine.ts';
import { RemoteEngineServer } from '../../runtime/transport/nats/remoteEngineServer.ts';
import { natsServerBinary, startNatsServer, type NatsServerProcess } from '../support/rigs/natsServerProcess.ts';
import { runOracle } from '../support/sequentialOracle.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { SCHEDULING_MODES } from '../../runtime/core/servingPolicy.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { tinyModelDir, tinyQuestions } from '../support/tinyFamily.ts';

const PROMPTS = 12;
const MAX_TOKENS = 48;

describe.skipIf(natsServerBinary() === null)('large model remote: engine server over a real nats-server', () => {
  const runners: Record<string, OnnxRunner> = {};
  let prompts: number[][];
  let nats: NatsServerProcess;
  let nc: NatsConnection;
  let server: RemoteEngineServer;
  let remoteRunner: OnnxRunner;
  let smallServer: RemoteEngineServer;
  let remoteSmall: OnnxRunner;

  beforeAll(async () => {
    for (const n of ['small', 'large']) runners[n] = await OnnxRunner.load(tinyModelDir(n));
    const tok = TextTokenizer.fromFolder(loadModelFolder(tinyModelDir('small')));
    prompts = tinyQuestions(PROMPTS).map((q) => tok.encodeChat([{ role: 'user', content: q }]));
    nats = await startNatsServer();
    nc = await openNats({ servers: nats.url, name: 'test-remote-large' });
    // its own runner: the oracle's must not share caches with the engine under test
    remoteRunner = await OnnxRunner.load(tinyModelDir('large'));
    server = await RemoteEngineServer.start(nc, remoteRunner, { model: 'large', replica: 'large-a', kvCapacityTokens: 1e6, heartbeatMs: 50, log: () => {} });
    remoteSmall = await OnnxRunner.load(tinyModelDir('small'));
    smallServer = await RemoteEngineServer.start(nc, remoteSmall, {
      model: 'small',
      replica: 'small-a',
      kvCapacityTokens: 1e6,
      heartbeatMs: 50,
      log: () => {},
    });
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await smallServer?.close();
    await nc?.close();
    await nats?.stop();
    for (const r of [...Object.values(runners), remoteRunner, remoteSmall]) await r?.close();
  });

  // every mode, and standard serving (retainState false: each return re-prefills on the remote engine);
  // small in the entry, or remote too (both engine servers in one mesh: handoffs go engine to engine)
  const SETTINGS = (['large', 'both'] as const).flatMap((remote) =>
    ['r-stitch', 'r2r'].flatMap((name) => SCHEDULING_MODES.flatMap((mode) => [true, false].map((retain) => ({ remote, name, mode, retain })))),
  );

  it.each(SETTINGS)(
    '$remote remote, $name, $mode, retainState $retain: commits what the sequential oracle commits, token for token and model for model',
    async ({ remote, name, mode, retain }) => {
      const algorithm = builtinFactory(name)();
      expect(algorithm.models).toEqual(['small', 'large']);
      const mesh = remote === 'both' ? new RemoteMesh() : undefined;
      const large = await RemoteEngine.connect({ model: 'large', nats: nats.url, heartbeatTimeoutMs: 1500, connectTimeoutMs: 10_000, mesh, log: () => {} });
      const small = mesh
        ? await RemoteEngine.connect({ model: 'small', nats: nats.url, heartbeatTimeoutMs: 1500, connectTimeoutMs: 10_000, mesh, log: () => {} })
        : null;
      const direct = server.peerStats.direct + smallServer.peerStats.direct;
      try {
        const cluster = new Cluster({
          clock: createRealClock(),
          mode,
          retainState: retain,
          maxConcurrency: 8,
          checkInvariants: true,
          models: [small ? { name: 'small', thread: small } : { name: 'small', runner: runners.small }, { name: 'large', thread: large }],
        });
        const sampling = (i: number) => ({ temperature: 0.7, seed: 4000 + i });
        const algorithmRef = { key: `${name}@1`, source: { kind: 'builtin' as const, factory: name } };
        const served = await Promise.all(
          prompts.map(
            (prompt, i) => cluster.submit({ id: `r-${name}-${i}`, prompt, maxTokens: MAX_TOKENS, algorithm, algorithmRef, sampling: sampling(i) }).done,
          ),
        );
        let handoffs = 0;
        let byLarge = 0;
        for (const [i, prompt] of prompts.entries()) {
          const oracle = await runOracle(algorithm, runners, { id: `r-${name}-${i}`, prompt, maxTokens: MAX_TOKENS, sampling: sampling(i) });
          expect(served[i].status, served[i].error?.message).toBe('done');
          expect(served[i].tokens, `${name} prompt ${i}`).toEqual(oracle.tokens);
          expect(served[i].producedBy, `${name} prompt ${i}`).toEqual(oracle.producedBy);
          expect(served[i].handoffs).toBe(oracle.handoffs);
          handoffs += oracle.handoffs;
          byLarge += served[i].producedBy.filter((m) => m === 'large').length;
        }
        // the comparison means something only if requests crossed to the remote engine and back
        expect(handoffs).toBeGreaterThan(PROMPTS);
        expect(byLarge).toBeGreaterThan(0);
        expect(large.replicaViews()[0].placed).toBeGreaterThan(0);
        await expect.poll(() => cluster.laneStats().map((l) => l.kvBytes), { timeout: 2000 }).toEqual([0, 0]);
        await expect.poll(() => server.held, { timeout: 2000 }).toBe(0);
        await expect.poll(() => smallServer.held, { timeout: 2000 }).toBe(0);
        // both remote, every handoff went engine to engine; small in the entry, none could
        expect(server.peerStats.direct + smallServer.peerStats.direct - direct).toBe(small ? handoffs : 0);
      } finally {
        await large.close();
        await small?.close();
      }
    },
    90_000,
  );
});
