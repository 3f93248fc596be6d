// ModelRunner over an Optimum-style decoder ONNX export: batched mixed prefill/extend/decode with a persistent batch KV.
import * as ort from 'onnxruntime-node';
import type { TokenSignals } from '../../shared/algorithm.ts';
import type { ModelInfo, ModelRunner, StepOutput, StepPass, StepRow } from './modelRunner.ts';
import { loadModelFolder, type Dtype, type ModelFolder, type RouterHeadSpec } from './modelFolder.ts';
import { readGraphFile, type GraphFileOptions } from './onnxGraphFile.ts';
import { createSession, refuseUndrivable, type ExecutionProvider } from './onnxExport.ts';
import { runRouterHeads, type RouterHead } from './runRouterHeads.ts';
import { analyzeHead, analyzeRow } from './sampling.ts';
import { headRow, planHead } from './stepHead.ts';
import { copyKv, firstSlots, validRuns } from './kvSlots.ts';
import { splitFeeds } from './splitFeeds.ts';
import { prepareGraph, type LogitsMode, type PreparedGraph } from './graph/prepareGraph.ts';
import { SIG_INPUTS } from './graph/signalHead.ts';
import { KvBufferPool } from './kvBufferPool.ts';

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
}

/** Where a request's KV lives: a row of the current batch tensors, or its own copy ([kv, stride, hd], first `len` slots valid). */
type KvLocation = { kind: 'batch'; batch: BatchState; row: number } | { kind: 'own'; data: Float32Array[]; stride: number } | null;

interface CacheEntry {
  /** Tokens held: the next row position must equal this. */
  len: number;
  loc: KvLocation;
  /** The token ids held (first `len` valid), kept only for requests with penalties, which count them. */
  ids?: number[];
}

/** An earlier batch's tensors are kept for the requests left in them until they hold this many times the tokens those use. */
const STALE_FACTOR = 2;

/**
 * The KV of the rows of the last step, fed as `past` of the next without any copy while the same
 * rows keep stepping. A row's valid slots are marked in `mask`; rows are left-padded and may contain
 * holes (pad slots of a longer peer's extend). With a rewritten graph (newKvOutputs.ts) the buffers
 * are the runner's own, `cap` slots long: a step writes its new slots in place at T and the free
 * slots past T are fed masked. Otherwise they are the last step's `present`, and `cap` is T.
 */
interface BatchState {
  ids: number[];
  /** [B, kv, cap, hd] each. */
  past: ort.Tensor[];
  /** attention mask over slots, [B, cap], 1 = a real token. */
  mask: BigInt64Array;
  /** The same mask as bytes: read on every re-pack, where BigInt reads would cost more than the copy. */
  valid: Uint8Array;
  /** Slots used (the next step's new slots start here). */
  T: number;
  /** Slots allocated. */
  cap: number;
  /** Cache entries whose KV lives here; at 0 the batch is gone and its own buffers go back to the pool. */
  refs: number;
}

/** Free slots a batch's own buffers get beyond what a step needs, so most decode steps write in place. */
const HEADROOM = 16;


function pass(rows: readonly StepRow[], modelMs: number): StepPass {
  let tokens = 0;
  let longest = 0;
  for (const r of rows) {
    tokens += r.tokens.length;
    longest = Math.max(longest, r.tokens.length);
  }
  return { rows: rows.length, tokens, longest, modelMs };
}

