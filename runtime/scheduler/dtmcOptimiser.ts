// The live threshold optimiser: the throughput model's optimiser, plus the prediction for the thresholds in force.
import { optimiseThresholds, rowFor } from '../throughput/index.ts';
import type { OptimiserAnswer, OptimiserInput } from './autoThresholds.ts';

export function dtmcOptimiser(input: OptimiserInput, current: readonly number[]): OptimiserAnswer {
  const { fixed, ...model } = input;
  const r = optimiseThresholds(model, { fixed });
  const feasibleNow = current.reduce((s, t) => s + t - 1, 0) < input.N && current.every((t, i) => t <= input.maxBatch[i]);
  const predictedCurrent = feasibleNow ? rowFor(model, r, current).tokensPerSec : 0;
  return { best: r.best, predictedBest: r.predicted, predictedCurrent };
}
