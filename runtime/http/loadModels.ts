// Loads the served models: ONNX folders into engine threads or worker runners, remote models over NATS, and the memory budget split between them.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { ServerConfig } from '../config/serverConfig.ts';
import { connectRemoteModels, hasLocalFolder, remoteMemoryPlan } from './remoteModels.ts';
import type { EngineProxy } from '../transport/engineHandle.ts';
import { ThreadEngine } from '../transport/threadEngine.ts';
import { TokenRouterError } from '../errors.ts';
import type { ModelRunner } from '../runner/modelRunner.ts';
import { loadModelFolder, type ModelFolder } from '../runner/modelFolder.ts';
import type { OnnxRunnerOptions } from '../runner/onnxRunner.ts';
import { TextTokenizer } from '../runner/tokenizer.ts';
import { WorkerRunner } from '../runner/workerRunner.ts';
import { loadMeasured, measureWorkspaces, rssBytes } from './measureMemory.ts';
import { planMemory, type MemorySplit } from './memoryPlan.ts';

type ModelConfig = ServerConfig['models'][number];

/** What a caller may lend the service instead of loading ONNX workers (tests, simulations, benches). */
export interface LentModels {
  /** Runners by model name, instead of loading ONNX workers. */
  runners?: Map<string, ModelRunner>;
  /** Engine threads already started (benches reuse them across servers): the service neither closes nor restarts them. */
  threads?: Map<string, ThreadEngine>;
  tokenizer?: TextTokenizer;
}

export interface LoadedModels {
  /** Runners of the models whose engines run on this thread (remote models, injected runners, in-process placement). */
  runners: Map<string, ModelRunner>;
  /** Models whose engine and runner run together elsewhere: in their own worker thread, or remote (sub-servers over NATS). */
  threads: Map<string, EngineProxy>;
  folders: Map<string, ModelFolder>;
  tokenizer: TextTokenizer;
  /** memory.budgetMiB's split: the process before models, each model's weights, workspace and KV, the headroom. */
  memory: MemorySplit;
}

/** A model's engine and runner in their own worker thread. */
export function startThread(m: ModelConfig, folder: ModelFolder): Promise<ThreadEngine> {
  return ThreadEngine.start(m.name, { kind: 'onnx', folder: folder.dir, opts: runnerOptions(m) });
}

/** A config entry's runner options: threads, name, export variant and execution provider. */
export function runnerOptions(m: ModelConfig): OnnxRunnerOptions {
  return { intraOpNumThreads: m.intraOpNumThreads, name: m.name, dtype: m.dtype, executionProvider: m.executionProvider, memory: { prepacking: m.prepacking } };
}

/**
 * `plan()`, or, when it refuses (a budget too small), the engines and runners this start loaded
 * closed first: their worker threads would otherwise keep a refused process alive.
 */
function orRelease<T>(threads: readonly { close(): Promise<void> }[], runners: readonly { close?(): Promise<void> }[], plan: () => T): T {
  try {
    return plan();
  } catch (e) {
    void Promise.all([...threads.map((t) => t.close()), ...runners.map((r) => r.close?.())]).catch(() => {});
    throw e;
  }
}

