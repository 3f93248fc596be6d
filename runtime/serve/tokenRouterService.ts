// The serving process minus HTTP: model runners, the cluster, the registry, the tokenizer and text generation.
import { adminTokenFor } from './adminToken.ts';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Algorithm, TokenSignals } from '../../shared/algorithm.ts';
import type { Constraint } from '../../shared/protocol/constraint.ts';
import type { ModelCatalogEntry } from '../../shared/ir/checkParams.ts';
import { createRealClock, type Clock } from '../clock/clock.ts';
import { connectRemoteModels, hasLocalFolder, remoteMemoryPlan } from '../distributed/remoteModels.ts';
import type { EngineProxy } from '../engine/engineProxy.ts';
import type { ServerConfig } from '../config/serverConfig.ts';
import { Cluster } from '../engine/cluster.ts';
import type { RequestResult, TokenListener } from '../engine/requestState.ts';
import { TokenRouterError } from '../errors.ts';
import type { ModelInfo, ModelRunner, SamplingParams } from '../runner/modelRunner.ts';
import { loadModelFolder, type ModelFolder } from '../runner/modelFolder.ts';
import type { OnnxRunnerOptions } from '../runner/onnxRunner.ts';
import { TextTokenizer } from '../runner/tokenizer.ts';
import { WorkerRunner } from '../runner/workerRunner.ts';
import type { AlgorithmSpec } from '../../shared/api/admin.ts';
import { AlgorithmRegistry, type AlgorithmEntry } from '../registry/algorithmRegistry.ts';
import { builtinFactory } from '../registry/builtins.ts';
import { buildAlgorithm, type AlgorithmRef } from '../registry/algorithmSource.ts';
import { ThreadEngine } from '../engine/threadEngine.ts';
import { AutoThresholds, THRESHOLD_HYSTERESIS } from '../scheduler/autoThresholds.ts';
import { workerOptimiser } from '../scheduler/workerOptimiser.ts';
import { TraceRecorder } from '../trace/traceRecorder.ts';
import { withTokenText } from '../trace/tokenTextSink.ts';
import { ChatPrompts } from './chatPrompts.ts';
import { DraftCache } from './draftCache.ts';
import { refuseMissingHeads } from './routerHeads.ts';
import { streamToken, type StreamToken } from './streamToken.ts';
import { planMemory, type MemorySplit, type ModelMemoryPlan } from './memoryPlan.ts';
import { loadMeasured, measureWorkspaces, rssBytes } from './measureMemory.ts';

/** An algorithm built here, and the same by reference for engines in other threads. */
interface Served {
  algorithm: Algorithm<unknown>;
  ref: AlgorithmRef;
}

/** A model's engine and runner in their own worker thread. */
function startThread(m: ServerConfig['models'][number], folder: ModelFolder): Promise<ThreadEngine> {
  return ThreadEngine.start(m.name, { kind: 'onnx', folder: folder.dir, opts: runnerOptions(m) });
}

/** A config entry's runner options: threads, name, export variant and execution provider. */
function runnerOptions(m: ServerConfig['models'][number]): OnnxRunnerOptions {
  return { intraOpNumThreads: m.intraOpNumThreads, name: m.name, dtype: m.dtype, executionProvider: m.executionProvider, memory: { prepacking: m.prepacking } };
}

/** Built-ins stored as version 1 on first start. */
const SEEDED = ['r-stitch', 'citer', 'r2r', 'co-llm', 'me', 'query-router'];

/** Only the version seeded at a start: a built-in nobody deployed or asked for. */
function isSeededOnly(e: AlgorithmEntry): boolean {
  const [v, ...more] = e.versions;
  return more.length === 0 && v !== undefined && v.spec.kind === 'builtin' && v.spec.factory === e.name && SEEDED.includes(e.name);
}

export type { StreamToken, TokenLogprobs } from './streamToken.ts';

export interface GenerateParams {
  model: string;
  promptIds: number[];
  maxTokens: number;
  /** Neither EOS nor a stop string ends the request before this many tokens (vLLM's min_tokens). */
  minTokens?: number;
  sampling: SamplingParams;
  stop: string[];
  /** With model "draft": an IR to compile and run without storing it. */
  draftIr?: unknown;
  /** The id the client sees; the trace, the timeline and the metrics use the same. */
  requestId?: string;
  /** Hand the sink each token's signals and decision (`tokenrouter_tokens`); logprobs imply it. Off: text and model only. */
  perToken?: boolean;
  /** Every model writes the answer under this grammar (structured outputs, required tool calls). */
  constraint?: Constraint;
}

