// Fake and simulated runners: deterministic tokens from the exact context fed, latency from a model of batch cost.
import type { TokenSignals } from '../../shared/algorithm.ts';
import type { Clock } from '../clock/clock.ts';
import { Later } from '../clock/later.ts';
import { hashString, mix } from '../util/hash.ts';
import type { ModelInfo, ModelRunner, StepOutput, StepRow } from './modelRunner.ts';
import { allows, maskProblem } from './maskedRow.ts';

/** The first id from `t` on (cyclically over V) that `ok` takes; `t` itself when none does. */
function next(t: number, V: number, ok: (t: number) => boolean): number {
  for (let i = 0; i < V; i++) {
    const c = (t + i) % V;
    if (ok(c)) return c;
  }
  return t % V;
}

/** What the next token depends on: a rolling hash of every token this model was fed for the request. */
export interface SimContext {
  model: string;
  requestId: string;
  /** Rolling hash of the whole fed context; differs if any fed token differs. */
  contextHash: number;
  position: number;
  seed: number;
}

export type SimOutput = Pick<TokenSignals, 'token' | 'entropy' | 'maxProb'> & Partial<TokenSignals>;

/** Step cost of a batch: rows in it and tokens fed (prefill/extend rows feed more than one). */
export type LatencyModel = (batchSize: number, tokensFed: number) => number;

export interface SimRunnerOptions {
  name: string;
  vocabSize?: number;
  /** Token ids that end a request; none: never. */
  eosTokenIds?: readonly number[];
  maxContext?: number;
  kvBytesPerToken?: number;
  /** Next token and signals from the context; default: hash-derived tokens and uniform signals. */
  next?: (ctx: SimContext) => SimOutput;
  /** Clock ms a step takes; default 0 (a zero-latency runner). */
  latency?: LatencyModel;
}

/** A simulated step's result: readable at once (tests, the oracle), and a thenable settled after its duration on the runner's clock. */
export class SimStep extends Later<StepOutput> implements StepOutput {
  constructor(
    readonly rows: TokenSignals[],
    readonly durationMs: number,
    clock: Clock | null,
  ) {
    super();
    this.settleAfter(clock, durationMs, true, { rows, durationMs });
  }
}

const NONE: readonly number[] = Object.freeze([]);
const NO_HEADS: Readonly<Record<string, number>> = Object.freeze({});

interface Cache {
  length: number;
  hash: number;
  /** trail[i]: the hash after i tokens, for every i up to length, so a fork can start at any of them. */
  trail: number[];
}

/**
 * One class serves as the scripted fake (unit tests) and the simulated model (paper-scale runs in
 * virtual time). It keeps, per cache, only the length and a rolling hash of what it was fed, and
 * insists that every row starts exactly where its cache ends, so a scheduler that feeds the wrong
 * tokens, skips one or feeds one twice produces different output than the sequential oracle.
 */
export class SimRunner implements ModelRunner {
  readonly info: ModelInfo;
  private readonly caches = new Map<number, Cache>();
  /** Next token and signals from the context; null: hash-derived tokens and uniform signals, built in place. */
  private readonly next: ((ctx: SimContext) => SimOutput) | null;
  private readonly latency: LatencyModel;
  private readonly modelSalt: number;
  /** Where a step's result waits out its simulated duration; none: it is there at once. */
  private clock: Clock | null = null;
  /** Steps taken and rows by phase, for tests. */
  readonly counts = { steps: 0, rows: 0, prefillRows: 0, extendRows: 0, decodeRows: 0, tokensFed: 0, releases: 0, forks: 0, forkedTokens: 0 };

  constructor(opts: SimRunnerOptions) {
    this.info = {
      name: opts.name,
      vocabSize: opts.vocabSize ?? 1000,
      eosTokenIds: opts.eosTokenIds ?? [],
      maxContext: opts.maxContext ?? 1 << 20,
      hiddenSize: 0,
      kvBytesPerToken: opts.kvBytesPerToken ?? 1024,
    };
    this.modelSalt = hashString(opts.name);
    this.latency = opts.latency ?? (() => 0);
    this.next = opts.next ?? null;
  }

  get liveCaches(): number {
    return this.caches.size;
  }

  useClock(clock: Clock): void {
    this.clock = clock;
  }

