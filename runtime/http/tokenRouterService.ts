// The serving process minus HTTP: model runners, the cluster, the registry, the tokenizer and text generation.
import fs from 'node:fs';
import type { Algorithm, TokenSignals } from '../../shared/algorithm.ts';
import type { AlgorithmSpec } from '../../shared/api/admin.ts';
import type { ModelCatalogEntry } from '../../shared/ir/checkParams.ts';
import { createRealClock, type Clock } from '../clock/clock.ts';
import type { ServerConfig } from '../config/serverConfig.ts';
import { Cluster } from '../entry/cluster.ts';
import type { EngineProxy } from '../transport/engineProxy.ts';
import type { ThreadEngine } from '../transport/threadEngine.ts';
import { TokenRouterError } from '../errors.ts';
import { AlgorithmRegistry } from '../registry/algorithmRegistry.ts';
import type { AlgorithmRef } from '../registry/algorithmSource.ts';
import type { ModelInfo, ModelRunner } from '../runner/modelRunner.ts';
import type { ModelFolder } from '../runner/modelFolder.ts';
import type { TextTokenizer } from '../runner/tokenizer.ts';
import { WorkerRunner } from '../runner/workerRunner.ts';
import { AutoThresholds, THRESHOLD_HYSTERESIS } from '../control/autoThresholds.ts';
import { workerOptimiser } from '../control/workerOptimiser.ts';
import { withTokenText } from '../trace/tokenTextSink.ts';
import { TraceRecorder } from '../trace/traceRecorder.ts';
import { adminTokenFor } from './adminToken.ts';
import { ChatPrompts } from './chatPrompts.ts';
import { wantsDetail, type GenerateHandle, type GenerateParams, type GenerateSink } from './generateParams.ts';
import { loadModels, runnerOptions, startThread, type LentModels, type LoadedModels } from './loadModels.ts';
import type { MemorySplit, ModelMemoryPlan } from './memoryPlan.ts';
import { ServedAlgorithms, type Resolved } from './servedAlgorithms.ts';
import { streamToken, type StreamToken } from './streamToken.ts';

export interface ServiceOptions extends LentModels {
  clock?: Clock;
  /**
   * Starts a fresh runner for a model whose runner failed. Default: a new ONNX worker from the
   * model folder. Injected runners have no folder, so without this their lane would stay down for good.
   */
  restartRunner?: (name: string) => Promise<ModelRunner>;
  /** Debug mode: check the cluster's invariants after every batch; default from TOKENROUTER_CHECK_INVARIANTS=1. */
  checkInvariants?: boolean;
}

export class TokenRouterService {
  /**
   * The newest trace events (config trace.keepEvents), always kept: /admin/trace, the timeline's
   * snapshot, predictions. Its cost, qwen3-42m at c = 8 with tracing on and off in alternate rounds
   * of one process: the entry's trace work (token text, the ring) 0.1-0.7 ms a step of 34-49 ms,
   * and no difference in the engine thread's CPU or non-model time per step past the noise.
   */
  readonly trace: TraceRecorder;
  readonly cluster: Cluster;
  readonly algorithms: ServedAlgorithms;
  readonly chatPrompts: ChatPrompts;
  /** Runners of the models whose engines run on this thread (remote models, injected runners, in-process placement). */
  readonly runners: Map<string, ModelRunner>;
  /** Models whose engine and runner run together elsewhere: in their own worker thread, or remote (sub-servers over NATS). */
  readonly threads: Map<string, EngineProxy>;
  readonly folders: Map<string, ModelFolder>;
  readonly tokenizer: TextTokenizer;
  /** memory.budgetMiB's split: the process before models, each model's weights, workspace and KV, the headroom. */
  readonly memory: MemorySplit;
  /** The live threshold controller, when thresholds are "auto". */
  readonly auto: AutoThresholds | null = null;
  private readonly optimiser: ReturnType<typeof workerOptimiser> | null = null;
  /** Restarts so far, by model: a crashed worker comes back by itself. */
  readonly restarts = new Map<string, number>();
  private closed = false;
  private seq = 0;

