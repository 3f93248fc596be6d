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

export function buildChain(m: NormalisedModel, ts: TimeStep, opts: BuildOptions = {}): Chain {
  const { K, N, P, maxBatch, thresholds, commitPerStep } = m;
  const { lo, hiProb } = ts;
  const maxStates = opts.maxStates ?? DEFAULT_MAX_STATES;
  const initialModel = opts.initialModel ?? 0;
  const pruneBelow = opts.pruneBelow ?? 0;
  if (!Number.isInteger(initialModel) || initialModel < 0 || initialModel >= K) {
    throw new ThroughputError('INVALID_INPUT', `initialModel must be a model index in [0, ${K})`);
  }

  // Rows of ts for a model running alone and contended (the same row when ts has only K rows).
  const busyRow = lo.length === 2 * K ? K : 0;
  if (lo.length !== K && lo.length !== 2 * K) {
    throw new ThroughputError('INVALID_INPUT', `time step has ${lo.length} latency rows; expected ${K} or ${2 * K}`);
  }
  // Mixed-radix packing of (q, b, r) per model into one exact integer key.
  const rowMax = lo.map((row, i) => Math.max(...row.slice(1).map((d, k) => d + (hiProb[i][k + 1] > 0 ? 1 : 0))));
  const rMax = Array.from({ length: K }, (_, i) => Math.max(rowMax[i], rowMax[i + busyRow]));
  const mulQ: number[] = [];
  const mulB: number[] = [];
  const mulR: number[] = [];
  let mult = 1;
  for (let i = 0; i < K; i++) {
    mulR.push(mult);
    mult *= rMax[i] + 1;
    mulB.push(mult);
    mult *= maxBatch[i] + 1;
    mulQ.push(mult);
    mult *= N + 1;
  }
  if (mult > Number.MAX_SAFE_INTEGER) {
    throw new ThroughputError('STATE_SPACE_TOO_LARGE', 'state key does not fit 53 bits; coarsen dtMs or lower N', {
      keySpace: mult,
    });
  }

  const table = new StateTable(1 << 14);
  let fields: Int32Array = new Int32Array(1 << 14);
  let tau: Int32Array = new Int32Array(1 << 12);
  let reward: Float64Array = new Float64Array(1 << 12);
  let rowPtr: Int32Array = new Int32Array(1 << 12);
  let col: Int32Array = new Int32Array(1 << 14);
  let val: Float64Array = new Float64Array(1 << 14);
  let nnz = 0;
  let prunedMass = 0;

  const q = new Int32Array(K);
  const b = new Int32Array(K);
  const r = new Int32Array(K);

  const intern = (key: number): number => {
    const before = table.size;
    const index = table.getOrInsert(key);
    if (table.size > before) {
      if (index >= maxStates) {
        throw new ThroughputError('STATE_SPACE_TOO_LARGE', `chain exceeds maxStates = ${maxStates}`, { maxStates });
      }
      fields = growI32(fields, (index + 1) * K * 3);
      for (let i = 0; i < K; i++) {
        const o = (index * K + i) * 3;
        fields[o] = q[i];
        fields[o + 1] = b[i];
        fields[o + 2] = r[i];
      }
    }
    return index;
  };

  const emit = (prob: number): void => {
    let key = 0;
    for (let i = 0; i < K; i++) key += q[i] * mulQ[i] + b[i] * mulB[i] + r[i] * mulR[i];
    if (nnz + 1 > col.length) {
      col = growI32(col, nnz + 1);
      val = growF64(val, nnz + 1);
    }
    col[nnz] = intern(key);
    val[nnz++] = prob;
  };

  // Launch rule on (q, b, r) in place, then one edge per rounding outcome.
  const launching = new Int32Array(K);
  const launchRow = new Int32Array(K);
  const launchAndEmit = (prob: number): void => {
    let nl = 0;
    let nLaunched = 0;
    for (let i = 0; i < K; i++) {
      if (b[i] === 0 && q[i] >= thresholds[i]) {
        const n = q[i] < maxBatch[i] ? q[i] : maxBatch[i];
        q[i] -= n;
        b[i] = n;
        r[i] = -1; // duration set below, once every launch of this instant is known
        launching[nLaunched++] = i;
      }
    }
    if (nLaunched === 0) {
      emit(prob);
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
      emit(prob);
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
      emit(p);
    }
  };

  q[initialModel] = N;
  // The initial state goes through the same launch rule; its edges are only a vehicle for
  // interning (under 'split' it may make two roots) and are discarded.
  launchAndEmit(1);
  nnz = 0;

  const memo = new Map<number, ArrivalDistribution>();
  const distFor = (fin: readonly number[]): ArrivalDistribution => {
    let memoKey = 0;
    for (let i = 0; i < K; i++) memoKey = memoKey * (N + 1) + fin[i];
    let dist = memo.get(memoKey);
    if (!dist) {
      const pr = pruned(arrivalDistribution(P, fin), K, pruneBelow);
      prunedMass = Math.max(prunedMass, pr.lost);
      dist = pr.dist;
      memo.set(memoKey, dist);
    }
    return dist;
  };
  const finishing = new Array<number>(K).fill(0);
  const q0 = new Int32Array(K);
  const b0 = new Int32Array(K);
  const r0 = new Int32Array(K);

  for (let s = 0; s < table.size; s++) {
    let t = Infinity;
    for (let i = 0; i < K; i++) {
      const o = (s * K + i) * 3;
      q[i] = fields[o];
      b[i] = fields[o + 1];
      r[i] = fields[o + 2];
      if (b[i] > 0 && r[i] < t) t = r[i];
    }
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
    if (s + 2 > tau.length) {
      tau = growI32(tau, s + 2);
      reward = growF64(reward, s + 2);
      rowPtr = growI32(rowPtr, s + 2);
    }
    tau[s] = t;
    reward[s] = rew;
    rowPtr[s] = nnz;
    // Batches ending in the same slot are routed together before any launch: on a lattice such
    // ties are real, and whatever arrives at an instant is queued before that instant's launches.
    // (Routing them one by one in random order was tried for coarse off-lattice Δ: stable in Δ but
    // ≈2% low on lattice cases, so it was dropped.)
    const dist = distFor(finishing);
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
      launchAndEmit(dist.probs[o]);
    }
  }
  const size = table.size;
  rowPtr = growI32(rowPtr, size + 1);
  rowPtr[size] = nnz;
  return {
    K,
    size,
    fields: fields.slice(0, size * K * 3),
    tau: tau.slice(0, size),
    reward: reward.slice(0, size),
    rowPtr: rowPtr.slice(0, size + 1),
    col: col.slice(0, nnz),
    val: val.slice(0, nnz),
    prunedMass,
  };
}
