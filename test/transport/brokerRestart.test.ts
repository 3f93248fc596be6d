// nats-server dies and comes back mid-workload: entry and sub-server reconnect, and every request finishes as if nothing happened.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RemoteEngine } from '../../runtime/transport/nats/remoteEngine.ts';
import { startNatsServer, type NatsServerProcess } from '../support/rigs/natsServerProcess.ts';
import { simModel, type SimLatency } from '../../runtime/runner/simModel.ts';
import { spawnSubServer, type SubServerProcess } from '../support/rigs/subServerProcess.ts';
import type { ModelRunner } from '../../runtime/runner/modelRunner.ts';
import { HAVE_NATS, sleep, until } from './helpers.ts';
import { complete, serve, type Served } from './serving.ts';

const SMALL: SimLatency = { baseMs: 1, perRowMs: 0, perTokenMs: 0 };
const LARGE: SimLatency = { baseMs: 8, perRowMs: 0, perTokenMs: 0 };
const WORKLOAD = ['r2r', 'r-stitch', 'large'].flatMap((model, m) =>
  [0, 1, 2].map((k) => ({ model, prompt: `${13 * (k + 3) + m}/${k}`, seed: 700 + 10 * m + k })),
);
/** Generous, so that a starved process on a busy machine is not declared lost; the outage is twice as long (and well inside unreachableAfterMs, which would fail what waits). */
const HEARTBEAT_TIMEOUT_MS = 1500;

describe.skipIf(!HAVE_NATS)('a NATS restart under load', () => {
  let nats: NatsServerProcess;
  let sub: SubServerProcess;
  let local: Served;
  let remote: Served;
  const sim = (names: string[]) => new Map<string, ModelRunner>(names.map((n) => [n, simModel({ name: n, latency: n === 'small' ? SMALL : LARGE })]));

  beforeAll(async () => {
    nats = await startNatsServer();
    sub = await spawnSubServer({
      args: ['--model', 'large', '--nats', nats.url, '--replica', 'large-a', '--heartbeat-ms', '100', '--sim', '--sim-latency', `${LARGE.baseMs},0,0`],
      timeoutMs: 90_000,
    });
    local = await serve([{ name: 'small' }, { name: 'large' }], sim(['small', 'large']));
    remote = await serve(
      [{ name: 'small' }, { name: 'large', remote: { nats: nats.url, heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS, unreachableAfterMs: 60_000 } }],
      sim(['small']),
    );
  }, 120_000);

  afterAll(async () => {
    await remote?.close();
    await local?.close();
    await sub?.kill();
    await nats?.stop();
  });

  it('an outage longer than the heartbeat timeout loses no request and changes no token', async () => {
    const engine = remote.service.threads.get('large') as RemoteEngine;
    const want = await Promise.all(WORKLOAD.map((w) => complete(local.server.url, w.model, w.prompt, w.seed, 150)));
    const inflight = WORKLOAD.map((w) => complete(remote.server.url, w.model, w.prompt, w.seed, 150));
    // one more client, on the remote model, that leaves during the outage: its release can only reach the replica after the reconnect
    const leaver = new AbortController();
    const leaving = fetch(`${remote.server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'large', messages: [{ role: 'user', content: '9*9' }], max_tokens: 256, ignore_eos: true, stream: true }),
      signal: leaver.signal,
    })
      .then(async (res) => {
        for await (const _chunk of res.body!) {
          /* read until aborted */
        }
      })
      .catch((e: Error) => e.name);
    // every request admitted before the cut (one that reaches the entry while it is cut off is refused at once, by design) and several holding state on the remote model
    await until(
      () =>
        remote.service.cluster.activeCount + remote.service.cluster.queuedCount + remote.service.cluster.completed >= WORKLOAD.length + 1 &&
        engine.replicaViews()[0]?.requests >= 6,
      30_000,
      'requests admitted, several holding state on the remote model',
    );
    const { port } = nats;
    nats.child.kill('SIGKILL');
    await sleep(HEARTBEAT_TIMEOUT_MS);
    leaver.abort();
    expect(await leaving).toBe('AbortError');
    await sleep(HEARTBEAT_TIMEOUT_MS);
    nats = await startNatsServer({ port });
    const got = await Promise.all(inflight);
    for (let i = 0; i < got.length; i++) expect(got[i], got[i].error).toEqual(want[i]);
    expect(engine.stats.reconnects).toBeGreaterThanOrEqual(1);
    // engine messages unacked at the cut (at least the leaver's release) were sent again; the receiving side took each exactly once,
    // and the replica let the leaver's state go
    expect(engine.resent).toBeGreaterThanOrEqual(1);
    await until(() => engine.replicaViews()[0]?.requests === 0, 5000, 'the replica holds no request');
    expect(engine.stats.replicasLost).toBe(0);
    expect(remote.service.restarts.get('large') ?? 0).toBe(0);
    // and the model serves new requests right away
    const again = await complete(remote.server.url, 'r2r', '2+2', 5, 30);
    expect(again).toEqual(await complete(local.server.url, 'r2r', '2+2', 5, 30));
  }, 120_000);
});
