// A model whose runner or engine thread dies comes back by itself: what it held fails, a fresh one takes its place.
import type { ServerConfig } from '../config/serverConfig.ts';
import type { Cluster } from '../entry/cluster.ts';
import type { ModelRunner } from '../runner/modelRunner.ts';
import { WorkerRunner } from '../runner/workerRunner.ts';
import type { ThreadEngine } from '../transport/threadEngine.ts';
import { runnerOptions, startThread, type LoadedModels } from './loadModels.ts';

/** The service's parts a restart reads and replaces. */
export interface RestartHost extends Pick<LoadedModels, 'runners' | 'threads' | 'folders'> {
  readonly config: ServerConfig;
  readonly cluster: Cluster;
  /** Restarts so far, by model. */
  readonly restarts: Map<string, number>;
  /** For an injected runner, which has no folder to start a worker from. */
  readonly restartRunner?: (name: string) => Promise<ModelRunner>;
  readonly closed: boolean;
}

/** Watches `runner` for failure; on one, starts a fresh runner (or engine thread) in its place, 5 tries backing off. */
export function restartOnFailure(host: RestartHost, name: string, runner: Pick<ModelRunner, 'onFailure'>): void {
  runner.onFailure?.((error) => {
    if (host.closed) return;
    const failed = host.cluster.failLane(name, error);
    console.error(`[tokenrouter] model ${name} failed (${error.message}); ${failed} requests failed; restarting its worker`);
    const folder = host.folders.get(name);
    const m = host.config.models.find((x) => x.name === name)!;
    const inThread = host.threads.has(name);
    const restartRunner = host.restartRunner ?? (folder && (() => WorkerRunner.start(folder.dir, { ...runnerOptions(m), name })));
    if (!inThread && !restartRunner) return;
    const attempt = async (n: number): Promise<void> => {
      try {
        const fresh: ThreadEngine | ModelRunner = inThread ? await startThread(m, folder!) : await restartRunner!(name);
        if (host.closed) return void fresh.close?.();
        if (inThread) {
          host.threads.set(name, fresh as ThreadEngine);
          host.cluster.replaceThread(name, fresh as ThreadEngine);
        } else {
          host.runners.set(name, fresh as ModelRunner);
          host.cluster.replaceRunner(name, fresh as ModelRunner);
        }
        host.restarts.set(name, (host.restarts.get(name) ?? 0) + 1);
        restartOnFailure(host, name, fresh);
      } catch (e) {
        console.error(`[tokenrouter] restart of ${name} failed: ${(e as Error).message}`);
        if (n < 5 && !host.closed) setTimeout(() => void attempt(n + 1), 500 * 2 ** n);
      }
    };
    void attempt(0);
  });
}
