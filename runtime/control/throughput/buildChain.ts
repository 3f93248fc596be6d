// Enumerates the reachable delayed-batching chain and its sparse (CSR) transition matrix.
//
// State, per model i: ready-queue length q_i, running batch size b_i (0 = idle) and remaining
// execution time r_i in steps of Δ; Σ_i (q_i + b_i) = N always (closed system).
// We store the chain embedded at event epochs (a batch finishing, or time 0): between two events
// every r_i just counts down, deterministically, so the slot-by-slot DTMC would spend most of its
// states and solver sweeps on countdown states with one successor each. Each embedded state
// carries its holding time τ = min running r_i (in slots), and the time-stationary law of the
// slot DTMC is π_emb(s)·τ(s) normalised, restricted to post-event states — the same answer,
// far fewer states.
//
// An event: every running r_i drops by τ; models reaching 0 finish together, their requests route
// independently by P; arrivals join queues; then every idle model whose queue ≥ T_i launches a
// FIFO batch of min(q_i, maxBatch_i) requests taking steps_i(b) slots. Requests that stay on i
// therefore can join i's very next batch, as in the runtime. A batch's duration comes from the
// contended table when, after the launches, another model has a batch running (ts rows K..2K−1).
import { arrivalDistribution, type ArrivalDistribution } from './arrivalDistribution.ts';
import type { TimeStep } from './chooseTimeStep.ts';
import type { NormalisedModel } from './normaliseInput.ts';
import { StateTable } from './StateTable.ts';
import { ThroughputError } from './ThroughputError.ts';

export interface Chain {
  K: number;
  size: number;
  /** Per state, per model: q, b, r at offset (s·K + i)·3. */
  fields: Int32Array;
  /** Slots until the sojourn ends. */
  tau: Int32Array;
  /** Expected committed tokens at the event that ends the sojourn. */
  reward: Float64Array;
  /** CSR by source state. */
  rowPtr: Int32Array;
  col: Int32Array;
  val: Float64Array;
  /** Probability mass dropped by pruning, worst single event (0 when pruneBelow = 0). */
  prunedMass: number;
}

export interface BuildOptions {
  maxStates?: number;
  initialModel?: number;
  /**
   * Drop arrival outcomes less likely than this and renormalise the rest (default 0 = exact).
   * Trades a bounded perturbation for fewer rare extreme states on large three-model chains.
   */
  pruneBelow?: number;
}

const DEFAULT_MAX_STATES = 4_000_000;

function growI32(a: Int32Array, n: number): Int32Array {
  if (n <= a.length) return a;
  const b = new Int32Array(Math.max(n, a.length * 2));
  b.set(a);
  return b;
}

function growF64(a: Float64Array, n: number): Float64Array {
  if (n <= a.length) return a;
  const b = new Float64Array(Math.max(n, a.length * 2));
  b.set(a);
  return b;
}

function pruned(d: ArrivalDistribution, K: number, below: number): { dist: ArrivalDistribution; lost: number } {
  if (below <= 0) return { dist: d, lost: 0 };
  const keep: number[] = [];
  let kept = 0;
  for (let o = 0; o < d.count; o++) {
    if (d.probs[o] >= below) {
      keep.push(o);
      kept += d.probs[o];
    }
  }
  if (keep.length === d.count || keep.length === 0) return { dist: d, lost: 0 };
  const arrivals = new Int32Array(keep.length * K);
  const probs = new Float64Array(keep.length);
  keep.forEach((o, n) => {
    for (let i = 0; i < K; i++) arrivals[n * K + i] = d.arrivals[o * K + i];
    probs[n] = d.probs[o] / kept;
  });
  return { dist: { arrivals, probs, count: keep.length }, lost: 1 - kept };
}

/** Rows of ts for a model running contended (offset from its alone row; 0 when ts has only K rows). */
function contendedRowOffset(K: number, ts: TimeStep): number {
  const rows = ts.lo.length;
  if (rows !== K && rows !== 2 * K) {
    throw new ThroughputError('INVALID_INPUT', `time step has ${rows} latency rows; expected ${K} or ${2 * K}`);
  }
  return rows === 2 * K ? K : 0;
}