  private constructor(
    readonly config: ServerConfig,
    models: LoadedModels,
    readonly registry: AlgorithmRegistry,
    readonly adminToken: string,
    clock: Clock,
    private readonly borrowedThreads: boolean,
    private readonly restartRunner: ((name: string) => Promise<ModelRunner>) | undefined,
    checkInvariants: boolean,
  ) {
    const { runners, threads, tokenizer, memory } = models;
    this.runners = runners;
    this.threads = threads;
    this.folders = models.folders;
    this.tokenizer = tokenizer;
    this.memory = memory;
    this.chatPrompts = new ChatPrompts(tokenizer);
    this.algorithms = new ServedAlgorithms({ config, folders: models.folders, registry, info: (m) => this.info(m), admitOrThrow: () => this.admitOrThrow() });
    this.trace = new TraceRecorder(config.trace.keepEvents);
    const thresholds = config.scheduling.thresholds === 'auto' ? {} : config.scheduling.thresholds;
    this.cluster = new Cluster({
      clock,
      mode: config.scheduling.mode,
      retainState: config.scheduling.retainState,
      maxWaitMs: config.scheduling.maxWaitMs,
      prefixCache: config.scheduling.prefixCache,
      maxConcurrency: config.limits.maxConcurrency,
      maxQueue: config.limits.maxQueue,
      trace: withTokenText(this.trace, tokenizer),
      checkInvariants,
      tokenizer,
      models: config.models.map((m) => {
        const at = {
          name: m.name,
          maxBatch: m.maxBatch,
          maxStepTokens: m.maxStepTokens,
          threshold: thresholds[m.name] ?? 1,
          kvCapacityTokens: memory.models.find((p) => p.name === m.name)?.kvTokens ?? Infinity,
        };
        const thread = threads.get(m.name);
        return thread ? { ...at, thread } : { ...at, runner: runners.get(m.name)! };
      }),
    });
    for (const [name, r] of runners) this.watch(name, r);
    // a remote model never fails as a whole (a lost replica fails its own requests, a new one joins by itself): its handle never reports a failure
    if (!this.borrowedThreads) for (const [name, t] of threads) this.watch(name, t);
    if (config.scheduling.thresholds === 'auto') {
      this.optimiser = workerOptimiser();
      const { tpotMs, ttftMs } = config.scheduling.slo ?? {};
      const slo = tpotMs === undefined && ttftMs === undefined ? undefined : { tpotMs, ttftMs };
      this.auto = new AutoThresholds(this.cluster, {
        optimise: this.optimiser.optimise,
        everyMs: 5000,
        windowMs: 30_000,
        hysteresis: THRESHOLD_HYSTERESIS,
        slo,
      });
      this.trace.subscribe(this.auto.onEvent);
      this.auto.start();
    }
  }

  get memoryPlan(): ModelMemoryPlan[] {
    return this.memory.models;
  }

  /** Compiled draft IRs (model "draft"). */
  get drafts(): ServedAlgorithms['drafts'] {
    return this.algorithms.drafts;
  }

  static async start(config: ServerConfig, opts: ServiceOptions = {}): Promise<TokenRouterService> {
    const models = await loadModels(config, opts);
    fs.mkdirSync(config.dataDir, { recursive: true });
    const service = new TokenRouterService(
      config,
      models,
      new AlgorithmRegistry(config.dataDir),
      adminTokenFor(config),
      opts.clock ?? createRealClock(),
      opts.threads !== undefined,
      opts.restartRunner,
      opts.checkInvariants ?? process.env.TOKENROUTER_CHECK_INVARIANTS === '1',
    );
    service.algorithms.seedBuiltins();
    service.algorithms.reportStored();
    return service;
  }

