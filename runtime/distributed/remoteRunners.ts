// Wires remote models into the serving process: a NatsRunner per model the config lists as remote, and their memory rows.
import fs from 'node:fs';
import path from 'node:path';
import type { ModelRunner } from '../runner/modelRunner.ts';
import type { ModelMemoryPlan } from '../serve/memoryPlan.ts';
import { NatsRunner } from './natsRunner.ts';
import type { RemoteModelConfig } from '../config/remoteModelConfig.ts';

interface ModelEntry {
  name: string;
  path?: string;
  remote?: RemoteModelConfig;
}

/** Connects to a remote model's sub-servers; used at startup and to replace a runner that failed. */
export function connectRemote(name: string, remote: RemoteModelConfig): Promise<NatsRunner> {
  return NatsRunner.connect({
    model: name,
    servers: remote.nats,
    token: remote.token ?? process.env.NATS_TOKEN,
    credsFile: remote.credsFile,
    subjectPrefix: remote.subjectPrefix,
    heartbeatTimeoutMs: remote.heartbeatTimeoutMs,
    stepTimeoutMs: remote.stepTimeoutMs,
    connectTimeoutMs: remote.connectTimeoutMs,
    onReplicaLoss: remote.onReplicaLoss,
    pipelineDepth: remote.pipelineDepth,
    lookahead: remote.lookahead,
  });
}

/**
 * Runners for the remote models that `have` does not already hold (tests inject some runners and
 * let the config reach others over NATS).
 */
export async function connectRemoteModels(models: readonly ModelEntry[], have?: ReadonlyMap<string, ModelRunner>): Promise<[string, ModelRunner][]> {
  const todo = models.filter((m) => m.remote && !have?.has(m.name));
  return Promise.all(todo.map(async (m) => [m.name, await connectRemote(m.name, m.remote!)] as [string, ModelRunner]));
}

/** A remote model's folder is read on the entry only when it is there in full (tokenizer, router heads); its weights never load here. */
export function hasLocalFolder(m: ModelEntry, modelsDir: string): boolean {
  return fs.existsSync(path.join(m.path ?? path.resolve(modelsDir, m.name), 'onnx', 'model.onnx'));
}

/** Remote models keep their KV on their own hosts: they take nothing from this machine's budget. */
export function remoteMemoryPlan(models: readonly ModelEntry[], runners: ReadonlyMap<string, ModelRunner>): ModelMemoryPlan[] {
  return models
    .filter((m) => m.remote)
    .map((m) => {
      const r = runners.get(m.name);
      const kvTokens = r instanceof NatsRunner && r.kvCapacityTokens > 0 ? r.kvCapacityTokens : Infinity;
      const bpt = r?.info.kvBytesPerToken ?? 0;
      const maxContext = r?.info.maxContext ?? 1;
      return { name: m.name, weightBytes: 0, kvBytes: kvTokens * bpt, kvTokens, fullContextRequests: Math.floor(kvTokens / maxContext) };
    });
}
