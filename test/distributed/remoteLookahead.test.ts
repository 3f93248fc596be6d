// Lookahead on a remote model: a request that stays on it takes several tokens per round trip, and outputs do not change.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRealClock } from '../../runtime/clock/clock.ts';
import { Cluster } from '../../runtime/engine/cluster.ts';
import type { RequestResult } from '../../runtime/engine/requestState.ts';
import { NatsRunner } from '../../runtime/distributed/natsRunner.ts';
import { startNatsServer, type NatsServerProcess } from '../../runtime/bench/rigs/natsServerProcess.ts';
import { simModel, type SimLatency } from '../../runtime/distributed/simModel.ts';
import type { ModelRunner } from '../../runtime/runner/modelRunner.ts';
import { markovAlgorithm } from '../../runtime/sim/markovAlgorithm.ts';
import { HAVE_NATS, startReplica, until, type TestReplica } from './helpers.ts';

const SMALL: SimLatency = { baseMs: 1, perRowMs: 0, perTokenMs: 0 };
const LARGE: SimLatency = { baseMs: 2, perRowMs: 0, perTokenMs: 0 };
/** The large model keeps a request for five tokens on average (Co-LLM-like), so lookahead has something to take. */
const STAYS = markovAlgorithm({
  models: ['small', 'large'],
  P: [
    [0.7, 0.3],
    [0.2, 0.8],
  ],
  keep: [
    [true, false],
    [true, true],
  ],
});

async function serve(large: ModelRunner, lookahead: number): Promise<{ results: RequestResult[]; cluster: Cluster }> {
  const cluster = new Cluster({
    clock: createRealClock(),
    mode: 'async-delayed',
    maxConcurrency: 6,
    maxWaitMs: 5,
    lookahead,
    checkInvariants: true,
    models: [
      { name: 'small', runner: simModel({ name: 'small', latency: SMALL }), threshold: 1 },
      { name: 'large', runner: large, threshold: 1 },
    ],
  });
  const handles = Array.from({ length: 12 }, (_, i) => cluster.submit({ id: `r${i}`, prompt: [1, 4 + (i % 9), 5 + (i % 5)], maxTokens: 60, sampling: { seed: i }, algorithm: STAYS }));
  return { results: await Promise.all(handles.map((h) => h.done)), cluster };
}

describe.skipIf(!HAVE_NATS)('lookahead on a model served over NATS', () => {
  let nats: NatsServerProcess;
  let replica: TestReplica;
  let remote: NatsRunner;

  beforeAll(async () => {
    nats = await startNatsServer();
    replica = await startReplica(nats.url, 'large', 'a', { latency: LARGE, maxAhead: 8 });
    remote = await NatsRunner.connect({ model: 'large', servers: nats.url, connectTimeoutMs: 5000, lookahead: 8, log: () => {} });
  }, 30_000);

  afterAll(async () => {
    await remote?.close();
    await replica?.close();
    await nats?.stop();
  });

  it('takes lookahead results from the remote model and commits exactly the tokens of an in-process run without it', async () => {
    expect(remote.maxAhead).toBe(8);
    const want = await serve(simModel({ name: 'large', latency: LARGE }), 0);
    const partsBefore = remote.stats.parts;
    const got = await serve(remote, 8);
    for (const r of got.results) expect(r.status, r.error?.message).toBe('done');
    expect(got.results.map((r) => [r.id, r.tokens])).toEqual(want.results.map((r) => [r.id, r.tokens]));
    const lane = got.cluster.laneStats().find((l) => l.name === 'large')!;
    // many large-model tokens came from lookahead, each one a round trip saved
    expect(lane.aheadRows).toBeGreaterThan(50);
    expect(remote.stats.parts - partsBefore).toBe(lane.batches);
    // every cache released (the releases travel in batches, after the step that ended each request)
    await until(() => replica.server.liveCaches === 0, 2000, 'caches released on the replica');
  });
});
