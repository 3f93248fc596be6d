// ModelRunner over an Optimum-style decoder ONNX export: batched mixed prefill/extend/decode with a persistent batch KV.
import * as ort from 'onnxruntime-node';
import type { TokenSignals } from '../../shared/algorithm.ts';
import type { ModelInfo, ModelRunner, StepOutput, StepPass, StepRow } from './modelRunner.ts';
import { loadModelFolder, type Dtype, type ModelFolder, type RouterHeadSpec } from './modelFolder.ts';
import { readGraphFile, type GraphFileOptions } from './onnxGraphFile.ts';
import { createSession, refuseUndrivable, type ExecutionProvider } from './onnxExport.ts';
import { sessionOptions, type SessionMemory } from './sessionOptions.ts';

export { sessionOptions, type SessionMemory } from './sessionOptions.ts';
export { StepError } from './stepError.ts';
import { runRouterHeads, type RouterHead } from './runRouterHeads.ts';
import { planHead } from './stepHead.ts';
import { passInputs } from './passInputs.ts';
import { rowSignals } from './rowSignals.ts';
import { StepError } from './stepError.ts';
import { validateStep } from './validateStep.ts';
import { BatchKvStore, HEADROOM, type CacheEntry } from './batchKvStore.ts';
import { splitFeeds } from './splitFeeds.ts';
import { prepareGraph, type LogitsMode, type PreparedGraph } from './graph/prepareGraph.ts';
import { signalInputs } from './graph/signalHead.ts';

export interface OnnxRunnerOptions {
  /** Threads ORT may use inside one session.run (default 1: the machine is shared). */
  intraOpNumThreads?: number;
  /** Overrides the model name (default: the folder name); part of the sampling draw key. */
  name?: string;
  /**
   * 'new' (default): the graph is rewritten to hand back a step's new KV slots only, kept in the
   * runner's own buffers; 'present': each step's whole `present` is fetched (the graph as exported;
   * what a model whose graph cannot be rewritten gets).
   */
  kvOutputs?: 'new' | 'present';
  /** The export variant to load (transformers.js' names, modelFolder.ts DTYPE_FILES; default fp32: onnx/model.onnx). */
  dtype?: Dtype;
  /** Where the model runs (default cpu). */
  executionProvider?: ExecutionProvider;
  /** Reading the graph: when an inline-weights file is converted to external data, and where that is kept (onnxGraphFile.ts). */
  graphFile?: GraphFileOptions;
  /** ORT memory settings (SessionMemory; defaults: a prepacked copy of the weights and the CPU arena, both on). */
  memory?: SessionMemory;
  /**
   * Where a grammar-masked row's signals and draw are computed: 'graph' (default: ORT's masked group,
   * graph/signalHead.ts MASKED; rows with penalties still go to JavaScript) or 'js' (the graph
   * without that group: maskedRow.ts analyzeMasked over the fetched row of logits; kept for comparison).
   */
  masks?: 'graph' | 'js';
}

function pass(rows: readonly StepRow[], modelMs: number): StepPass {
  let tokens = 0;
  let longest = 0;
  for (const r of rows) {
    tokens += r.tokens.length;
    longest = Math.max(longest, r.tokens.length);
  }
  return { rows: rows.length, tokens, longest, modelMs };
}

/** The export's KV inputs and outputs, layer by layer, key before value (the Optimum layout). */
export function kvNames(numLayers: number): { past: string[]; present: string[] } {
  const past: string[] = [];
  const present: string[] = [];
  for (let i = 0; i < numLayers; i++) {
    for (const kind of ['key', 'value']) {
      past.push(`past_key_values.${i}.${kind}`);
      present.push(`present.${i}.${kind}`);
    }
  }
  return { past, present };
}

/** What a runner keeps of its folder: all but the tokenizer, which the runner never reads (the decoder beside it keeps its own). */
export type RunnerFolder = Omit<ModelFolder, 'tokenizerJson' | 'tokenizerConfig'>;

function runnerFolder(folder: ModelFolder): RunnerFolder {
  const { tokenizerJson, tokenizerConfig, ...kept } = folder;
  return kept;
}

