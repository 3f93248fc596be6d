// The live threshold optimiser: the throughput model's optimiser (or, under an SLO, the latency model's), plus the prediction for the settings in force.
import { optimiseThresholds, rowFor } from './throughput/index.ts';
import type { OptimiserAnswer, OptimiserInput } from './autoThresholds.ts';
import { sloOptimiser } from './sloOptimiser.ts';

export function dtmcOptimiser(input: OptimiserInput, current: readonly number[]): OptimiserAnswer {
  // Under an SLO the latency model decides (goodput at the arrival rate); otherwise throughput in a closed loop of N.
  if (input.open) return sloOptimiser(input, input.open, current);
  const { fixed, open: _, ...model } = input;
  const r = optimiseThresholds(model, { fixed });
  const feasibleNow = current.reduce((s, t) => s + t - 1, 0) < input.N && current.every((t, i) => t <= input.maxBatch[i]);
  const predictedCurrent = feasibleNow ? rowFor(model, r, current).tokensPerSec : 0;
  return { best: r.best, predictedBest: r.predicted, predictedCurrent };
}
