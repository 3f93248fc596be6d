// The KV caches of an ONNX runner's requests: the persistent batch tensors, re-packing, growth in place, compaction of stale batches and prefix forks.
import * as ort from 'onnxruntime-node';
import type { StepRow } from './modelRunner.ts';
import { copyKv, firstSlots, validRuns } from './kvSlots.ts';
import { KvBufferPool } from './kvBufferPool.ts';

/** Where a request's KV lives: a row of the current batch tensors, or its own copy ([kv, stride, hd], first `len` slots valid). */
export type KvLocation = { kind: 'batch'; batch: BatchState; row: number } | { kind: 'own'; data: Float32Array[]; stride: number } | null;

export interface CacheEntry {
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
 * holes (pad slots of a longer peer's extend). With a rewritten graph (graph/prepareGraph.ts) the buffers
 * are the runner's own, `cap` slots long: a step writes its new slots in place at T and the free
 * slots past T are fed masked. Otherwise they are the last step's `present`, and `cap` is T.
 */
export interface BatchState {
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
export const HEADROOM = 16;

/** The counters a store adds to (OnnxRunner.stats). */
export interface KvStats {
  repacks: number;
  reused: number;
  copiedBytes: number;
  staleMoves: number;
  forks: number;
}

/** KV geometry: heads and head size, bytes per cached token, KV tensors (2 per layer). */
export interface KvShape {
  kv: number;
  hd: number;
  bytesPerToken: number;
  nT: number;
}

/** Where each request's KV lives, and the current batch tensors a step feeds as `past`. */
export class BatchKvStore {
  readonly caches = new Map<number, CacheEntry>();
  /** The batch of the last pass (its tensors are fed as `past` when the same rows step again). */
  batch: BatchState | null = null;
  /**
   * Earlier batches a request left (or that stopped being current) since the last compaction: the
   * only ones whose share of used slots can have fallen, as a batch no longer current never changes
   * otherwise. Why not every earlier batch: the prefix cache keeps hundreds alive at steady state
   * (R2R at N = 16: ~600 on large), and walking them all at each re-pack took 5-8 % of an engine thread.
   */
  private readonly toCompact = new Set<BatchState>();
  /** Recycles the batches' own KV buffers (own buffers only: otherwise they are ORT's outputs). */
  private readonly pool: KvBufferPool | undefined;
  private readonly kv: number;
  private readonly hd: number;
  private readonly bytesPerToken: number;
  private readonly nT: number;

  /** `own`: the batches' buffers are the store's (a step's new slots are written in); else they are a step's `present` outputs. */
  constructor(
    shape: KvShape,
    readonly own: boolean,
    private readonly stats: KvStats,
  ) {
    ({ kv: this.kv, hd: this.hd, bytesPerToken: this.bytesPerToken, nT: this.nT } = shape);
    // two batches' worth (a re-pack's old and new) and one more for the stale ones routing leaves behind
    this.pool = own ? new KvBufferPool(3 * shape.nT) : undefined;
  }

  /** A fresh cache for `cacheId` (a prefill), counting its token ids when `withIds` (penalties read them). */
  begin(cacheId: number, withIds: boolean): void {
    this.drop(cacheId);
    this.caches.set(cacheId, withIds ? { len: 0, loc: null, ids: [] } : { len: 0, loc: null });
  }

  /** A step's whole `present` outputs become the batch's tensors (the graph as exported). */
  takePresent(batch: BatchState, present: ort.Tensor[], mask: BigInt64Array, valid: Uint8Array, T: number): void {
    batch.past = present;
    batch.mask = mask;
    batch.valid = valid;
    batch.T = batch.cap = T;
  }

  /**
   * The batch a pass of `rows` runs over, feeding at most S tokens a row: the current one reused as
   * is when the very same requests stepped last, else re-packed. Returns order[b], the index of the
   * step row living in batch row b.
   */
  place(rows: readonly StepRow[], entries: CacheEntry[], S: number): number[] {
    const B = rows.length;
    let reuse = this.batch !== null && this.batch.ids.length === B && entries.every((e) => e.loc?.kind === 'batch' && e.loc.batch === this.batch);
    if (reuse) {
      // compaction: holes from mixed-length steps must not grow the attention span without bound
      const maxLen = Math.max(...entries.map((e) => e.len));
      if (this.batch!.T > 2 * maxLen + 64) reuse = false;
    }
    if (reuse) this.stats.reused++;
    else this.repack(rows, entries, S);
    // order[b] = index of the step row living in batch row b
    const order = new Array<number>(B);
    entries.forEach((e, i) => {
      order[(e.loc as { row: number }).row] = i;
    });
    return order;
  }

  /**
   * Builds fresh batch tensors for `rows` (left-padded, compact) from wherever each request's KV
   * lives, and moves requests of the old batch that are not stepping now into their own storage.
   */
  private repack(rows: readonly StepRow[], entries: CacheEntry[], S: number): void {
    const { kv, hd, nT } = this;
    const B = rows.length;
    const T = Math.max(...entries.map((e) => e.len));
    // room for this step's slots only: a batch that steps again grows then (with headroom), one that is re-packed again never needed more
    const cap = this.own ? T + S : T;
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
      this.stats.copiedBytes += n * this.bytesPerToken;
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
    for (const src of sources)
      if (src.refs === 0) this.retire(src);
      else this.toCompact.add(src);
    if (this.batch && this.batch.refs > 0) this.toCompact.add(this.batch);
    this.batch = batch;
    this.stats.repacks++;
    this.compactStale();
  }

  /** A step's new slots (the rewritten graph's outputs' data, [B, kv, S, hd] each) written into the batch's own buffers at T, and marked. */
  writeNew(batch: BatchState, news: readonly Float32Array[], S: number, mask: BigInt64Array, valid: Uint8Array): void {
    const { kv, hd } = this;
    const B = batch.ids.length;
    const { T, cap } = batch;
    const rowLen = S * hd;
    for (let i = 0; i < news.length; i++) {
      const src = news[i];
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
  grow(batch: BatchState, cap: number): void {
    const { kv, hd } = this;
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
    this.stats.copiedBytes += B * T * this.bytesPerToken;
  }

  /**
   * Requests not stepping keep their KV where it is, in the tensors of an earlier batch (step outputs
   * are never written again), so leaving a batch costs no copy. An earlier batch stays alive while any
   * of its rows does; once it holds more than STALE_FACTOR times the tokens its remaining rows use,
   * those rows move to compact copies of their own and it can be freed.
   */
  private compactStale(): void {
    const { kv, hd } = this;
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
        this.stats.copiedBytes += e.len * this.bytesPerToken;
        this.stats.staleMoves++;
        e.loc = { kind: 'own', data, stride: e.len };
        old.refs--;
      }
      if (old.refs === 0) this.retire(old);
    }
    this.toCompact.clear();
  }

  drop(cacheId: number): void {
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

  /**
   * Prefix caching: the target gets its own compact copy of the source's first `tokens` KV slots
   * (wherever they live: a batch row or own storage), so it leaves the source untouched and joins
   * the next batch like any request that left one. Costs a copy of `tokens × kvBytesPerToken`.
   */
  fork(source: number, target: number, tokens: number): boolean {
    const src = this.caches.get(source);
    if (!src || src.loc === null || tokens < 1 || tokens > src.len) return false;
    const { kv, hd } = this;
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
    this.drop(target);
    this.caches.set(target, { len: tokens, loc: { kind: 'own', data, stride: tokens } });
    this.stats.forks++;
    this.stats.copiedBytes += tokens * this.bytesPerToken;
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

  clear(): void {
    this.caches.clear();
    this.batch = null;
    this.toCompact.clear();
  }
}
