// The live optimiser under scheduling.slo: thresholds and max-wait deadline for goodput at the measured arrival rate (the latency model), plus how the settings in force fare.
import { meetsP99Slo, optimiseForSlo, predictLatency, type SloCandidate } from './throughput/index.ts';
import type { OpenLoopTarget, OptimiserAnswer, OptimiserInput } from './autoThresholds.ts';

/** Requests per simulated run and runs per candidate: ≈ 1 s for 40 candidates of R2R here, off the hot path (a worker). */
const REQUESTS = 400;
const REPLICATIONS = 3;

export function sloOptimiser(input: OptimiserInput, open: OpenLoopTarget, current: readonly number[]): OptimiserAnswer {
  const { fixed, open: _, ...model } = input;
  const latencyInput = { ...model, outputTokens: Math.max(1, Math.round(open.outputTokens)) };
  const load = { rateRps: open.rateRps, requests: REQUESTS };
  const choice = optimiseForSlo(latencyInput, load, open.slo, { fixed, maxWaitChoices: open.maxWaitChoices, replications: REPLICATIONS });
  // Settings that miss an SLO some other setting meets are worth nothing: any setting that meets it is a gain.
  const worth = (c: Pick<SloCandidate, 'goodputReqS' | 'meetsSlo'>) => (c.meetsSlo || !choice.meetsSlo ? c.goodputReqS : 0);
  const feasibleNow = current.reduce((s, t) => s + t - 1, 0) < input.N && current.every((t, i) => t <= input.maxBatch[i]);
  let now: Pick<SloCandidate, 'goodputReqS' | 'meetsSlo'> | undefined = choice.table.find(
    (c) => c.maxWaitMs === open.maxWaitMs && c.thresholds.every((t, i) => t === current[i]),
  );
  if (!now && feasibleNow) {
    const p = predictLatency({ ...latencyInput, thresholds: [...current], maxWaitMs: open.maxWaitMs }, load, open.slo, { replications: REPLICATIONS });
    now = { goodputReqS: p.goodputReqS, meetsSlo: meetsP99Slo(p, open.slo) };
  }
  return {
    best: choice.best.thresholds,
    maxWaitMs: choice.best.maxWaitMs,
    meetsSlo: choice.meetsSlo,
    predictedBest: worth(choice.best),
    predictedCurrent: now ? worth(now) : 0,
  };
}