/** Mixed-radix multipliers that pack (q, b, r) of every model into one exact integer key. */
interface StateKeyRadix {
  q: number[];
  b: number[];
  r: number[];
}

function stateKeyRadix(m: NormalisedModel, ts: TimeStep, busyRow: number): StateKeyRadix {
  const { K, N, maxBatch } = m;
  const { lo, hiProb } = ts;
  // The longest remaining time a launch can set, alone or contended (+1 when 'split' may round up).
  const rowMax = lo.map((row, i) => Math.max(...row.slice(1).map((d, k) => d + (hiProb[i][k + 1] > 0 ? 1 : 0))));
  const rMax = Array.from({ length: K }, (_, i) => Math.max(rowMax[i], rowMax[i + busyRow]));
  const radix: StateKeyRadix = { q: [], b: [], r: [] };
  let mult = 1;
  for (let i = 0; i < K; i++) {
    radix.r.push(mult);
    mult *= rMax[i] + 1;
    radix.b.push(mult);
    mult *= maxBatch[i] + 1;
    radix.q.push(mult);
    mult *= N + 1;
  }
  if (mult > Number.MAX_SAFE_INTEGER) {
    throw new ThroughputError('STATE_SPACE_TOO_LARGE', 'state key does not fit 53 bits; coarsen dtMs or lower N', {
      keySpace: mult,
    });
  }
  return radix;
}

/**
 * The chain as it is discovered: states numbered in the order first reached, with their fields, and
 * the CSR rows of their edges. (q, b, r) is the state being built; emit() adds an edge from the open
 * row to it, numbering it if new.
 */
class ChainStore {
  readonly q: Int32Array;
  readonly b: Int32Array;
  readonly r: Int32Array;
  private readonly table = new StateTable(1 << 14);
  private fields: Int32Array = new Int32Array(1 << 14);
  private tau: Int32Array = new Int32Array(1 << 12);
  private reward: Float64Array = new Float64Array(1 << 12);
  private rowPtr: Int32Array = new Int32Array(1 << 12);
  private col: Int32Array = new Int32Array(1 << 14);
  private val: Float64Array = new Float64Array(1 << 14);
  private nnz = 0;
  private readonly mulQ: number[];
  private readonly mulB: number[];
  private readonly mulR: number[];

  constructor(
    private readonly K: number,
    radix: StateKeyRadix,
    private readonly maxStates: number,
  ) {
    this.q = new Int32Array(K);
    this.b = new Int32Array(K);
    this.r = new Int32Array(K);
    this.mulQ = radix.q;
    this.mulB = radix.b;
    this.mulR = radix.r;
  }

  get size(): number {
    return this.table.size;
  }

  /** Sets (q, b, r) to state s. */
  load(s: number): void {
    const { K, fields, q, b, r } = this;
    for (let i = 0; i < K; i++) {
      const o = (s * K + i) * 3;
      q[i] = fields[o];
      b[i] = fields[o + 1];
      r[i] = fields[o + 2];
    }
  }

  /** Opens state s's row of edges, with its holding time and the tokens committed when it ends. */
  openRow(s: number, tau: number, reward: number): void {
    if (s + 2 > this.tau.length) {
      this.tau = growI32(this.tau, s + 2);
      this.reward = growF64(this.reward, s + 2);
      this.rowPtr = growI32(this.rowPtr, s + 2);
    }
    this.tau[s] = tau;
    this.reward[s] = reward;
    this.rowPtr[s] = this.nnz;
  }

  emit(prob: number): void {
    const { K, q, b, r, mulQ, mulB, mulR } = this;
    let key = 0;
    for (let i = 0; i < K; i++) key += q[i] * mulQ[i] + b[i] * mulB[i] + r[i] * mulR[i];
    if (this.nnz + 1 > this.col.length) {
      this.col = growI32(this.col, this.nnz + 1);
      this.val = growF64(this.val, this.nnz + 1);
    }
    this.col[this.nnz] = this.intern(key);
    this.val[this.nnz++] = prob;
  }