/** Whether a generation's sink gets each token's signals: per-token detail (`tokenrouter_tokens`) or logprobs asked for. */
export function wantsDetail(params: Pick<GenerateParams, 'perToken' | 'sampling'>): boolean {
  return params.perToken === true || params.sampling.topLogprobs !== undefined;
}

export interface GenerateSink {
  /**
   * Each committed token, called by the cluster itself (nothing of the service runs per token; called
   * unbound): its id, the model that wrote it, its output index, its signals when the request asked
   * for per-token detail (`wantsDetail`; `streamToken` shapes them), whether it was committed at a
   * handoff, and the text it lets the client see now. Text held back while a stop string might still
   * form is not in any delta: it is what `onEnd`'s whole text has past them.
   */
  onToken: TokenListener;
  onEnd(outcome: GenerateOutcome): void;
}

export interface GenerateOutcome {
  result: RequestResult;
  text: string;
  finishReason: 'stop' | 'length' | 'cancelled' | 'error';
  algorithm: string;
  version: number | null;
}

export interface GenerateHandle {
  id: string;
  cancel(): void;
}

export interface ServiceOptions {
  /** Runners by model name, instead of loading ONNX workers (tests, simulations). */
  runners?: Map<string, ModelRunner>;
  /** Engine threads already started (benches reuse them across servers): the service neither closes nor restarts them. */
  threads?: Map<string, ThreadEngine>;
  tokenizer?: TextTokenizer;
  clock?: Clock;
  /**
   * Starts a fresh runner for a model whose runner failed. Default: a new ONNX worker from the
   * model folder. Injected runners have no folder, so without this their lane stayed down for good.
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
  private readonly compiled = new Map<string, Served>();
  /** `name@version` of stored versions that do not load here, with why; reported once each. */
  private readonly unloadable = new Map<string, string>();
  /** Algorithms already reported as served by an earlier version (or not at all), so the log says it once. */
  private readonly reported = new Set<string>();
  readonly drafts = new DraftCache<Served>();
  readonly chatPrompts: ChatPrompts;
  private seq = 0;

