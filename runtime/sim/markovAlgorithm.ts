// A routing algorithm that follows a given Markov matrix: P[i][j] next-model probabilities, keep[i][j] commit rule.
import { standardSend, type Algorithm } from '../../shared/algorithm.ts';
import { draw3 } from '../util/hash.ts';

export interface MarkovSpec {
  models: string[];
  /** P[i][j]: probability that a step on model i is followed by work on model j (rows sum to 1). */
  P: number[][];
  /** keep[i][j]: on a switch i→j, is the sampled token committed (true) or discarded (false)? */
  keep: boolean[][];
  entry?: number;
}

/**
 * The throughput model's view of an algorithm, runnable: each step draws the next model from row i
 * of P with a reproducible draw (request seed, position, model, step count), so the sequential
 * oracle and the runtime see the same decisions.
 */
export function markovAlgorithm(spec: MarkovSpec): Algorithm<{ steps: number }> {
  const { P, keep, models } = spec;
  P.forEach((row, i) => {
    const s = row.reduce((a, b) => a + b, 0);
    if (Math.abs(s - 1) > 1e-9) throw new Error(`markov: row ${i} of P sums to ${s}, not 1`);
  });
  return {
    name: 'markov',
    models,
    entry: spec.entry ?? 1,
    initMeta: () => ({ steps: 0 }),
    route(r) {
      const u = draw3(Math.floor(r.draw * 4294967296), r.meta.steps++, r.model);
      const row = P[r.model - 1];
      let acc = 0;
      for (let j = 0; j < row.length; j++) {
        acc += row[j];
        if (u < acc) return j + 1 === r.model ? 0 : j + 1;
      }
      return 0;
    },
    send: (req) => standardSend(req, keep[req.from - 1][req.to - 1]),
  };
}

/** R2R as the paper's throughput profile states it: small → large with probability p (token discarded), large back after one kept token. */
export function r2rMarkov(p: number): MarkovSpec {
  return {
    models: ['small', 'large'],
    P: [
      [1 - p, p],
      [1, 0],
    ],
    keep: [
      [true, false],
      [true, true],
    ],
  };
}