  /** Forgets the edges emitted so far (the states they reached stay). */
  discardEdges(): void {
    this.nnz = 0;
  }

  private intern(key: number): number {
    const before = this.table.size;
    const index = this.table.getOrInsert(key);
    if (this.table.size > before) {
      if (index >= this.maxStates) {
        throw new ThroughputError('STATE_SPACE_TOO_LARGE', `chain exceeds maxStates = ${this.maxStates}`, { maxStates: this.maxStates });
      }
      const { K, q, b, r } = this;
      this.fields = growI32(this.fields, (index + 1) * K * 3);
      for (let i = 0; i < K; i++) {
        const o = (index * K + i) * 3;
        this.fields[o] = q[i];
        this.fields[o + 1] = b[i];
        this.fields[o + 2] = r[i];
      }
    }
    return index;
  }

  /** The finished chain, trimmed to size. */
  toChain(prunedMass: number): Chain {
    const { K, nnz } = this;
    const size = this.table.size;
    this.rowPtr = growI32(this.rowPtr, size + 1);
    this.rowPtr[size] = nnz;
    return {
      K,
      size,
      fields: this.fields.slice(0, size * K * 3),
      tau: this.tau.slice(0, size),
      reward: this.reward.slice(0, size),
      rowPtr: this.rowPtr.slice(0, size + 1),
      col: this.col.slice(0, nnz),
      val: this.val.slice(0, nnz),
      prunedMass,
    };
  }
}

/**
 * The launch rule on the store's (q, b, r), in place: every idle model whose queue reached its
 * threshold launches; then one edge per rounding outcome of the launched batches' durations.
 */
function launchRule(m: NormalisedModel, ts: TimeStep, busyRow: number, store: ChainStore): (prob: number) => void {
  const { K, maxBatch, thresholds } = m;
  const { lo, hiProb } = ts;
  const { q, b, r } = store;
  const launching = new Int32Array(K);
  const launchRow = new Int32Array(K);
  return (prob) => {
    let nl = 0;
    let nLaunched = 0;
    for (let i = 0; i < K; i++) {
      if (b[i] === 0 && q[i] >= thresholds[i]) {
        const n = Math.min(q[i], maxBatch[i]);
        q[i] -= n;
        b[i] = n;
        r[i] = -1; // duration set below, once every launch of this instant is known
        launching[nLaunched++] = i;
      }
    }
    if (nLaunched === 0) {
      store.emit(prob);
      return;
    }
    let running = 0;
    for (let i = 0; i < K; i++) if (b[i] > 0) running++;
    for (let l = 0; l < nLaunched; l++) {
      const i = launching[l];
      const row = running > 1 ? i + busyRow : i;
      r[i] = lo[row][b[i]];
      if (hiProb[row][b[i]] > 0) {
        launching[nl] = i;
        launchRow[nl++] = row;
      }
    }
    if (nl === 0) {
      store.emit(prob);
      return;
    }
    // 'split' rounding: each launch independently takes one extra step with probability hiProb.
    for (let mask = 0; mask < 1 << nl; mask++) {
      let p = prob;
      for (let l = 0; l < nl; l++) {
        const i = launching[l];
        const row = launchRow[l];
        const ph = hiProb[row][b[i]];
        if (mask & (1 << l)) {
          p *= ph;
          r[i] = lo[row][b[i]] + 1;
        } else {
          p *= 1 - ph;
          r[i] = lo[row][b[i]];
        }
      }
      store.emit(p);
    }
  };
}

/** Where the requests of finishing batches go, by the finishing batch sizes; memoised, since few size vectors recur often. */
class ArrivalCache {
  private readonly memo = new Map<number, ArrivalDistribution>();
  /** Probability mass dropped by pruning, worst single event. */
  prunedMass = 0;

  constructor(
    private readonly m: NormalisedModel,
    private readonly pruneBelow: number,
  ) {}