  private constructor(
    readonly config: ServerConfig,
    /** Runners of the models whose engines run on this thread (remote models, injected runners, in-process placement). */
    readonly runners: Map<string, ModelRunner>,
    /** Models whose engine and runner run together elsewhere: in their own worker thread, or remote (sub-servers over NATS). */
    readonly threads: Map<string, EngineProxy>,
    readonly folders: Map<string, ModelFolder>,
    readonly tokenizer: TextTokenizer,
    readonly registry: AlgorithmRegistry,
    /** memory.budgetMiB's split: the process before models, each model's weights, workspace and KV, the headroom. */
    readonly memory: MemorySplit,
    readonly adminToken: string,
    clock: Clock,
    private readonly borrowedThreads: boolean,
    private readonly restartRunner: ((name: string) => Promise<ModelRunner>) | undefined,
    checkInvariants: boolean,
  ) {
    this.chatPrompts = new ChatPrompts(tokenizer);
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
        const at = { name: m.name, maxBatch: m.maxBatch, maxStepTokens: m.maxStepTokens, threshold: thresholds[m.name] ?? 1, kvCapacityTokens: memory.models.find((p) => p.name === m.name)?.kvTokens ?? Infinity };
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
      this.auto = new AutoThresholds(this.cluster, { optimise: this.optimiser.optimise, everyMs: 5000, windowMs: 30_000, hysteresis: THRESHOLD_HYSTERESIS, slo });
      this.trace.subscribe(this.auto.onEvent);
      this.auto.start();
    }
  }

  get memoryPlan(): ModelMemoryPlan[] {
    return this.memory.models;
  }

  /** The live threshold controller, when thresholds are "auto". */
  readonly auto: AutoThresholds | null = null;
  private readonly optimiser: ReturnType<typeof workerOptimiser> | null = null;

  /**
   * `plan()`, or, when it refuses (a budget too small), the engines and runners this start loaded
   * closed first: their worker threads would otherwise keep a refused process alive.
   */
  private static orRelease<T>(threads: readonly { close(): Promise<void> }[], runners: readonly { close?(): Promise<void> }[], plan: () => T): T {
    try {
      return plan();
    } catch (e) {
      void Promise.all([...threads.map((t) => t.close()), ...runners.map((r) => r.close?.())]).catch(() => {});
      throw e;
    }
  }

  static async start(config: ServerConfig, opts: ServiceOptions = {}): Promise<TokenRouterService> {
    // the budget bounds the whole process: what it holds before any model loads counts too
    const baseBytes = rssBytes();
    const loaded = new Map<string, number>();
    let workspaces = new Map<string, number>();
    const folders = new Map<string, ModelFolder>();
    let runners = opts.runners;
    const threads = new Map<string, EngineProxy>(opts.threads);
    const remotes = (have?: ReadonlySet<string>) => connectRemoteModels(config.models, have);
    if (opts.threads || runners) {
      for (const [name, e] of await remotes(new Set([...threads.keys(), ...(runners?.keys() ?? [])]))) threads.set(name, e);
      runners = new Map(runners);
    } else {
      for (const m of config.models) if (!m.remote || hasLocalFolder(m, config.modelsDir)) folders.set(m.name, loadModelFolder(m.path ?? path.resolve(config.modelsDir, m.name), { dtype: m.dtype }));
      checkSharedTokenizer(folders);
      const local = config.models.filter((m) => !m.remote);
      // ONNX model folders: "auto" puts each model's engine in its thread, beside the model.
      const inThread = config.scheduling.placement !== 'in-process';
      const byName = new Map(local.map((m) => [m.name, m]));
      type Loaded = { thread: ThreadEngine; runner?: never } | { runner: WorkerRunner; thread?: never };
      const load = (m: ServerConfig['models'][number]): Promise<Loaded> => (inThread ? startThread(m, folders.get(m.name)!).then((thread) => ({ thread })) : WorkerRunner.start(folders.get(m.name)!.dir, runnerOptions(m)).then((runner) => ({ runner })));
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
    if (!opts.tokenizer && folders.size === 0) throw new TokenRouterError('invalid_request', 'no model folder on this host to read the tokenizer from: keep at least one model folder here', 'models');
    const tokenizer = opts.tokenizer ?? TextTokenizer.fromFolder(folders.values().next().value!);
    const proc = loaded.size > 0 ? { baseBytes, headroomBytes: config.memory.headroomMiB * 2 ** 20 } : { baseBytes: 0, headroomBytes: 0 };
    // what this start loaded itself (not engines or runners the caller lent it)
    const own = loaded.size > 0 ? { threads: [...threads.values()], runners: [...runners.values()] } : { threads: [], runners: [] };
    const plan = TokenRouterService.orRelease(own.threads, own.runners, () => planMemory(
      config.memory.budgetMiB * 2 ** 20,
      config.models.filter((m) => !m.remote).map((m) => {
        const i = info(m.name);
        if (!i) throw new TokenRouterError('invalid_request', `no runner for model ${m.name}`, 'models');
        const f = folders.get(m.name);
        const weightBytes = loaded.get(m.name) ?? (f ? [f.onnxPath, ...f.externalData].reduce((a, file) => a + fs.statSync(file).size, 0) : 0);
        return { name: m.name, weightBytes, workspaceBytes: workspaces.get(m.name) ?? 0, kvBytesPerToken: i.kvBytesPerToken, maxContext: i.maxContext, maxBatch: m.maxBatch };
      }),
      proc,
    )).concat(remoteMemoryPlan(config.models, threads));
    fs.mkdirSync(config.dataDir, { recursive: true });
    const registry = new AlgorithmRegistry(config.dataDir);
    const modelNames = new Set(config.models.map((m) => m.name));
    for (const name of SEEDED) {
      const alg = builtinFactory(name)?.();
      if (alg && alg.models.every((m) => modelNames.has(m))) registry.seed(name, { kind: 'builtin', factory: name });
    }
    const service = new TokenRouterService(
      config,
      runners,
      threads,
      folders,
      tokenizer,
      registry,
      { budgetBytes: config.memory.budgetMiB * 2 ** 20, ...proc, models: plan },
      adminTokenFor(config),
      opts.clock ?? createRealClock(),
      opts.threads !== undefined,
      opts.restartRunner,
      opts.checkInvariants ?? process.env.TOKENROUTER_CHECK_INVARIANTS === '1',
    );
    // Every stored algorithm is loaded now, so one that no longer loads is reported at start.
    for (const e of registry.list()) {
      if (e.activeVersion === null) continue;
      // stored by an older build, which let an algorithm take a model's name: the model keeps it
      if (service.info(e.name)) console.error(`[tokenrouter] algorithm ${e.name} is named like a served model; requests for "${e.name}" get the model, and the algorithm is not served (deploy it under another name)`);
      // A built-in seeded here and never deployed is nobody's request: one that does not load on these models is left out quietly (a request for it says why).
      else service.serving(e.name, e.name !== config.defaultAlgorithm && isSeededOnly(e));
    }
    return service;
  }

  /** Restarts so far, by model: a crashed worker comes back by itself. */
  readonly restarts = new Map<string, number>();
  private closed = false;

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
    await Promise.all([...[...this.runners.values()].map((r) => r.close?.()), ...(this.borrowedThreads ? [] : [...this.threads.values()].map((t) => t.close()))]);
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
    return this.config.models.map((m) => ({
      name: m.name,
      heads: Object.keys(this.folders.get(m.name)?.routers ?? {}),
      vocabSize: this.info(m.name)!.vocabSize,
    }));
  }

  /** Everything a client may name as `model`: active algorithms, then single models. */
  modelIds(): string[] {
    const algs = this.registry
      .list()
      .filter((e) => e.activeVersion !== null && !this.info(e.name) && this.serving(e.name, true) !== null)
      .map((e) => e.name);
    return [...algs, ...this.config.models.map((m) => m.name)];
  }

  /**
   * Removes an algorithm and every version of it. Requests already running keep the algorithm they
   * resolved and finish; new ones get 404. The default algorithm stays: load runs and clients
   * without a model rely on it.
   */
  deleteAlgorithm(name: string): number {
    if (name === this.config.defaultAlgorithm) throw new TokenRouterError('conflict', `${name} is the default algorithm of this server and cannot be deleted (point defaultAlgorithm in the server config at another algorithm and restart first)`, 'name');
    const removed = this.registry.delete(name);
    if (removed === null) throw new TokenRouterError('not_found', `no algorithm named ${name}`, 'name');
    for (const cache of [this.compiled, this.unloadable, this.reported]) for (const key of [...cache.keys()]) if (key.startsWith(`${name}@`)) cache.delete(key);
    return removed;
  }

  /** Builds an algorithm from a stored spec; IR is compiled against the deployed models. */
  instantiate(spec: AlgorithmSpec): Algorithm<unknown> {
    return buildAlgorithm(spec, this.catalog());
  }

  /**
   * Builds the algorithm and proves it runs here: it names its models and this server serves each.
   * Deploys and activations go through this before anything is stored.
   */
  deployable(spec: AlgorithmSpec): Algorithm<unknown> {
    const alg = this.instantiate(spec);
    const models: unknown = alg?.models;
    const field = spec.kind === 'ir' ? 'ir' : 'builtin';
    if (!Array.isArray(models) || models.length === 0 || !models.every((m) => typeof m === 'string')) {
      throw new TokenRouterError('invalid_request', 'the algorithm does not name the models it runs on', field);
    }
    const missing = models.find((m) => !this.info(m));
    if (missing !== undefined) {
      throw new TokenRouterError('invalid_request', `the algorithm runs on model "${missing}", which this server does not serve (served: ${this.config.models.map((m) => m.name).join(', ')})`, field);
    }
    refuseMissingHeads(alg, models as string[], this.folders, field);
    return alg;
  }

  /**
   * What `name` serves: its active version, or when that one does not load here (stored by an
   * older build, or its models are no longer served), the most recent earlier active version that
   * does; null when none loads. Answering every request with a 500 would take the name down.
   */
  serving(name: string, quiet = false): { algorithm: Algorithm<unknown>; ref: AlgorithmRef; version: number } | null {
    const active = this.registry.active(name);
    if (!active) return null;
    const failed: string[] = [];
    for (const v of [active.version, ...this.registry.activationHistory(name).filter((x) => x !== active.version)]) {
      const key = `${name}@${v}`;
      let served = this.compiled.get(key);
      if (!served) {
        const why = this.unloadable.get(key);
        if (why !== undefined) {
          failed.push(`v${v}: ${why}`);
          continue;
        }
        const spec = v === active.version ? active.spec : this.registry.version(name, v)?.spec;
        if (!spec) continue;
        try {
          served = { algorithm: this.deployable(spec), ref: { key, source: spec, catalog: this.catalog() } };
        } catch (e) {
          const msg = (e as Error).message;
          this.unloadable.set(key, msg);
          failed.push(`v${v}: ${msg}`);
          continue;
        }
        this.compiled.set(key, served);
      }
      if (failed.length > 0) this.report(`${name}@${active.version}>${v}`, `algorithm ${name}: stored version does not load (${failed.join('; ')}); serving v${v} instead`);
      return { ...served, version: v };
    }
    if (!quiet) this.report(`${name}@${active.version}>none`, `algorithm ${name}: no stored version loads (${failed.join('; ')}); it is not served`);
    return null;
  }

  private report(key: string, line: string): void {
    if (this.reported.has(key)) return;
    this.reported.add(key);
    console.error(`[tokenrouter] ${line}`);
  }

  /** Refuses a request the cluster would refuse anyway, before any work is spent on it. */
  private admitOrThrow(): void {
    const c = this.cluster;
    if (c.activeCount >= c.maxConcurrency && c.queuedCount >= c.maxQueue) throw new TokenRouterError('overloaded', `admission queue is full (${c.maxQueue} waiting)`, null);
  }

  private readonly resolved = new Map<string, { generation: number; served: Served & { name: string; version: number | null } }>();

  /** The algorithm a request names, at the version active now (in-flight requests keep theirs). */
  resolve(model: string, draftIr?: unknown): Served & { name: string; version: number | null } {
    if (model === 'draft') {
      if (draftIr === undefined) throw new TokenRouterError('invalid_request', 'model "draft" needs a tokenrouter_ir field with the IR to run', 'tokenrouter_ir');
      // Admitted before compiling: a flood past the queue is refused without costing compiles.
      this.admitOrThrow();
      const served = this.drafts.get(draftIr, (ir, hash) => ({ algorithm: this.instantiate({ kind: 'ir', ir }), ref: { key: `draft:${hash}`, source: { kind: 'ir', ir }, catalog: this.catalog() } }));
      return { ...served, name: 'draft', version: null };
    }
    // A model keeps its name over an algorithm stored under it, so a model name never needs the registry (a database read per request).
    if (this.info(model)) {
      const key = `single:${model}`;
      let served = this.compiled.get(key);
      if (!served) this.compiled.set(key, (served = { algorithm: buildAlgorithm({ kind: 'single', model }), ref: { key, source: { kind: 'single', model } } }));
      return { ...served, name: model, version: null };
    }
    // What a name serves, read from the registry once per change of it (a deploy, activate, rollback or delete here bumps its generation).
    const known = this.resolved.get(model);
    if (known && known.generation === this.registry.generation) return known.served;
    if (this.registry.active(model)) {
      const generation = this.registry.generation;
      const s = this.serving(model);
      if (!s) throw new TokenRouterError('not_found', `The model \`${model}\` has no stored version that loads on this server (see the server log). Available: ${this.modelIds().join(', ')}`, 'model');
      const served = { algorithm: s.algorithm, ref: s.ref, name: model, version: s.version };
      this.resolved.set(model, { generation, served });
      return served;
    }
    throw new TokenRouterError('not_found', `The model \`${model}\` does not exist. Available: ${this.modelIds().join(', ')}`, 'model');
  }

  /** Each token id's own text, decoded once: every streamed token names its text. */
  private readonly texts = new Map<number, string>();
  private tokenText(id: number): string {
    let t = this.texts.get(id);
    if (t === undefined) this.texts.set(id, (t = this.tokenizer.decode([id])));
    return t;
  }

  /** A committed token as the client's per-token detail (`tokenrouter_tokens`, logprobs), from what the sink got with it. */
  streamToken(token: number, model: string, signals: TokenSignals, atHandoff: boolean, topLogprobs: number | undefined): StreamToken {
    return streamToken(token, this.tokenText(token), model, signals, atHandoff, topLogprobs);
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
        const finishReason = result.status === 'cancelled' ? 'cancelled' : result.status === 'failed' ? 'error' : result.finishReason === 'length' ? 'length' : 'stop';
        sink.onEnd({ result, text: result.text, finishReason, algorithm: name, version });
      },
    });
    return { id: handle.id, cancel: handle.cancel };
  }
}

/** Routing mixes token ids across models, so every model must read the same vocabulary. */
function checkSharedTokenizer(folders: Map<string, ModelFolder>): void {
  let first: [string, string] | undefined;
  for (const [name, f] of folders) {
    const h = crypto.createHash('sha256').update(JSON.stringify((f.tokenizerJson as { model?: unknown }).model ?? f.tokenizerJson)).digest('hex');
    if (!first) first = [name, h];
    else if (first[1] !== h) throw new TokenRouterError('invalid_request', `models ${first[0]} and ${name} use different tokenizers; token-level routing needs one shared vocabulary`, 'models');
  }
}