/** Thrown for a step the runner cannot execute as asked (bad position, unknown head, context overflow). */
export class StepError extends Error {
  override readonly name = 'StepError';
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

/** ONNX Runtime's settings for a served model's session (and its router heads). */
export function sessionOptions(intraOpNumThreads: number, place: { executionProvider?: ExecutionProvider; externalDataDir?: string } = {}): ort.InferenceSession.SessionOptions {
  const session: Record<string, unknown> = {};
  // With more than one intra-op thread, idle pool threads would spin between steps and take the core the entry needs.
  if (intraOpNumThreads > 1) session.intra_op = { allow_spinning: '0' };
  // A model created from bytes finds its external data (model.onnx_data, ...) in this folder.
  if (place.externalDataDir) session.model_external_initializers_file_folder_path = place.externalDataDir;
  return {
    intraOpNumThreads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    ...(place.executionProvider && place.executionProvider !== 'cpu' ? { executionProviders: [place.executionProvider, 'cpu'] } : {}),
    ...(Object.keys(session).length > 0 ? { extra: { session } } : {}),
  };
}

export class OnnxRunner implements ModelRunner {
  readonly info: ModelInfo;
  private readonly caches = new Map<number, CacheEntry>();
  private batch: BatchState | null = null;
  /**
   * Earlier batches a request left (or that stopped being current) since the last compaction: the
   * only ones whose share of used slots can have fallen, as a batch no longer current never changes
   * otherwise. Why not every earlier batch: the prefix cache keeps hundreds alive at steady state
   * (R2R at N = 16: ~600 on large), and walking them all at each re-pack took 5-8 % of an engine thread.
   */
  private readonly toCompact = new Set<BatchState>();
  /** Recycles the batches' own KV buffers (rewritten graph only: otherwise they are ORT's outputs). */
  private readonly pool: KvBufferPool | undefined;
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
  /** How the graph yields last-position logits (graph/prepareGraph.ts). */
  readonly logitsMode: LogitsMode;
  /** The ids a `suppressEos` draw leaves out (every EOS id the folder names). */
  /** Fed as the export's `num_logits_to_keep` (or `logits_to_keep`) input. */
  private readonly keepFeed: ort.Tensor | undefined;
  /** Counters for benchmarks: how often the batch KV was re-packed vs reused as is. */
  readonly stats = { steps: 0, repacks: 0, reused: 0, copiedBytes: 0, staleMoves: 0, forks: 0, splits: 0 };

  private constructor(
    readonly folder: ModelFolder,
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
      if (!session.outputNames.includes(n)) throw new StepError(`${folder.onnxPath}: ONNX output "${n}" is missing (outputs: ${session.outputNames.join(', ')})`);
    }
    this.hasHidden = session.outputNames.includes('hidden_states');
    this.hasPositionIds = session.inputNames.includes('position_ids');
    this.newNames = newNames;
    // two batches' worth (a re-pack's old and new) and one more for the stale ones routing leaves behind
    this.pool = newNames ? new KvBufferPool(3 * newNames.length) : undefined;
    this.kvFetches = newNames ?? this.presentNames;
    this.signals = prepared?.signals === true;
    this.logitsMode = prepared?.logits ?? 'full';
    const keep = typeof this.logitsMode === 'object' ? this.logitsMode.input : undefined;
    if (keep) {
      const meta = session.inputMetadata?.[session.inputNames.indexOf(keep)] as { shape?: readonly unknown[] } | undefined;
      this.keepFeed = new ort.Tensor('int64', BigInt64Array.from([1n]), meta?.shape?.length === 1 ? [1] : []);
    }
  }

