// Stationary distribution of a sparse Markov chain by Gauss–Seidel on π = πP.
// Gauss–Seidel rather than power iteration: the embedded chain is often (near-)periodic — two
// models alternating in lock-step — and the power method does not converge on periodic chains,
// while Gauss–Seidel does, and it reuses fresh values within a sweep (roughly halving sweeps).

export interface SparseChain {
  size: number;
  rowPtr: Int32Array;
  col: Int32Array;
  val: Float64Array;
}

export interface StationaryOptions {
  /** Stop when ‖πP − π‖₁ < tolerance (default 1e-10). */
  tolerance?: number;
  maxIterations?: number;
}

export interface Stationary {
  pi: Float64Array;
  iterations: number;
  residual: number;
  converged: boolean;
}

/** Incoming-edge (CSC) view, self-loops split out: Gauss–Seidel updates π_j from its predecessors. */
function transpose(c: SparseChain): { ptr: Int32Array; src: Int32Array; p: Float64Array; diag: Float64Array } {
  const n = c.size;
  const ptr = new Int32Array(n + 1);
  const diag = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    for (let k = c.rowPtr[i]; k < c.rowPtr[i + 1]; k++) {
      if (c.col[k] === i) diag[i] += c.val[k];
      else ptr[c.col[k] + 1]++;
    }
  }
  for (let j = 0; j < n; j++) ptr[j + 1] += ptr[j];
  const fill = ptr.slice(0, n);
  const src = new Int32Array(ptr[n]);
  const p = new Float64Array(ptr[n]);
  for (let i = 0; i < n; i++) {
    for (let k = c.rowPtr[i]; k < c.rowPtr[i + 1]; k++) {
      const j = c.col[k];
      if (j === i) continue;
      src[fill[j]] = i;
      p[fill[j]++] = c.val[k];
    }
  }
  return { ptr, src, p, diag };
}

export function solveStationary(c: SparseChain, opts: StationaryOptions = {}): Stationary {
  const n = c.size;
  const tolerance = opts.tolerance ?? 1e-10;
  const maxIterations = opts.maxIterations ?? 20_000;
  if (n === 1) return { pi: Float64Array.of(1), iterations: 0, residual: 0, converged: true };
  const { ptr, src, p, diag } = transpose(c);
  const pi = new Float64Array(n).fill(1 / n);

  const residualOf = (): number => {
    let res = 0;
    for (let j = 0; j < n; j++) {
      let s = diag[j] * pi[j];
      for (let k = ptr[j]; k < ptr[j + 1]; k++) s += pi[src[k]] * p[k];
      res += Math.abs(s - pi[j]);
    }
    return res;
  };

  let iterations = 0;
  let residual = Infinity;
  // The residual costs a sweep, so we only measure it once the cheap sweep-to-sweep change is small.
  while (iterations < maxIterations) {
    let change = 0;
    let total = 0;
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let k = ptr[j]; k < ptr[j + 1]; k++) s += pi[src[k]] * p[k];
      const d = 1 - diag[j];
      // d = 0 only for an absorbing state, which a closed feasible system cannot have besides n = 1.
      const v = d > 0 ? s / d : pi[j];
      change += Math.abs(v - pi[j]);
      pi[j] = v;
      total += v;
    }
    for (let j = 0; j < n; j++) pi[j] /= total;
    iterations++;
    if (change < tolerance || iterations % 25 === 0) {
      residual = residualOf();
      if (residual < tolerance) break;
    }
  }
  if (residual === Infinity) residual = residualOf();
  return { pi, iterations, residual, converged: residual < tolerance };
}
