// Where the requests of the batches finishing together go: a convolution of multinomials.
// Requests route independently (the model's independence assumption), so only the count vector
// of arrivals per target matters, not which request went where.

export interface ArrivalDistribution {
  /** outcomes × K arrival counts, flattened. */
  arrivals: Int32Array;
  probs: Float64Array;
  count: number;
}

/**
 * Distribution of the arrival-count vector when model i finishes a batch of `finishing[i]`
 * requests (0 = not finishing), each moving to j with probability P[i][j].
 */
export function arrivalDistribution(P: readonly (readonly number[])[], finishing: readonly number[]): ArrivalDistribution {
  const K = P.length;
  let total = 0;
  for (const b of finishing) total += b;
  const radix = total + 1;
  // Vectors are coded base (total+1) so each DP layer is a small Map of code → probability.
  const unit: number[] = [];
  for (let j = 0, m = 1; j < K; j++, m *= radix) unit.push(m);
  let dist = new Map<number, number>([[0, 1]]);
  for (let i = 0; i < K; i++) {
    const row = P[i];
    for (let n = 0; n < finishing[i]; n++) {
      const next = new Map<number, number>();
      for (const [code, p] of dist) {
        for (let j = 0; j < K; j++) {
          const pj = row[j];
          if (pj === 0) continue;
          const c = code + unit[j];
          next.set(c, (next.get(c) ?? 0) + p * pj);
        }
      }
      dist = next;
    }
  }
  const count = dist.size;
  const arrivals = new Int32Array(count * K);
  const probs = new Float64Array(count);
  let o = 0;
  for (const [code, p] of dist) {
    let c = code;
    for (let j = 0; j < K; j++) {
      arrivals[o * K + j] = c % radix;
      c = Math.floor(c / radix);
    }
    probs[o++] = p;
  }
  return { arrivals, probs, count };
}
