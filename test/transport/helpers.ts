// Shared rig for the distributed tests: a private nats-server, in-test engine replicas, waiting helpers.
import type { NatsConnection } from '@nats-io/transport-node';
import { openNats } from '../../runtime/transport/nats/natsConnection.ts';
import { RemoteEngineServer } from '../../runtime/transport/nats/remoteEngineServer.ts';
import { simModel, type SimLatency } from '../../runtime/runner/simModel.ts';
import { natsServerBinary } from '../support/rigs/natsServerProcess.ts';
import type { ModelRunner } from '../../runtime/runner/modelRunner.ts';
import { charTokenizer } from '../../runtime/runner/charTokenizer.ts';

export const HAVE_NATS = natsServerBinary() !== null;

export const ZERO: SimLatency = { baseMs: 0, perRowMs: 0, perTokenMs: 0 };

export interface TestReplica {
  server: RemoteEngineServer;
  nc: NatsConnection;
  /** Abrupt death: the connection drops without a goodbye (subscriptions vanish, heartbeats stop). */
  crash(): Promise<void>;
  close(): Promise<void>;
}

/** A simulated model's engine server in this process, on its own NATS connection. */
export async function startReplica(
  url: string,
  model: string,
  replica: string,
  opts: { latency?: SimLatency; heartbeatMs?: number; entryTimeoutMs?: number; kvCapacityTokens?: number; runner?: ModelRunner } = {},
): Promise<TestReplica> {
  const nc = await openNats({ servers: url, name: `test-replica-${replica}` });
  const runner = opts.runner ?? simModel({ name: model, latency: opts.latency ?? ZERO });
  const server = await RemoteEngineServer.start(nc, runner, {
    model,
    replica,
    decoder: charTokenizer(),
    kvCapacityTokens: opts.kvCapacityTokens ?? 10_000,
    heartbeatMs: opts.heartbeatMs ?? 50,
    entryTimeoutMs: opts.entryTimeoutMs,
    log: () => {},
  });
  return {
    server,
    nc,
    crash: async () => {
      await nc.close();
    },
    close: async () => {
      await server.close();
      await nc.close();
    },
  };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export async function until(cond: () => boolean, ms = 5000, what = 'condition'): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error(`${what} not met within ${ms} ms`);
    await sleep(10);
  }
}
