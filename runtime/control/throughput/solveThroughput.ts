// Predicts committed tokens/sec and per-model batching figures for one threshold setting.
import { buildChain } from './buildChain.ts';
import { timeStepOf } from './chooseTimeStep.ts';
import { normaliseInput } from './normaliseInput.ts';
import { phaseGroups } from './phaseGroups.ts';
import { solveStationary } from './solveStationary.ts';
import type { ThroughputInput, ThroughputResult } from './types.ts';

export function solveThroughput(input: ThroughputInput): ThroughputResult {
  const m = normaliseInput(input);
  const ts = timeStepOf(m, input);
  const t0 = performance.now();
  const chain = buildChain(m, ts, {
    maxStates: input.maxStates,
    initialModel: input.initialModel,
    pruneBelow: input.pruneBelow,
  });
  const t1 = performance.now();
  const st = solveStationary(chain, {
    tolerance: input.tolerance,
    maxIterations: input.maxIterations,
    groups: input.aggregate === false ? undefined : phaseGroups(chain),
  });
  const t2 = performance.now();

  const { K } = m;
  const { pi } = st;
  const { fields, tau, reward } = chain;
  // Embedded → time average: weight each post-event state by its sojourn τ.
  let time = 0;
  let tokens = 0;
  const idle = new Array<number>(K).fill(0);
  const queue = new Array<number>(K).fill(0);
  const inService = new Array<number>(K).fill(0);
  const batches = new Array<number>(K).fill(0);
  const reqSteps = new Array<number>(K).fill(0);
  for (let s = 0; s < chain.size; s++) {
    const w = pi[s];
    if (w === 0) continue;
    const wt = w * tau[s];
    time += wt;
    tokens += w * reward[s];
    for (let i = 0; i < K; i++) {
      const o = (s * K + i) * 3;
      const b = fields[o + 1];
      queue[i] += wt * fields[o];
      inService[i] += wt * b;
      if (b === 0) idle[i] += wt;
      else if (fields[o + 2] === tau[s]) {
        batches[i] += w;
        reqSteps[i] += w * b;
      }
    }
  }
  const perSec = 1000 / (time * ts.dtMs);
  const idleFraction = idle.map((x) => x / time);
  return {
    tokensPerSec: tokens * perSec,
    meanBatch: batches.map((x, i) => (x > 0 ? reqSteps[i] / x : 0)),
    idleFraction,
    utilisation: idleFraction.map((x) => 1 - x),
    batchesPerSec: batches.map((x) => x * perSec),
    stepsPerSec: reqSteps.map((x) => x * perSec),
    meanQueue: queue.map((x) => x / time),
    meanInService: inService.map((x) => x / time),
    dtMs: ts.dtMs,
    rounding: ts.rounding,
    effectiveLatencyMs: ts.lo.slice(0, K).map((row, i) => row.slice(1).map((d, k) => (d + ts.hiProb[i][k + 1]) * ts.dtMs)),
    latencyRoundingError: ts.maxRelError,
    prunedMass: chain.prunedMass,
    states: chain.size,
    transitions: chain.col.length,
    iterations: st.iterations,
    residual: st.residual,
    converged: st.converged,
    buildMs: t1 - t0,
    solveMs: t2 - t1,
  };
}