export class OnnxRunner implements ModelRunner {
  readonly info: ModelInfo;
  /** Where each request's KV lives, and the batch tensors a step feeds. */
  private readonly kv: BatchKvStore;
  private busy = false;
  private readonly pastNames: string[];
  private readonly presentNames: string[];
  private readonly hasHidden: boolean;
  private readonly hasPositionIds: boolean;
  /** The graph's outputs holding only a step's new KV slots (present order); undefined: `present` is fetched whole. */
  private readonly newNames: readonly string[] | undefined;
  /** The KV outputs a step fetches (new slots or whole present tensors). */
  private readonly kvFetches: readonly string[];
  /** The graph has the signal nodes (graph/signalHead.ts): ORT computes the O(V) work and a step fetches only what its rows read. */
  private readonly signals: boolean;
  /** The graph has the masked rows' group (graph/signalHead.ts MASKED). */
  private readonly maskedGroup: boolean;
  /** The masked rows' bools, reused from step to step (stepHead.ts HeadContext.scratch). */
  private readonly headScratch = { allowed: new Uint8Array(0) };
  /** How the graph yields last-position logits (graph/prepareGraph.ts). */
  readonly logitsMode: LogitsMode;
  /** The ids a `suppressEos` draw leaves out (every EOS id the folder names). */
  /** Fed as the export's `num_logits_to_keep` (or `logits_to_keep`) input. */
  private readonly keepFeed: ort.Tensor | undefined;
  /** Counters for benchmarks: how often the batch KV was re-packed vs reused as is. */
  readonly stats = { steps: 0, repacks: 0, reused: 0, copiedBytes: 0, staleMoves: 0, forks: 0, splits: 0 };

  private constructor(
    readonly folder: RunnerFolder,
    private readonly session: ort.InferenceSession,
    private readonly heads: Map<string, RouterHead>,
    name: string,
    prepared?: PreparedGraph,
  ) {
    const newNames = prepared?.newNames;
    const c = folder.config;
    this.info = {
      name,
      vocabSize: c.vocabSize,
      eosTokenIds: c.eosTokenIds,
      maxContext: c.maxContext,
      hiddenSize: c.hiddenSize,
      kvBytesPerToken: folder.kvBytesPerToken,
    };
    ({ past: this.pastNames, present: this.presentNames } = kvNames(c.numLayers));
    for (const n of ['input_ids', 'attention_mask', ...this.pastNames]) {
      if (!session.inputNames.includes(n)) throw new StepError(`${folder.onnxPath}: ONNX input "${n}" is missing (inputs: ${session.inputNames.join(', ')})`);
    }
    for (const n of ['logits', ...this.presentNames]) {
      if (!session.outputNames.includes(n))
        throw new StepError(`${folder.onnxPath}: ONNX output "${n}" is missing (outputs: ${session.outputNames.join(', ')})`);
    }
    this.hasHidden = session.outputNames.includes('hidden_states');
    this.hasPositionIds = session.inputNames.includes('position_ids');
    this.newNames = newNames;
    this.kv = new BatchKvStore(
      { kv: c.numKvHeads, hd: c.headDim, bytesPerToken: folder.kvBytesPerToken, nT: this.pastNames.length },
      newNames !== undefined,
      this.stats,
    );
    this.kvFetches = newNames ?? this.presentNames;
    this.signals = prepared?.signals === true;
    this.maskedGroup = prepared?.masked === true;
    this.logitsMode = prepared?.logits ?? 'full';
    const keep = typeof this.logitsMode === 'object' ? this.logitsMode.input : undefined;
    if (keep) {
      const meta = session.inputMetadata?.[session.inputNames.indexOf(keep)] as { shape?: readonly unknown[] } | undefined;
      this.keepFeed = new ort.Tensor('int64', BigInt64Array.from([1n]), meta?.shape?.length === 1 ? [1] : []);
    }
  }