  step(rows: readonly StepRow[]): SimStep {
    const c = this.counts;
    c.steps++;
    const out: TokenSignals[] = new Array(rows.length);
    let tokensFed = 0;
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i];
      let cache = this.caches.get(row.cacheId);
      if (row.position === 0) {
        cache = { length: 0, hash: 0x12345, trail: [0x12345] };
        this.caches.set(row.cacheId, cache);
        c.prefillRows++;
      } else if (!cache) {
        throw new Error(`${this.info.name}: cache ${row.cacheId} of ${row.requestId} is unknown (released or never prefilled)`);
      } else if (row.tokens.length > 1) c.extendRows++;
      else c.decodeRows++;
      if (cache.length !== row.position)
        throw new Error(`${this.info.name}: row for ${row.requestId} starts at ${row.position} but its cache holds ${cache.length} tokens`);
      if (row.tokens.length === 0) throw new Error(`${this.info.name}: row for ${row.requestId} feeds no token`);
      const { tokens } = row;
      const { trail } = cache;
      let hash = cache.hash;
      for (let k = 0; k < tokens.length; k++) trail.push((hash = mix(hash, tokens[k] + 1)));
      cache.hash = hash;
      cache.length += tokens.length;
      tokensFed += tokens.length;
      out[i] = row.mask ? this.masked(this.sample(cache, row), row, row.mask) : this.sample(cache, row);
    }
    c.rows += rows.length;
    c.tokensFed += tokensFed;
    return new SimStep(out, this.latency(rows.length, tokensFed), this.clock);
  }

  private sample(cache: Cache, row: StepRow): TokenSignals {
    if (!this.next) {
      // the default model, without the context and output objects a scripted `next` needs (one object per row, not three)
      const h = mix(cache.hash, this.modelSalt);
      const entropy = (h >>> 8) / 16777216;
      const maxProb = 1 - entropy / 2;
      return {
        token: this.allowed(h % this.info.vocabSize, row),
        entropy,
        maxProb,
        margin: maxProb / 2,
        tokenProb: maxProb,
        topIds: NONE,
        topProbs: NONE,
        heads: NO_HEADS,
        hidden: undefined,
      };
    }
    const o = this.next({ model: this.info.name, requestId: row.requestId, contextHash: cache.hash, position: cache.length, seed: row.sampling.seed });
    return {
      token: this.allowed(o.token, row),
      entropy: o.entropy,
      maxProb: o.maxProb,
      margin: o.margin ?? o.maxProb / 2,
      tokenProb: o.tokenProb ?? o.maxProb,
      topIds: o.topIds ?? NONE,
      topProbs: o.topProbs ?? NONE,
      heads: o.heads ?? NO_HEADS,
      hidden: o.hidden,
    };
  }

  /**
   * A grammar mask: a token it does not allow becomes the next id that it does (cyclically), and
   * min_tokens' ban holds among the allowed unless it would leave none (the grammar wins, as in
   * maskedRow.ts). A simulated model has no distribution to renormalise, so its signals stay, but
   * a mask allowing one token makes the row certain (entropy 0, maxProb 1), as the masked signals
   * of a real runner do; top ids the mask does not allow are left out.
   */
  private masked(o: TokenSignals, row: StepRow, mask: Int32Array): TokenSignals {
    const V = this.info.vocabSize;
    const problem = maskProblem(mask, V);
    if (problem) throw new Error(`${this.info.name}: request ${row.requestId}: ${problem}`);
    const ok = (t: number) => allows(mask, t);
    let token = next(o.token, V, ok);
    if (row.sampling.suppressEos) {
      const stop = row.sampling.stopTokenIds ?? [];
      const kept = (t: number) => ok(t) && !this.info.eosTokenIds.includes(t) && !stop.includes(t);
      if (!kept(token)) {
        const t = next(token, V, kept);
        if (kept(t)) token = t;
      }
    }
    const keep = o.topIds.map((t) => ok(t));
    const topIds = o.topIds.filter((_, j) => keep[j]);
    const topProbs = o.topProbs.filter((_, j) => keep[j]);
    if (next(token + 1, V, ok) !== token) return { ...o, token, topIds, topProbs };
    return { ...o, token, entropy: 0, maxProb: 1, margin: 1, tokenProb: 1, topIds: topIds.length ? [token] : topIds, topProbs: topIds.length ? [1] : topProbs };
  }

  /** min_tokens not reached: an EOS (or stop id) becomes the next id that is neither (a simulated model has no distribution to redraw from). */
  private allowed(token: number, row: StepRow): number {
    if (!row.sampling.suppressEos) return token;
    const stop = row.sampling.stopTokenIds ?? [];
    const banned = (t: number) => this.info.eosTokenIds.includes(t) || stop.includes(t);
    const V = this.info.vocabSize;
    for (let i = 0; i < V && banned(token); i++) token = (token + 1) % V;
    return token;
  }

  release(cacheId: number): void {
    if (this.caches.delete(cacheId)) this.counts.releases++;
  }

  fork(source: number, target: number, tokens: number): boolean {
    const src = this.caches.get(source);
    if (!src || tokens < 1 || tokens > src.length) return false;
    this.caches.set(target, { length: tokens, hash: src.trail[tokens], trail: src.trail.slice(0, tokens + 1) });
    this.counts.forks++;
    this.counts.forkedTokens += tokens;
    return true;
  }
}