  static async load(folderPath: string, opts: OnnxRunnerOptions = {}): Promise<OnnxRunner> {
    const folder = loadModelFolder(folderPath, { dtype: opts.dtype });
    const ep = opts.executionProvider ?? 'cpu';
    const name = opts.name ?? folder.name;
    // Only the graph is read into JavaScript: weights stay in their external data files (an inline
    // export big enough to matter is converted to that layout once), which ONNX Runtime reads itself.
    const graph = readGraphFile(folder.onnxPath, folder.externalData, opts.graphFile);
    const so = sessionOptions(opts.intraOpNumThreads ?? 1, { executionProvider: ep, externalDataDir: graph.dataDir });
    // Handing a step's whole KV back to JavaScript costs ~28 % of it (bench models, kv_fetch): the
    // graph is rewritten to hand back only the new slots, to compute logits at each row's last
    // position only, and to compute the signals and the draw natively (graph/prepareGraph.ts).
    const prepared = prepareGraph(graph.model, { present: kvNames(folder.config.numLayers).present, newKv: opts.kvOutputs !== 'present', vocab: folder.config.vocabSize });
    if (prepared.logits === 'full') console.warn(`${name}: ${prepared.logitsNote}: logits stay [B, S, V] and the last row is read`);
    const session = await createSession(folder.onnxPath, prepared.model, so, ep);
    try {
      // the signal nodes' inputs are the runner's own (graph/signalHead.ts)
      refuseUndrivable(folder.onnxPath, graph.model, session, kvNames(folder.config.numLayers).past, prepared.signals ? SIG_INPUTS : []);
    } catch (e) {
      await session.release();
      throw e;
    }
    const headOptions = sessionOptions(opts.intraOpNumThreads ?? 1, { executionProvider: ep });
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
    return this.caches.get(cacheId)?.len ?? 0;
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

  private validate(rows: readonly StepRow[]): void {
    const seen = new Set<number>();
    const V = this.info.vocabSize;
    for (const r of rows) {
      if (seen.has(r.cacheId)) throw new StepError(`${this.info.name}: cacheId ${r.cacheId} appears twice in one step`);
      seen.add(r.cacheId);
      if (r.tokens.length === 0) throw new StepError(`${this.info.name}: request ${r.requestId} (cache ${r.cacheId}) feeds no tokens`);
      for (const t of r.tokens) {
        if (!Number.isInteger(t) || t < 0 || t >= V) throw new StepError(`${this.info.name}: request ${r.requestId}: token ${t} outside vocabulary [0, ${V})`);
      }
      if (r.position !== 0) {
        const held = this.caches.get(r.cacheId)?.len ?? 0;
        if (r.position !== held) {
          throw new StepError(`${this.info.name}: request ${r.requestId} (cache ${r.cacheId}) steps at position ${r.position} but its cache holds ${held} tokens`);
        }
      }
      if (r.position + r.tokens.length > this.info.maxContext) {
        throw new StepError(`${this.info.name}: request ${r.requestId}: position ${r.position} + ${r.tokens.length} tokens exceeds max context ${this.info.maxContext}`);
      }
      for (const h of r.wants.heads) {
        if (!this.heads.has(h)) throw new StepError(`${this.info.name}: router head "${h}" is not shipped with this model (has: ${[...this.heads.keys()].join(', ') || 'none'})`);
      }
      if ((r.wants.hidden || r.wants.heads.length) && !this.hasHidden) throw new StepError(`${this.info.name}: hidden state asked for but the ONNX export has no "hidden_states" output`);
    }
  }

  private async runStep(rows: readonly StepRow[]): Promise<StepOutput> {
    if (rows.length === 0) return { rows: [], modelMs: 0 };
    this.validate(rows);
    for (const r of rows) {
      if (r.position === 0) {
        this.dropCache(r.cacheId);
        this.caches.set(r.cacheId, r.sampling.penalties ? { len: 0, loc: null, ids: [] } : { len: 0, loc: null });
      }
    }
    const entries = rows.map((r) => this.caches.get(r.cacheId)!);
    const split = splitFeeds(rows);
    if (split) {
      // the decode rows first: their batch is usually the last step's, reused as is
      const d = await this.passOver(split.decode.map((i) => rows[i]), split.decode.map((i) => entries[i]));
      const m = await this.passOver(split.multi.map((i) => rows[i]), split.multi.map((i) => entries[i]));
      const signals = new Array<TokenSignals>(rows.length);
      split.decode.forEach((i, k) => (signals[i] = d.out.signals[k]!));
      split.multi.forEach((i, k) => (signals[i] = m.out.signals[k]!));
      this.stats.steps++;
      this.stats.splits++;
      return { rows: signals, modelMs: d.out.modelMs + m.out.modelMs, passes: [pass(split.decode.map((i) => rows[i]), d.out.modelMs), pass(split.multi.map((i) => rows[i]), m.out.modelMs)] };
    }
    const { out } = await this.passOver(rows, entries);
    this.stats.steps++;
    return { rows: out.signals as TokenSignals[], modelMs: out.modelMs, passes: [pass(rows, out.modelMs)] };
  }

  /** One pass of `rows`: their batch reused as is when the very same requests stepped last, else re-packed. */
  private async passOver(rows: readonly StepRow[], entries: CacheEntry[]): Promise<{ out: { signals: (TokenSignals | undefined)[]; modelMs: number }; order: number[] }> {
    const B = rows.length;
    let reuse = this.batch !== null && this.batch.ids.length === B && entries.every((e) => e.loc?.kind === 'batch' && e.loc.batch === this.batch);
    if (reuse) {
      // compaction: holes from mixed-length steps must not grow the attention span without bound
      const maxLen = Math.max(...entries.map((e) => e.len));
      if (this.batch!.T > 2 * maxLen + 64) reuse = false;
    }
    if (reuse) this.stats.reused++;
    else this.repack(rows, entries, Math.max(...rows.map((r) => r.tokens.length)));
    // order[b] = index of the step row living in batch row b
    const order = new Array<number>(B);
    entries.forEach((e, i) => {
      order[(e.loc as { row: number }).row] = i;
    });
    return { out: await this.forward(rows, entries, order, rows.map((r) => r.tokens)), order };
  }

  /**
   * One forward pass over the current batch tensors: row i feeds `feeds[i]` at the end of its cache
   * (null: feeds nothing, its new slot masked) and gets the signals of the next position.
   */
  private async forward(rows: readonly StepRow[], entries: CacheEntry[], order: number[], feeds: readonly (readonly number[] | null)[]): Promise<{ signals: (TokenSignals | undefined)[]; modelMs: number }> {
    const batch = this.batch!;
    const B = rows.length;
    const S = Math.max(...feeds.map((f) => f?.length ?? 0));
    const own = this.newNames !== undefined;
    if (own && batch.T + S > batch.cap) this.grow(batch, batch.T + S + HEADROOM);
    const T = batch.T;
    // every allocated slot is fed (the free ones masked): the buffers go in as they are
    const P = batch.cap;
    const T2 = P + S;
    const pad = BigInt(this.folder.config.padTokenId);
    const inputIds = new BigInt64Array(B * S).fill(pad);
    const positionIds = new BigInt64Array(B * S);
    const mask = new BigInt64Array(B * T2);
    const valid = new Uint8Array(B * T2);
    for (let b = 0; b < B; b++) {
      const f = feeds[order[b]];
      const k = f?.length ?? 0;
      const pos = entries[order[b]].len;
      // new tokens are left-padded so every row's last fed token sits at S-1
      for (let j = 0; j < k; j++) {
        inputIds[b * S + S - k + j] = BigInt(f![j]);
        positionIds[b * S + S - k + j] = BigInt(pos + j);
      }
      mask.set(batch.mask.subarray(b * P, b * P + P), b * T2);
      mask.fill(1n, b * T2 + P + S - k, b * T2 + T2);
      valid.set(batch.valid.subarray(b * P, b * P + P), b * T2);
      valid.fill(1, b * T2 + P + S - k, b * T2 + T2);
    }
    const inputs: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int64', inputIds, [B, S]),
      attention_mask: new ort.Tensor('int64', mask, [B, T2]),
    };
    if (this.hasPositionIds) inputs.position_ids = new ort.Tensor('int64', positionIds, [B, S]);
    for (let i = 0; i < this.pastNames.length; i++) inputs[this.pastNames[i]] = batch.past[i];
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
    const needTopLogits = wantHeads ? Math.max(0, ...rows.map((r) => (r.wants.heads.some((h) => this.heads.get(h)!.spec.inputs.some((s) => s.source === 'topk_logits')) ? this.folder.routerTopK : 0))) : 0;
    const fetches = [...this.kvFetches];
    if (wantHidden) fetches.push('hidden_states');
    if (this.keepFeed) inputs[(this.logitsMode as { input: string }).input] = this.keepFeed;
    const plan = this.signals ? planHead(rows, order, feeds, { V: this.info.vocabSize, model: this.info.name, eosIds: this.info.eosTokenIds, topLogitsK: needTopLogits, lengths: entries.map((e) => e.len) }, inputs) : undefined;
    if (plan) fetches.push(...plan.fetches);
    else fetches.push('logits');
    const t0 = performance.now();
    const out = await this.session.run(inputs, fetches);
    let modelMs = performance.now() - t0;

    if (own) this.writeNew(batch, out, S, mask, valid);
    else {
      batch.past = this.presentNames.map((n) => out[n]);
      batch.mask = mask;
      batch.valid = valid;
      batch.T = batch.cap = T2;
    }
    for (let b = 0; b < B; b++) {
      const e = entries[order[b]];
      const f = feeds[order[b]];
      if (e.ids && f) for (const t of f) e.ids.push(t);
      e.len += f?.length ?? 0;
    }

    // logits, when fetched, are [B, L, V]: L is 1 when the graph computes the last position only
    const logits = out.logits as ort.Tensor | undefined;
    const L = logits ? logits.dims[1] : 0;
    const V = this.info.vocabSize;
    const rowLogits = logits ? (b: number) => (logits.data as Float32Array).subarray((b * L + L - 1) * V, (b * L + L) * V) : undefined;
    const H = this.info.hiddenSize;
    const hid = wantHidden ? (out.hidden_states.data as Float32Array) : undefined;
    const results: (TokenSignals | undefined)[] = new Array(B);
    const topLogits: number[][] = new Array(B);
    const hiddenRows: (Float32Array | undefined)[] = new Array(B);
    for (let b = 0; b < B; b++) {
      const i = order[b];
      if (feeds[i] === null) continue;
      const r = rows[i];
      const opts = {
        sampling: r.sampling,
        position: entries[i].len,
        model: this.info.name,
        topK: Math.max(r.wants.topK, r.sampling.topLogprobs ?? 0),
        topLogitsK: needTopLogits,
        eosTokenIds: this.info.eosTokenIds,
        history: entries[i].ids,
      };
      const a = plan ? analyzeHead(headRow(out, b, plan, V, rowLogits), V, opts) : analyzeRow(rowLogits!(b), opts);
      topLogits[i] = a.topLogits;
      const h = hid ? hid.subarray((b * S + S - 1) * H, (b * S + S) * H) : undefined;
      hiddenRows[i] = h;
      results[i] = {
        token: a.token,
        entropy: a.entropy,
        maxProb: a.maxProb,
        margin: a.margin,
        tokenProb: a.tokenProb,
        topIds: a.topIds,
        topProbs: a.topProbs,
        // fixed object shape: hidden is always present (undefined unless asked for)
        hidden: r.wants.hidden && h ? h.slice() : undefined,
        heads: {},
      };
    }
    if (wantHeads) modelMs += await runRouterHeads(this.heads, rows, { fed: feeds, results, hidden: hiddenRows, topLogits }, { hiddenSize: this.info.hiddenSize, topK: this.folder.routerTopK });
    return { signals: results, modelMs };
  }