export async function loadModels(config: ServerConfig, lent: LentModels = {}): Promise<LoadedModels> {
  // the budget bounds the whole process: what it holds before any model loads counts too
  const baseBytes = rssBytes();
  const loaded = new Map<string, number>();
  let workspaces = new Map<string, number>();
  const folders = new Map<string, ModelFolder>();
  let runners = lent.runners;
  const threads = new Map<string, EngineProxy>(lent.threads);
  const remotes = (have?: ReadonlySet<string>) => connectRemoteModels(config.models, have);
  if (lent.threads || runners) {
    for (const [name, e] of await remotes(new Set([...threads.keys(), ...(runners?.keys() ?? [])]))) threads.set(name, e);
    runners = new Map(runners);
  } else {
    for (const m of config.models)
      if (!m.remote || hasLocalFolder(m, config.modelsDir))
        folders.set(m.name, loadModelFolder(m.path ?? path.resolve(config.modelsDir, m.name), { dtype: m.dtype }));
    shareTokenizer(folders);
    const local = config.models.filter((m) => !m.remote);
    // ONNX model folders: "auto" puts each model's engine in its thread, beside the model.
    const inThread = config.scheduling.placement !== 'in-process';
    const byName = new Map(local.map((m) => [m.name, m]));
    type Loaded = { thread: ThreadEngine; runner?: never } | { runner: WorkerRunner; thread?: never };
    const load = (m: ModelConfig): Promise<Loaded> =>
      inThread
        ? startThread(m, folders.get(m.name)!).then((thread) => ({ thread }))
        : WorkerRunner.start(folders.get(m.name)!.dir, runnerOptions(m)).then((runner) => ({ runner }));
    // one at a time, each measured as the resident memory its load added
    const [measured, remote] = await Promise.all([loadMeasured([...byName.keys()], (name) => load(byName.get(name)!)), remotes()]);
    const started = [...measured].map(([name, { value, bytes }]) => (loaded.set(name, bytes), [name, value] as const));
    workspaces = await measureWorkspaces(
      started.map(([name, e]) => {
        const m = byName.get(name)!;
        const i = e.thread?.info ?? e.runner!.info;
        return { name, ...e, maxBatch: m.maxBatch, maxStepTokens: m.maxStepTokens, maxContext: i.maxContext, vocabSize: i.vocabSize };
      }),
    );
    runners = new Map();
    for (const [name, e] of remote) threads.set(name, e);
    for (const [name, r] of started) {
      if (r.thread) threads.set(name, r.thread);
      else runners.set(name, r.runner);
    }
  }
  const info = (name: string) => threads.get(name)?.info ?? runners!.get(name)?.info;
  if (!lent.tokenizer && folders.size === 0)
    throw new TokenRouterError('invalid_request', 'no model folder on this host to read the tokenizer from: keep at least one model folder here', 'models');
  const tokenizer = lent.tokenizer ?? TextTokenizer.fromFolder(folders.values().next().value!);
  const proc = loaded.size > 0 ? { baseBytes, headroomBytes: config.memory.headroomMiB * 2 ** 20 } : { baseBytes: 0, headroomBytes: 0 };
  // what this start loaded itself (not engines or runners the caller lent it)
  const own = loaded.size > 0 ? { threads: [...threads.values()], runners: [...runners.values()] } : { threads: [], runners: [] };
  const plan = orRelease(own.threads, own.runners, () =>
    planMemory(
      config.memory.budgetMiB * 2 ** 20,
      config.models
        .filter((m) => !m.remote)
        .map((m) => {
          const i = info(m.name);
          if (!i) throw new TokenRouterError('invalid_request', `no runner for model ${m.name}`, 'models');
          const f = folders.get(m.name);
          const weightBytes = loaded.get(m.name) ?? (f ? [f.onnxPath, ...f.externalData].reduce((a, file) => a + fs.statSync(file).size, 0) : 0);
          return {
            name: m.name,
            weightBytes,
            workspaceBytes: workspaces.get(m.name) ?? 0,
            kvBytesPerToken: i.kvBytesPerToken,
            maxContext: i.maxContext,
            maxBatch: m.maxBatch,
          };
        }),
      proc,
    ),
  ).concat(remoteMemoryPlan(config.models, threads));
  return { runners, threads, folders, tokenizer, memory: { budgetBytes: config.memory.budgetMiB * 2 ** 20, ...proc, models: plan } };
}

const sha256 = (x: unknown) => crypto.createHash('sha256').update(JSON.stringify(x)).digest('hex');

/**
 * Routing mixes token ids across models, so every model must read the same vocabulary. Folders whose
 * tokenizer files are the same are given the first one's parsed JSON, so that this thread keeps one
 * copy (a real vocabulary's tokenizer.json parses to about 20 MB of heap), not one per model.
 */
function shareTokenizer(folders: Map<string, ModelFolder>): void {
  let first: { name: string; model: string; rest: string; folder: ModelFolder } | undefined;
  for (const [name, f] of folders) {
    const { model, ...rest } = f.tokenizerJson;
    const h = { name, model: sha256(model ?? f.tokenizerJson), rest: sha256([rest, f.tokenizerConfig]), folder: f };
    if (!first) first = h;
    else if (first.model !== h.model)
      throw new TokenRouterError(
        'invalid_request',
        `models ${first.name} and ${name} use different tokenizers; token-level routing needs one shared vocabulary`,
        'models',
      );
    else if (first.rest === h.rest) folders.set(name, { ...f, tokenizerJson: first.folder.tokenizerJson, tokenizerConfig: first.folder.tokenizerConfig });
  }
}