  /** `source`: the folder's path, or the folder as read (with the export variant it picked: `opts.dtype` is not read then). */
  static async load(source: string | ModelFolder, opts: OnnxRunnerOptions = {}): Promise<OnnxRunner> {
    const folder = runnerFolder(typeof source === 'string' ? loadModelFolder(source, { dtype: opts.dtype }) : source);
    const ep = opts.executionProvider ?? 'cpu';
    const name = opts.name ?? folder.name;
    // Only the graph is read into JavaScript: weights stay in their external data files (an inline
    // export big enough to matter is converted to that layout once), which ONNX Runtime reads itself.
    const graph = readGraphFile(folder.onnxPath, folder.externalData, opts.graphFile);
    const so = sessionOptions(opts.intraOpNumThreads ?? 1, { executionProvider: ep, externalDataDir: graph.dataDir }, opts.memory);
    // Handing a step's whole KV back to JavaScript costs ~28 % of it (bench models, kv_fetch): the
    // graph is rewritten to hand back only the new slots, to compute logits at each row's last
    // position only, and to compute the signals and the draw natively (graph/prepareGraph.ts).
    const prepared = prepareGraph(graph.model, {
      present: kvNames(folder.config.numLayers).present,
      newKv: opts.kvOutputs !== 'present',
      vocab: folder.config.vocabSize,
      masked: opts.masks !== 'js',
    });
    if (prepared.logits === 'full') console.warn(`${name}: ${prepared.logitsNote}: logits stay [B, S, V] and the last row is read`);
    const session = await createSession(folder.onnxPath, prepared.model, so, ep);
    try {
      // the signal nodes' inputs are the runner's own (graph/signalHead.ts)
      refuseUndrivable(folder.onnxPath, graph.model, session, kvNames(folder.config.numLayers).past, prepared.signals ? signalInputs(prepared.masked) : []);
    } catch (e) {
      await session.release();
      throw e;
    }
    const headOptions = sessionOptions(opts.intraOpNumThreads ?? 1, { executionProvider: ep }, opts.memory);
    const heads = new Map<string, RouterHead>();
    for (const spec of Object.values(folder.routers)) {
      heads.set(spec.name, { spec, session: await ort.InferenceSession.create(spec.file, headOptions) });
    }
    return new OnnxRunner(folder, session, heads, name, prepared);
  }

  /** How a step's KV comes back (OnnxRunnerOptions.kvOutputs). */
  get kvOutputs(): 'new' | 'present' {
    return this.newNames ? 'new' : 'present';
  }

  /** Router heads this model ships, with their suggested thresholds. */
  get routerHeads(): readonly RouterHeadSpec[] {
    return [...this.heads.values()].map((h) => h.spec);
  }

  /** Tokens held for a cache (0 when unknown). */
  cacheLength(cacheId: number): number {
    return this.kv.caches.get(cacheId)?.len ?? 0;
  }

  async step(rows: readonly StepRow[]): Promise<StepOutput> {
    if (this.busy) throw new StepError(`${this.info.name}: step() called while a step is in flight`);
    this.busy = true;
    try {
      return await this.runStep(rows);
    } finally {
      this.busy = false;
    }
  }

  private async runStep(rows: readonly StepRow[]): Promise<StepOutput> {
    if (rows.length === 0) return { rows: [], modelMs: 0 };
    validateStep(rows, { info: this.info, held: (id) => this.cacheLength(id), heads: this.heads, hasHidden: this.hasHidden });
    for (const r of rows) {
      if (r.position === 0) this.kv.begin(r.cacheId, r.sampling.penalties !== undefined);
    }
    const entries = rows.map((r) => this.kv.caches.get(r.cacheId)!);
    const groups = splitFeeds(rows);
    const signals = new Array<TokenSignals>(rows.length);
    const passes: StepPass[] = [];
    let modelMs = 0;
    for (const group of groups) {
      const groupRows = group.map((i) => rows[i]);
      const out = await this.passOver(
        groupRows,
        group.map((i) => entries[i]),
      );
      group.forEach((i, k) => (signals[i] = out.signals[k]!));
      passes.push(pass(groupRows, out.modelMs));
      modelMs += out.modelMs;
    }
    this.stats.steps++;
    if (groups.length > 1) this.stats.splits++;
    return { rows: signals, modelMs, passes };
  }

  /** One pass of `rows` over their batch (BatchKvStore.place). */
  private passOver(rows: readonly StepRow[], entries: CacheEntry[]): Promise<{ signals: (TokenSignals | undefined)[]; modelMs: number }> {
    const order = this.kv.place(rows, entries, Math.max(...rows.map((r) => r.tokens.length)));
    return this.forward(
      rows,
      entries,
      order,
      rows.map((r) => r.tokens),
    );
  }

