// Wires remote models into the serving process: a RemoteEngine per model the config lists as remote, and their memory rows.
import fs from 'node:fs';
import path from 'node:path';
import type { ModelMemoryPlan } from './memoryPlan.ts';
import type { RemoteModelConfig } from '../config/remoteModelConfig.ts';
import { RemoteEngine, RemoteMesh } from '../transport/nats/remoteEngine.ts';

interface ModelEntry {
  name: string;
  path?: string;
  remote?: RemoteModelConfig;
}

/** Links to a remote model's replicas (engine servers started by `tokenrouter subserver`); `mesh`: the entry's other remote models. */
export function connectRemote(name: string, remote: RemoteModelConfig, mesh?: RemoteMesh): Promise<RemoteEngine> {
  return RemoteEngine.connect({ ...remote, model: name, mesh });
}

/**
 * Remote engines for the models the config lists as remote and `have` does not already hold (tests
 * inject some), in one mesh: their handoffs to one another go engine to engine.
 */
export async function connectRemoteModels(models: readonly ModelEntry[], have?: ReadonlySet<string>): Promise<[string, RemoteEngine][]> {
  const todo = models.filter((m) => m.remote && !have?.has(m.name));
  const mesh = new RemoteMesh();
  return Promise.all(todo.map(async (m) => [m.name, await connectRemote(m.name, m.remote!, mesh)] as [string, RemoteEngine]));
}

/** A remote model's folder is read on the entry only when it is there in full (tokenizer, router heads); its weights never load here. */
export function hasLocalFolder(m: ModelEntry, modelsDir: string): boolean {
  return fs.existsSync(path.join(m.path ?? path.resolve(modelsDir, m.name), 'onnx', 'model.onnx'));
}

/** Remote models keep their KV on their own hosts: they take nothing from this machine's budget; each replica admits by its own. */
export function remoteMemoryPlan(models: readonly ModelEntry[], engines: ReadonlyMap<string, unknown>): ModelMemoryPlan[] {
  return models
    .filter((m) => m.remote)
    .map((m) => {
      const e = engines.get(m.name);
      const kvTokens = e instanceof RemoteEngine && e.liveCapacityTokens > 0 ? e.liveCapacityTokens : Infinity;
      const bpt = e instanceof RemoteEngine ? e.info.kvBytesPerToken : 0;
      const maxContext = e instanceof RemoteEngine ? e.info.maxContext : 1;
      return { name: m.name, weightBytes: 0, workspaceBytes: 0, kvBytes: kvTokens * bpt, kvTokens, fullContextRequests: Math.floor(kvTokens / maxContext) };
    });
}
