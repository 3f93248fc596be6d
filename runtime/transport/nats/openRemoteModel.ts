// Reaching a remote model: its config block parsed, NATS opened, the replicas' membership started, a first announcement awaited.
import { setTimeout as sleep } from 'node:timers/promises';
import type { NatsConnection } from '@nats-io/transport-node';
import type { ModelInfo } from '../../runner/modelRunner.ts';
import { parseRemoteModel, type RemoteModelConfig, type RemoteModelInput } from '../../config/remoteModelConfig.ts';
import { modelSubjects } from './modelSubjects.ts';
import { openNats } from './natsConnection.ts';
import type { RemoteMesh } from './remoteMesh.ts';
import { type ReplicaHooks, RemoteReplicas } from './remoteReplicas.ts';
import { RemoteRunnerError } from './remoteRunnerError.ts';

/**
 * The model's `remote` block of the config, in the config's one shape (its schema fills the
 * defaults and refuses what is wrong), and what the entry adds.
 */
export type RemoteEngineOptions = RemoteModelInput & {
  model: string;
  /**
   * The entry's other remote models: handoffs between them go straight from replica to replica.
   * Absent, this model's replicas know no peer and their handoffs pass through the entry.
   */
  mesh?: RemoteMesh;
  log?: (line: string) => void;
};

export type EngineOptions = RemoteModelConfig & { model: string; mesh?: RemoteMesh; log: (line: string) => void };

/** What the model's engine does when its replicas change (it does not exist yet while the first is awaited). */
export type ReplicaEvents = Pick<ReplicaHooks, 'joined' | 'lost' | 'unreachable'>;

export interface OpenRemoteModel {
  nc: NatsConnection;
  replicas: RemoteReplicas;
  /** What the first replica announced. */
  info: ModelInfo;
  opts: EngineOptions;
}

/** Connects to NATS and waits for a first replica to announce itself; none within the timeout is an error saying how to start one. */
export async function openRemoteModel({ model, mesh, log: given, ...block }: RemoteEngineOptions, events: ReplicaEvents): Promise<OpenRemoteModel> {
  const opts: EngineOptions = {
    ...parseRemoteModel(block, model),
    model,
    mesh,
    log: given ?? ((l: string) => console.error(`[tokenrouter] remote ${model}: ${l}`)),
  };
  const { log } = opts;
  const nc = await openNats({
    servers: opts.nats,
    token: opts.token ?? process.env.NATS_TOKEN,
    credsFile: opts.credsFile,
    name: `tokenrouter-entry:${model}`,
  });
  const subjects = modelSubjects(opts.subjectPrefix, model);
  const replicas = new RemoteReplicas(
    nc,
    subjects.heartbeat,
    model,
    opts.heartbeatTimeoutMs,
    {
      ...events,
      draining: () => mesh?.changed(),
      reachable: () => log(`NATS is back: model ${model} takes requests again`),
      log,
    },
    opts.unreachableAfterMs,
  );
  const timeout = opts.connectTimeoutMs;
  const deadline = performance.now() + timeout;
  while (!replicas.info && performance.now() < deadline) await sleep(20);
  if (!replicas.info) {
    replicas.stop();
    await nc.close();
    throw new RemoteRunnerError(
      'no_replicas',
      `no sub-server for model "${model}" announced itself on ${opts.nats} (subject ${subjects.heartbeat}) within ${timeout} ms; start one with: tokenrouter subserver --model ${model} --nats ${opts.nats}`,
    );
  }
  return { nc, replicas, info: replicas.info, opts };
}