  /**
   * Builds fresh batch tensors for `rows` (left-padded, compact) from wherever each request's KV
   * lives, and moves requests of the old batch that are not stepping now into their own storage.
   */
  private repack(rows: readonly StepRow[], entries: CacheEntry[], S: number): void {
    const c = this.folder.config;
    const kv = c.numKvHeads;
    const hd = c.headDim;
    const nT = this.pastNames.length;
    const B = rows.length;
    const T = Math.max(...entries.map((e) => e.len));
    // room for this step's slots only: a batch that steps again grows then (with headroom), one that is re-packed again never needed more
    const cap = this.newNames ? T + S : T;
    // a pooled buffer holds stale KV in the slots no row copies into: those are masked, so never read
    const past = Array.from({ length: nT }, () => (this.pool ? this.pool.take(B * kv * cap * hd) : new Float32Array(B * kv * cap * hd)));
    const mask = new BigInt64Array(B * cap);
    const valid = new Uint8Array(B * cap);
    const batch: BatchState = { ids: rows.map((r) => r.cacheId), past: [], mask, valid, T, cap, refs: 0 };
    const sources = new Set<BatchState>();
    entries.forEach((e, b) => {
      const n = e.len;
      const start = T - n;
      if (n > 0 && e.loc?.kind === 'batch') {
        const src = e.loc.batch;
        const runs = validRuns(src.valid, e.loc.row, src.T, src.cap);
        for (let i = 0; i < nT; i++) copyKv(src.past[i].data as Float32Array, e.loc.row, src.cap, runs, past[i], b, cap, start, kv, hd);
      } else if (n > 0 && e.loc?.kind === 'own') {
        for (let i = 0; i < nT; i++) copyKv(e.loc.data[i], 0, e.loc.stride, [[0, n]], past[i], b, cap, start, kv, hd);
      }
      this.stats.copiedBytes += n * this.folder.kvBytesPerToken;
      mask.fill(1n, b * cap + start, b * cap + T);
      valid.fill(1, b * cap + start, b * cap + T);
      if (e.loc?.kind === 'batch') {
        e.loc.batch.refs--;
        sources.add(e.loc.batch);
      }
      e.loc = { kind: 'batch', batch, row: b };
      batch.refs++;
    });
    batch.past = past.map((d) => new ort.Tensor('float32', d, [B, kv, cap, hd]));
    // only now, every row copied: a source batch no request lives in any more is gone
    for (const src of sources) if (src.refs === 0) this.retire(src);
    else this.toCompact.add(src);
    if (this.batch && this.batch.refs > 0) this.toCompact.add(this.batch);
    this.batch = batch;
    this.stats.repacks++;
    this.compactStale();
  }