  after(finishing: readonly number[]): ArrivalDistribution {
    const { K, N, P } = this.m;
    let memoKey = 0;
    for (let i = 0; i < K; i++) memoKey = memoKey * (N + 1) + finishing[i];
    let dist = this.memo.get(memoKey);
    if (!dist) {
      const pr = pruned(arrivalDistribution(P, finishing), K, this.pruneBelow);
      this.prunedMass = Math.max(this.prunedMass, pr.lost);
      dist = pr.dist;
      this.memo.set(memoKey, dist);
    }
    return dist;
  }
}

/**
 * The event that ends state s's sojourn: its row of edges. Every running r_i drops by τ, the batches
 * reaching 0 finish and commit, their requests arrive by P, and the launch rule runs per outcome.
 */
function eventRule(m: NormalisedModel, store: ChainStore, arrivals: ArrivalCache, launch: (prob: number) => void): (s: number) => void {
  const { K, commitPerStep } = m;
  const { q, b, r } = store;
  const finishing = new Array<number>(K).fill(0);
  const q0 = new Int32Array(K);
  const b0 = new Int32Array(K);
  const r0 = new Int32Array(K);
  return (s) => {
    store.load(s);
    let t = Infinity;
    for (let i = 0; i < K; i++) if (b[i] > 0 && r[i] < t) t = r[i];
    if (t === Infinity) {
      // Only reachable if Σ(T_i − 1) ≥ N, which normaliseInput rejects.
      throw new ThroughputError('INFEASIBLE_THRESHOLDS', 'reached a state with every model idle (deadlock)');
    }
    let rew = 0;
    for (let i = 0; i < K; i++) {
      finishing[i] = b[i] > 0 && r[i] === t ? b[i] : 0;
      rew += finishing[i] * commitPerStep[i];
      if (b[i] > 0) r[i] -= t;
    }
    store.openRow(s, t, rew);
    // Batches ending in the same slot are routed together before any launch: on a lattice such
    // ties are real, and whatever arrives at an instant is queued before that instant's launches.
    // (Routing them one by one in random order was tried for coarse off-lattice Δ: stable in Δ but
    // ≈2% low on lattice cases, so it was dropped.)
    const dist = arrivals.after(finishing);
    q0.set(q);
    b0.set(b);
    r0.set(r);
    for (let o = 0; o < dist.count; o++) {
      for (let i = 0; i < K; i++) {
        q[i] = q0[i] + dist.arrivals[o * K + i];
        if (finishing[i] > 0) {
          b[i] = 0;
          r[i] = 0;
        } else {
          b[i] = b0[i];
          r[i] = r0[i];
        }
      }
      // Distinct arrival vectors (and rounding outcomes) give distinct successors: no merging needed.
      launch(dist.probs[o]);
    }
  };
}

export function buildChain(m: NormalisedModel, ts: TimeStep, opts: BuildOptions = {}): Chain {
  const initialModel = opts.initialModel ?? 0;
  if (!Number.isInteger(initialModel) || initialModel < 0 || initialModel >= m.K) {
    throw new ThroughputError('INVALID_INPUT', `initialModel must be a model index in [0, ${m.K})`);
  }
  const busyRow = contendedRowOffset(m.K, ts);
  const store = new ChainStore(m.K, stateKeyRadix(m, ts, busyRow), opts.maxStates ?? DEFAULT_MAX_STATES);
  const launch = launchRule(m, ts, busyRow, store);
  store.q[initialModel] = m.N;
  // The initial state goes through the same launch rule; its edges are only a vehicle for
  // interning (under 'split' it may make two roots) and are discarded.
  launch(1);
  store.discardEdges();
  const arrivals = new ArrivalCache(m, opts.pruneBelow ?? 0);
  const expand = eventRule(m, store, arrivals, launch);
  // States are numbered as first reached, so this visits each reachable state once, growing as it goes.
  for (let s = 0; s < store.size; s++) expand(s);
  return store.toChain(arrivals.prunedMass);
}