  /**
   * One forward pass over the current batch tensors: row i feeds `feeds[i]` at the end of its cache
   * (null: feeds nothing, its new slot masked) and gets the signals of the next position.
   */
  private async forward(
    rows: readonly StepRow[],
    entries: CacheEntry[],
    order: number[],
    feeds: readonly (readonly number[] | null)[],
  ): Promise<{ signals: (TokenSignals | undefined)[]; modelMs: number }> {
    const batch = this.kv.batch!;
    const B = rows.length;
    const S = Math.max(...feeds.map((f) => f?.length ?? 0));
    const own = this.newNames !== undefined;
    if (own && batch.T + S > batch.cap) this.kv.grow(batch, batch.T + S + HEADROOM);
    const { inputs, mask, valid, T2 } = passInputs(batch, entries, order, feeds, S, {
      padTokenId: this.folder.config.padTokenId,
      hasPositionIds: this.hasPositionIds,
      pastNames: this.pastNames,
    });
    let wantHeads = false;
    let wantHidden = false;
    for (let i = 0; i < B; i++) {
      if (feeds[i] === null) continue;
      const w = rows[i].wants;
      if (w.heads.length > 0) wantHeads = true;
      if (w.hidden) wantHidden = true;
    }
    wantHidden ||= wantHeads;
    // only a row whose router heads read the top logits needs them (most steps run no head at all)
    const needTopLogits = wantHeads
      ? Math.max(
          0,
          ...rows.map((r) => (r.wants.heads.some((h) => this.heads.get(h)!.spec.inputs.some((s) => s.source === 'topk_logits')) ? this.folder.routerTopK : 0)),
        )
      : 0;
    const fetches = [...this.kvFetches];
    if (wantHidden) fetches.push('hidden_states');
    if (this.keepFeed) inputs[(this.logitsMode as { input: string }).input] = this.keepFeed;
    const plan = this.signals
      ? planHead(
          rows,
          order,
          feeds,
          {
            V: this.info.vocabSize,
            model: this.info.name,
            eosIds: this.info.eosTokenIds,
            topLogitsK: needTopLogits,
            lengths: entries.map((e) => e.len),
            maskedGroup: this.maskedGroup,
            scratch: this.headScratch,
          },
          inputs,
        )
      : undefined;
    if (plan) fetches.push(...plan.fetches);
    else fetches.push('logits');
    const t0 = performance.now();
    const out = await this.session.run(inputs, fetches);
    let modelMs = performance.now() - t0;

    if (own)
      this.kv.writeNew(
        batch,
        this.newNames!.map((n) => out[n].data as Float32Array),
        S,
        mask,
        valid,
      );
    else
      this.kv.takePresent(
        batch,
        this.presentNames.map((n) => out[n]),
        mask,
        valid,
        T2,
      );
    for (let b = 0; b < B; b++) {
      const e = entries[order[b]];
      const f = feeds[order[b]];
      if (e.ids && f) for (const t of f) e.ids.push(t);
      e.len += f?.length ?? 0;
    }

    const { results, topLogits, hidden } = rowSignals(out, this.info, { rows, entries, order, feeds, S, plan, wantHidden, topLogitsK: needTopLogits });
    if (wantHeads)
      modelMs += await runRouterHeads(
        this.heads,
        rows,
        { fed: feeds, results, hidden, topLogits },
        { hiddenSize: this.info.hiddenSize, topK: this.folder.routerTopK },
      );
    return { signals: results, modelMs };
  }

  release(cacheId: number): void {
    this.kv.drop(cacheId);
  }

  /** Prefix caching: the target gets its own compact copy of the source's first `tokens` KV slots (BatchKvStore.fork). */
  fork(source: number, target: number, tokens: number): boolean {
    return this.kv.fork(source, target, tokens);
  }

  /** KV buffers a re-pack or grow took from the pool instead of allocating. */
  get buffersReused(): number {
    return this.kv.buffersReused;
  }

  /** KV tokens held over all caches (for memory accounting checks). */
  get cachedTokens(): number {
    return this.kv.cachedTokens;
  }

  async close(): Promise<void> {
    this.kv.clear();
    await this.session.release();
    for (const h of this.heads.values()) await h.session.release();
  }
}