  /** A step's new slots (the rewritten graph's outputs, [B, kv, S, hd]) written into the batch's own buffers at T, and marked. */
  private writeNew(batch: BatchState, out: ort.InferenceSession.ReturnType, S: number, mask: BigInt64Array, valid: Uint8Array): void {
    const { numKvHeads: kv, headDim: hd } = this.folder.config;
    const B = batch.ids.length;
    const { T, cap } = batch;
    const rowLen = S * hd;
    for (let i = 0; i < this.newNames!.length; i++) {
      const src = out[this.newNames![i]].data as Float32Array;
      const dst = batch.past[i].data as Float32Array;
      for (let r = 0; r < B * kv; r++) dst.set(src.subarray(r * rowLen, (r + 1) * rowLen), (r * cap + T) * hd);
    }
    // the step's mask and valid rows are [B, cap + S]: their last S slots are the new ones
    const W = cap + S;
    for (let b = 0; b < B; b++) {
      batch.mask.set(mask.subarray(b * W + cap, b * W + W), b * cap + T);
      batch.valid.set(valid.subarray(b * W + cap, b * W + W), b * cap + T);
    }
    batch.T = T + S;
  }

  /** The batch's own buffers reallocated with `cap` slots, its T used ones copied (a copy every HEADROOM decode steps, not every step). */
  private grow(batch: BatchState, cap: number): void {
    const { numKvHeads: kv, headDim: hd } = this.folder.config;
    const B = batch.ids.length;
    const { T, cap: old } = batch;
    batch.past = batch.past.map((t) => {
      const src = t.data as Float32Array;
      const dst = this.pool ? this.pool.take(B * kv * cap * hd) : new Float32Array(B * kv * cap * hd);
      for (let r = 0; r < B * kv; r++) dst.set(src.subarray(r * old * hd, (r * old + T) * hd), r * cap * hd);
      this.pool?.give(src);
      return new ort.Tensor('float32', dst, [B, kv, cap, hd]);
    });
    const mask = new BigInt64Array(B * cap);
    const valid = new Uint8Array(B * cap);
    for (let b = 0; b < B; b++) {
      mask.set(batch.mask.subarray(b * old, b * old + T), b * cap);
      valid.set(batch.valid.subarray(b * old, b * old + T), b * cap);
    }
    batch.mask = mask;
    batch.valid = valid;
    batch.cap = cap;
    this.stats.copiedBytes += B * T * this.folder.kvBytesPerToken;
  }

