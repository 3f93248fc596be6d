// The serving process minus HTTP: model runners, the cluster, the registry, the tokenizer; generations start in openai/requestPlan.ts (generate).
import fs from 'node:fs';
import { createRealClock, type Clock } from '../clock/clock.ts';
import type { ServerConfig } from '../config/serverConfig.ts';
import { Cluster } from '../entry/cluster.ts';
import { TokenRouterError } from '../errors.ts';
import { AlgorithmRegistry } from '../registry/algorithmRegistry.ts';
import type { ModelInfo, ModelRunner } from '../runner/modelRunner.ts';
import { AutoThresholds, THRESHOLD_HYSTERESIS } from '../control/autoThresholds.ts';
import { workerOptimiser } from '../control/workerOptimiser.ts';
import { withTokenText } from '../trace/tokenTextSink.ts';
import { TraceRecorder } from '../trace/traceRecorder.ts';
import { adminTokenFor } from './adminToken.ts';
import { ChatPrompts } from './chatPrompts.ts';
import { loadModels, type LentModels, type LoadedModels } from './loadModels.ts';
import { restartOnFailure } from './modelRestarts.ts';
import { ServedAlgorithms } from './servedAlgorithms.ts';

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
  readonly runners: LoadedModels['runners'];
  readonly threads: LoadedModels['threads'];
  readonly folders: LoadedModels['folders'];
  readonly tokenizer: LoadedModels['tokenizer'];
  readonly memory: LoadedModels['memory'];
  readonly registry: AlgorithmRegistry;
  readonly adminToken: string;
  /** The live threshold controller, when thresholds are "auto". */
  readonly auto: AutoThresholds | null = null;
  private readonly optimiser: ReturnType<typeof workerOptimiser> | null = null;
  /** Restarts so far, by model: a crashed worker comes back by itself (modelRestarts.ts). */
  readonly restarts = new Map<string, number>();
  readonly restartRunner: ServiceOptions['restartRunner'];
  /** Engine threads lent by the caller: neither closed nor restarted here. */
  private readonly borrowedThreads: boolean;
  #closed = false;

  private constructor(
    readonly config: ServerConfig,
    models: LoadedModels,
    opts: ServiceOptions,
  ) {
    this.restartRunner = opts.restartRunner;
    ({ runners: this.runners, threads: this.threads, folders: this.folders, tokenizer: this.tokenizer, memory: this.memory } = models);
    this.registry = new AlgorithmRegistry(config.dataDir);
    this.adminToken = adminTokenFor(config);
    this.borrowedThreads = opts.threads !== undefined;
    this.chatPrompts = new ChatPrompts(this.tokenizer);
    const admitOrThrow = () => {
      const c = this.cluster;
      if (c.activeCount >= c.maxConcurrency && c.queuedCount >= c.maxQueue)
        throw new TokenRouterError('overloaded', `admission queue is full (${c.maxQueue} waiting)`, null);
    };
    this.algorithms = new ServedAlgorithms({ config, folders: this.folders, registry: this.registry, info: (m) => this.info(m), admitOrThrow });
    this.trace = new TraceRecorder(config.trace.keepEvents);
    const { scheduling, limits } = config;
    const thresholds = scheduling.thresholds === 'auto' ? {} : scheduling.thresholds;
    this.cluster = new Cluster({
      clock: opts.clock ?? createRealClock(),
      mode: scheduling.mode,
      retainState: scheduling.retainState,
      maxWaitMs: scheduling.maxWaitMs,
      prefixCache: scheduling.prefixCache,
      maxConcurrency: limits.maxConcurrency,
      maxQueue: limits.maxQueue,
      trace: withTokenText(this.trace, this.tokenizer),
      checkInvariants: opts.checkInvariants ?? process.env.TOKENROUTER_CHECK_INVARIANTS === '1',
      tokenizer: this.tokenizer,
      models: config.models.map((m) => {
        const at = {
          name: m.name,
          maxBatch: m.maxBatch,
          maxStepTokens: m.maxStepTokens,
          threshold: thresholds[m.name] ?? 1,
          kvCapacityTokens: this.memory.models.find((p) => p.name === m.name)?.kvTokens ?? Infinity,
        };
        const thread = this.threads.get(m.name);
        return thread ? { ...at, thread } : { ...at, runner: this.runners.get(m.name)! };
      }),
    });
    for (const [name, r] of this.runners) restartOnFailure(this, name, r);
    // a remote model never fails as a whole (a lost replica fails its own requests, a new one joins by itself): its handle never reports a failure
    if (!this.borrowedThreads) for (const [name, t] of this.threads) restartOnFailure(this, name, t);
    if (scheduling.thresholds === 'auto') {
      this.optimiser = workerOptimiser();
      const { tpotMs, ttftMs } = scheduling.slo ?? {};
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

  static async start(config: ServerConfig, opts: ServiceOptions = {}): Promise<TokenRouterService> {
    const models = await loadModels(config, opts);
    fs.mkdirSync(config.dataDir, { recursive: true });
    const service = new TokenRouterService(config, models, opts);
    service.algorithms.seedBuiltins();
    service.algorithms.reportStored();
    return service;
  }

  get closed(): boolean {
    return this.#closed;
  }

  async close(): Promise<void> {
    this.#closed = true;
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
}
