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
// therefore can join i's very next batch, as in the runtime.
import { arrivalDistribution, type ArrivalDistribution } from './arrivalDistribution.ts';
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
}

export interface BuildOptions {
  maxStates?: number;
  initialModel?: number;
}

class Grow {
  i32: Int32Array;
  f64: Float64Array;
  constructor(
    cap: number,
    private readonly ints: boolean,
  ) {
    this.i32 = new Int32Array(ints ? cap : 0);
    this.f64 = new Float64Array(ints ? 0 : cap);
  }
  ensure(n: number): void {
    const cap = this.ints ? this.i32.length : this.f64.length;
    if (n <= cap) return;
    let c = cap * 2;
    while (c < n) c *= 2;
    if (this.ints) {
      const a = new Int32Array(c);
      a.set(this.i32);
      this.i32 = a;
    } else {
      const a = new Float64Array(c);
      a.set(this.f64);
      this.f64 = a;
    }
  }
}

const DEFAULT_MAX_STATES = 4_000_000;

export function buildChain(m: NormalisedModel, steps: readonly (readonly number[])[], opts: BuildOptions = {}): Chain {
  const { K, N, P, maxBatch, thresholds, commitPerStep } = m;
  const maxStates = opts.maxStates ?? DEFAULT_MAX_STATES;
  const initialModel = opts.initialModel ?? 0;
  if (!Number.isInteger(initialModel) || initialModel < 0 || initialModel >= K) {
    throw new ThroughputError('INVALID_INPUT', `initialModel must be a model index in [0, ${K})`);
  }

  // Mixed-radix packing of (q, b, r) per model into one exact integer key.
  const rMax = steps.map((row) => Math.max(...row.slice(1)));
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
  const fields = new Grow(1 << 14, true);
  const tau = new Grow(1 << 12, true);
  const reward = new Grow(1 << 12, false);
  const rowPtr = new Grow(1 << 12, true);
  const col = new Grow(1 << 14, true);
  const val = new Grow(1 << 14, false);
  let nnz = 0;

  const q = new Int32Array(K);
  const b = new Int32Array(K);
  const r = new Int32Array(K);

  // Apply the launch rule to (q, b, r), then intern the state; returns its index.
  const intern = (): number => {
    let key = 0;
    for (let i = 0; i < K; i++) {
      if (b[i] === 0 && q[i] >= thresholds[i]) {
        const n = q[i] < maxBatch[i] ? q[i] : maxBatch[i];
        q[i] -= n;
        b[i] = n;
        r[i] = steps[i][n];
      }
      key += q[i] * mulQ[i] + b[i] * mulB[i] + r[i] * mulR[i];
    }
    const { index, inserted } = table.getOrInsert(key);
    if (inserted) {
      if (index >= maxStates) {
        throw new ThroughputError('STATE_SPACE_TOO_LARGE', `chain exceeds maxStates = ${maxStates}`, { maxStates });
      }
      fields.ensure((index + 1) * K * 3);
      const f = fields.i32;
      for (let i = 0; i < K; i++) {
        const o = (index * K + i) * 3;
        f[o] = q[i];
        f[o + 1] = b[i];
        f[o + 2] = r[i];
      }
    }
    return index;
  };

  q[initialModel] = N;
  intern();

  const memo = new Map<string, ArrivalDistribution>();
  const finishing = new Array<number>(K).fill(0);
  const q0 = new Int32Array(K);
  const b0 = new Int32Array(K);
  const r0 = new Int32Array(K);

  for (let s = 0; s < table.size; s++) {
    const f = fields.i32;
    let t = Infinity;
    for (let i = 0; i < K; i++) {
      const o = (s * K + i) * 3;
      q0[i] = f[o];
      b0[i] = f[o + 1];
      r0[i] = f[o + 2];
      if (b0[i] > 0 && r0[i] < t) t = r0[i];
    }
    if (t === Infinity) {
      // Only reachable if Σ(T_i − 1) ≥ N, which normaliseInput rejects.
      throw new ThroughputError('INFEASIBLE_THRESHOLDS', 'reached a state with every model idle (deadlock)');
    }
    let rew = 0;
    for (let i = 0; i < K; i++) {
      finishing[i] = b0[i] > 0 && r0[i] === t ? b0[i] : 0;
      rew += finishing[i] * commitPerStep[i];
    }
    const memoKey = finishing.join(',');
    let dist = memo.get(memoKey);
    if (!dist) {
      dist = arrivalDistribution(P, finishing);
      memo.set(memoKey, dist);
    }
    tau.ensure(s + 1);
    reward.ensure(s + 1);
    rowPtr.ensure(s + 2);
    tau.i32[s] = t;
    reward.f64[s] = rew;
    rowPtr.i32[s] = nnz;
    col.ensure(nnz + dist.count);
    val.ensure(nnz + dist.count);
    for (let o = 0; o < dist.count; o++) {
      for (let i = 0; i < K; i++) {
        const a = dist.arrivals[o * K + i];
        q[i] = q0[i] + a;
        if (finishing[i] > 0) {
          b[i] = 0;
          r[i] = 0;
        } else {
          b[i] = b0[i];
          r[i] = b0[i] > 0 ? r0[i] - t : 0;
        }
      }
      const target = intern();
      // Distinct arrival vectors always give distinct successors, so no merging is needed.
      col.i32[nnz] = target;
      val.f64[nnz] = dist.probs[o];
      nnz++;
    }
  }
  const size = table.size;
  rowPtr.ensure(size + 1);
  rowPtr.i32[size] = nnz;
  return {
    K,
    size,
    fields: fields.i32.slice(0, size * K * 3),
    tau: tau.i32.slice(0, size),
    reward: reward.f64.slice(0, size),
    rowPtr: rowPtr.i32.slice(0, size + 1),
    col: col.i32.slice(0, nnz),
    val: val.f64.slice(0, nnz),
  };
}