  /**
   * Requests not stepping keep their KV where it is, in the tensors of an earlier batch (step outputs
   * are never written again), so leaving a batch costs no copy. An earlier batch stays alive while any
   * of its rows does; once it holds more than STALE_FACTOR times the tokens its remaining rows use,
   * those rows move to compact copies of their own and it can be freed.
   */
  private compactStale(): void {
    const { numKvHeads: kv, headDim: hd } = this.folder.config;
    for (const old of this.toCompact) {
      // row b of a batch was cacheId ids[b]; the entry still lives there unless it moved since
      const list: { e: CacheEntry; row: number }[] = [];
      old.ids.forEach((id, row) => {
        const e = this.caches.get(id);
        if (e?.loc?.kind === 'batch' && e.loc.batch === old && e.loc.row === row) list.push({ e, row });
      });
      const used = list.reduce((a, x) => a + x.e.len, 0);
      if (old.ids.length * old.T <= STALE_FACTOR * used) continue;
      for (const { e, row } of list) {
        const runs = validRuns(old.valid, row, old.T, old.cap);
        const data = old.past.map((t) => {
          const dst = new Float32Array(kv * e.len * hd);
          copyKv(t.data as Float32Array, row, old.cap, runs, dst, 0, e.len, 0, kv, hd);
          return dst;
        });
        this.stats.copiedBytes += e.len * this.folder.kvBytesPerToken;
        this.stats.staleMoves++;
        e.loc = { kind: 'own', data, stride: e.len };
        old.refs--;
      }
      if (old.refs === 0) this.retire(old);
    }
    this.toCompact.clear();
  }

