// Issue 34 finding 7: a replica that drains and says goodbye is counted apart from one that is lost, so a rolling restart fires no "replica lost" alert.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNatsServer, type NatsServerProcess } from '../support/rigs/natsServerProcess.ts';
import { simModel } from '../../runtime/runner/simModel.ts';
import { spawnSubServer, type SubServerProcess } from '../support/rigs/subServerProcess.ts';
import type { RemoteEngine } from '../../runtime/transport/nats/remoteEngine.ts';
import type { ModelRunner } from '../../runtime/runner/modelRunner.ts';
import type { NatsConnection } from '@nats-io/transport-node';
import { decodeFrame } from '../../runtime/transport/nats/natsLink.ts';
import { HAVE_NATS, startReplica, until, type TestReplica } from './helpers.ts';
import { complete, serve, type Served } from './serving.ts';

describe.skipIf(!HAVE_NATS)('drained and lost replicas in /metrics', () => {
  let nats: NatsServerProcess;
  const subs: SubServerProcess[] = [];
  let entry: Served;

  beforeAll(async () => {
    nats = await startNatsServer();
    for (const name of ['large-a', 'large-b'])
      subs.push(
        await spawnSubServer({
          args: ['--model', 'large', '--nats', nats.url, '--replica', name, '--heartbeat-ms', '100', '--sim', '--sim-latency', '8,0,0'],
          timeoutMs: 90_000,
        }),
      );
    const runners = new Map<string, ModelRunner>([['small', simModel({ name: 'small', latency: { baseMs: 1, perRowMs: 0, perTokenMs: 0 } })]]);
    entry = await serve([{ name: 'small' }, { name: 'large', remote: { nats: nats.url, heartbeatTimeoutMs: 2500, connectTimeoutMs: 20_000 } }], runners);
  }, 120_000);

  afterAll(async () => {
    await entry?.close();
    for (const s of subs) await s.kill();
    await nats?.stop();
  });

  const metric = async (name: string) => {
    const text = await (await fetch(`${entry.server.url}/metrics`)).text();
    return Number(new RegExp(`^${name}\\{model="large"\\} (\\S+)$`, 'm').exec(text)?.[1]);
  };

  it('SIGTERM (a drain, with requests running) counts as drained, not lost; SIGKILL of the other counts as lost', async () => {
    const engine = entry.service.threads.get('large') as RemoteEngine;
    await until(() => engine.replicaViews().length === 2, 5000, 'both replicas known');
    const running = [0, 1, 2, 3, 4, 5].map((k) => complete(entry.server.url, 'large', `${k + 11}*3`, k, 120));
    await until(() => engine.replicaViews().every((v) => v.requests >= 1), 20_000, 'requests on both replicas');
    const [drained, killed] = subs;
    const exited = new Promise<number | null>((r) => drained.child.once('exit', (code) => r(code)));
    drained.child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect((await Promise.all(running)).map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    await until(() => engine.replicaViews().length === 1, 5000, 'the drained replica gone');
    expect(await metric('tokenrouter_remote_replicas_lost_total')).toBe(0);
    expect(await metric('tokenrouter_remote_replicas_drained_total')).toBe(1);
    expect(await metric('tokenrouter_remote_replicas')).toBe(1);

    await killed.kill();
    await until(() => engine.replicaViews().length === 0, 10_000, 'the killed replica declared lost');
    expect(await metric('tokenrouter_remote_replicas_lost_total')).toBe(1);
    expect(await metric('tokenrouter_remote_replicas_drained_total')).toBe(1);
  }, 120_000);
});

describe.skipIf(!HAVE_NATS)('a drain that begins while a placement is on the wire', () => {
  let nats: NatsServerProcess;
  let replica: TestReplica;
  let entry: Served;

  beforeAll(async () => {
    nats = await startNatsServer();
    replica = await startReplica(nats.url, 'large', 'large-a', { latency: { baseMs: 2, perRowMs: 0, perTokenMs: 0 } });
    const runners = new Map<string, ModelRunner>([['small', simModel({ name: 'small', latency: { baseMs: 1, perRowMs: 0, perTokenMs: 0 } })]]);
    entry = await serve([{ name: 'small' }, { name: 'large', remote: { nats: nats.url, heartbeatTimeoutMs: 2500, connectTimeoutMs: 20_000 } }], runners);
  }, 120_000);

  afterAll(async () => {
    await entry?.close();
    await replica?.close();
    await nats?.stop();
  });

  it('serves the request the entry sent before it heard of the drain, then leaves', async () => {
    const engine = entry.service.threads.get('large') as RemoteEngine;
    await until(() => engine.replicaViews().length === 1, 5000, 'the replica known');
    // Start the drain in the same turn as the entry publishes a placement to the replica: the replica holds nothing
    // yet, and the placement reaches it only after the drain began.
    const nc = (engine as unknown as { nc: NatsConnection }).nc;
    const publish = nc.publish.bind(nc);
    let drained: Promise<number> | undefined;
    // Only the frame that carries the placement: the link's keepalive acks go to the same subject every 100 ms,
    // and a drain begun on one of those makes the model down before the request is even sent (a 503 at admission).
    const placement = (bytes: unknown) =>
      bytes instanceof Uint8Array && (decodeFrame(bytes)?.messages ?? []).some((m) => (m as { type?: string }).type === 'arrive');
    nc.publish = (subject: string, ...rest: unknown[]) => {
      const sent = (publish as (s: string, ...r: unknown[]) => void)(subject, ...rest);
      if (!drained && subject === replica.server.subject + '.in' && replica.server.held === 0 && placement(rest[0])) drained = replica.server.drain(10_000);
      return sent;
    };
    const got = await complete(entry.server.url, 'large', '7*6', 3, 40);
    expect(drained, 'the drain began at the placement').toBeDefined();
    expect(got.status, got.error).toBe(200);
    expect(await drained).toBe(0);
  }, 60_000);
});