  /** Fails what the dead runner (or engine thread) held, starts a fresh one, and puts it in place. */
  private watch(name: string, runner: Pick<ModelRunner, 'onFailure'>): void {
    runner.onFailure?.((error) => {
      if (this.closed) return;
      const failed = this.cluster.failLane(name, error);
      console.error(`[tokenrouter] model ${name} failed (${error.message}); ${failed} requests failed; restarting its worker`);
      const folder = this.folders.get(name);
      const m = this.config.models.find((x) => x.name === name)!;
      const inThread = this.threads.has(name);
      const startRunner = this.restartRunner ?? (folder ? () => WorkerRunner.start(folder.dir, { ...runnerOptions(m), name }) : undefined);
      const startFresh: (() => Promise<{ thread: ThreadEngine; runner?: never } | { runner: ModelRunner; thread?: never }>) | undefined = inThread
        ? async () => ({ thread: await startThread(m, folder!) })
        : startRunner && (async () => ({ runner: await startRunner(name) }));
      if (!startFresh) return;
      const attempt = (n: number): void => {
        startFresh().then(
          ({ thread, runner }) => {
            if (this.closed) return void (thread ?? runner).close?.();
            if (thread) {
              this.threads.set(name, thread);
              this.cluster.replaceThread(name, thread);
            } else {
              this.runners.set(name, runner);
              this.cluster.replaceRunner(name, runner);
            }
            this.restarts.set(name, (this.restarts.get(name) ?? 0) + 1);
            this.watch(name, thread ?? runner);
          },
          (e: Error) => {
            console.error(`[tokenrouter] restart of ${name} failed: ${e.message}`);
            if (n < 5 && !this.closed) setTimeout(() => attempt(n + 1), 500 * 2 ** n);
          },
        );
      };
      attempt(0);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.auto?.stop();
    await this.optimiser?.close();
    this.registry.close();
    // the caches kept for later prompts go with the service (a bench's runner outlives it): closing an
    // engine of this process disposes its host, which hands them back, as a `begin` does on a thread
    for (const e of this.cluster.engines) if (e.core) await e.close();
    await Promise.all([
      ...[...this.runners.values()].map((r) => r.close?.()),
      ...(this.borrowedThreads ? [] : [...this.threads.values()].map((t) => t.close())),
    ]);
  }

  /** What a served model is: from its runner here or its engine thread. */
  info(model: string): ModelInfo | undefined {
    return this.threads.get(model)?.info ?? this.runners.get(model)?.info;
  }

  /** Every served model's info, in config order. */
  infos(): ModelInfo[] {
    return this.config.models.map((m) => this.info(m.name)!);
  }

  /** Models with the router heads they ship, for the IR compiler and the designer. */
  catalog(): ModelCatalogEntry[] {
    return this.algorithms.catalog();
  }

  /** Everything a client may name as `model`: active algorithms, then single models. */
  modelIds(): string[] {
    return this.algorithms.modelIds();
  }

  /** Removes an algorithm and every version of it (`ServedAlgorithms.deleteAlgorithm`). */
  deleteAlgorithm(name: string): number {
    return this.algorithms.deleteAlgorithm(name);
  }

  /** Builds an algorithm from a stored spec; IR is compiled against the deployed models. */
  instantiate(spec: AlgorithmSpec): Algorithm<unknown> {
    return this.algorithms.instantiate(spec);
  }

  /** Builds the algorithm and proves it runs on the models this server serves. */
  deployable(spec: AlgorithmSpec): Algorithm<unknown> {
    return this.algorithms.deployable(spec);
  }

  /** What `name` serves: its active version, or the latest earlier one that loads here; null when none does. */
  serving(name: string, quiet = false): { algorithm: Algorithm<unknown>; ref: AlgorithmRef; version: number } | null {
    return this.algorithms.serving(name, quiet);
  }

  /** The algorithm a request names, at the version active when it arrives (in-flight requests keep theirs). */
  resolve(model: string, draftIr?: unknown): Resolved {
    return this.algorithms.resolve(model, draftIr);
  }

  /** Refuses a request the cluster would refuse anyway, before any work is spent on it. */
  private admitOrThrow(): void {
    const c = this.cluster;
    if (c.activeCount >= c.maxConcurrency && c.queuedCount >= c.maxQueue)
      throw new TokenRouterError('overloaded', `admission queue is full (${c.maxQueue} waiting)`, null);
  }

  /** A committed token as the client's per-token detail (`tokenrouter_tokens`, logprobs), from what the sink got with it. */
  streamToken(token: number, model: string, signals: TokenSignals, atHandoff: boolean, topLogprobs: number | undefined): StreamToken {
    // decoded per token, uncached: 2-4 µs warm on qwen3-42m's tokenizer, against a 34-49 ms step at c = 8
    return streamToken(token, this.tokenizer.decode([token]), model, signals, atHandoff, topLogprobs);
  }

  /** Starts one generation; tokens and text stream to `sink`. Throws typed errors before anything starts. */
  generate(params: GenerateParams, sink: GenerateSink): GenerateHandle {
    const { algorithm, ref, name, version } = this.resolve(params.model, params.draftIr);
    for (const m of algorithm.models) {
      const lane = this.cluster.engine(m);
      if (lane?.down) throw new TokenRouterError('model_unavailable', `model ${m} is down; retry shortly`, 'model', { retry_after_s: 1 });
    }
    const maxTokens = Math.min(params.maxTokens, this.config.limits.maxTokens);
    const id = params.requestId ?? `cmpl-${Date.now().toString(36)}${(++this.seq).toString(36)}`;
    // the engines detokenise and match stop strings; their deltas go from the cluster to the sink
    const handle = this.cluster.submit({
      id,
      prompt: params.promptIds,
      maxTokens,
      minTokens: params.minTokens,
      sampling: params.sampling,
      algorithm,
      algorithmRef: ref,
      text: { stop: params.stop },
      detail: wantsDetail(params),
      ...(params.constraint ? { constraint: params.constraint } : {}),
      onToken: sink.onToken,
      onEnd: (result) => {
        const finishReason =
          result.status === 'cancelled' ? 'cancelled' : result.status === 'failed' ? 'error' : result.finishReason === 'length' ? 'length' : 'stop';
        sink.onEnd({ result, text: result.text, finishReason, algorithm: name, version });
      },
    });
    return { id: handle.id, cancel: handle.cancel };
  }
}