  private dropCache(cacheId: number): void {
    const e = this.caches.get(cacheId);
    this.caches.delete(cacheId);
    if (e?.loc?.kind !== 'batch') return;
    if (--e.loc.batch.refs === 0) this.retire(e.loc.batch);
    else if (e.loc.batch !== this.batch) this.toCompact.add(e.loc.batch);
  }

  /** No request's KV lives in `batch` any more: its own buffers go back to the pool (a step's `present` outputs are ORT's, and just dropped). */
  private retire(batch: BatchState): void {
    if (this.batch === batch) this.batch = null;
    this.toCompact.delete(batch);
    if (this.pool) for (const t of batch.past) this.pool.give(t.data as Float32Array);
    batch.past = [];
  }

  release(cacheId: number): void {
    this.dropCache(cacheId);
  }

  /**
   * Prefix caching: the target gets its own compact copy of the source's first `tokens` KV slots
   * (wherever they live: a batch row or own storage), so it leaves the source untouched and joins
   * the next batch like any request that left one. Costs a copy of `tokens × kvBytesPerToken`.
   */
  fork(source: number, target: number, tokens: number): boolean {
    const src = this.caches.get(source);
    if (!src || src.loc === null || tokens < 1 || tokens > src.len) return false;
    const { numKvHeads: kv, headDim: hd } = this.folder.config;
    let data: Float32Array[];
    if (src.loc.kind === 'batch') {
      const { batch, row } = src.loc;
      const runs = firstSlots(validRuns(batch.valid, row, batch.T, batch.cap), tokens);
      data = batch.past.map((t) => {
        const dst = new Float32Array(kv * tokens * hd);
        copyKv(t.data as Float32Array, row, batch.cap, runs, dst, 0, tokens, 0, kv, hd);
        return dst;
      });
    } else {
      const own = src.loc;
      data = own.data.map((d) => {
        const dst = new Float32Array(kv * tokens * hd);
        copyKv(d, 0, own.stride, [[0, tokens]], dst, 0, tokens, 0, kv, hd);
        return dst;
      });
    }
    this.dropCache(target);
    this.caches.set(target, { len: tokens, loc: { kind: 'own', data, stride: tokens } });
    this.stats.forks++;
    this.stats.copiedBytes += tokens * this.folder.kvBytesPerToken;
    return true;
  }

  /** KV buffers a re-pack or grow took from the pool instead of allocating. */
  get buffersReused(): number {
    return this.pool?.reused ?? 0;
  }

  /** KV tokens held over all caches (for memory accounting checks). */
  get cachedTokens(): number {
    let n = 0;
    for (const e of this.caches.values()) n += e.len;
    return n;
  }

  async close(): Promise<void> {
    this.caches.clear();
    this.batch = null;
    this.toCompact.clear();
    await this.session.release();
    for (const h of this.heads.values()) await h.session.release();
  }
}
