// One seeded random case of the oracle property tests: models, requests, limits and scheduling knobs.
import type { SchedulingMode } from '../../runtime/core/servingPolicy.ts';
import { draw3 } from '../../runtime/util/hash.ts';
import type { WorkloadRequest } from './runWorkload.ts';

export function pick(seed: number, salt: number, lo: number, hi: number): number {
  return lo + Math.floor(draw3(seed, salt, 99) * (hi - lo + 1));
}

/** Upper bounds of a case's draws (the in-process test's by default; the thread test keeps cases smaller). */
export interface CaseBounds {
  concurrency: number;
  requests: number;
  maxTokens: number;
  maxWaitMs: number;
}

const IN_PROCESS: CaseBounds = { concurrency: 32, requests: 40, maxTokens: 30, maxWaitMs: 40 };

export function randomCase(seed: number, mode: SchedulingMode, bounds: CaseBounds = IN_PROCESS) {
  const k = pick(seed, 1, 1, 3);
  const names = ['small', 'medium', 'large'].slice(0, k);
  const eos = pick(seed, 2, 0, 1) === 1 ? 3 : -1;
  const concurrency = pick(seed, 3, 1, bounds.concurrency);
  const requests: WorkloadRequest[] = Array.from({ length: pick(seed, 4, 1, bounds.requests) }, (_, r) => ({
    id: `r${r}`,
    prompt: Array.from({ length: pick(seed, 100 + r, 1, 12) }, (_, j) => pick(seed, 1000 * r + j, 4, 40)),
    maxTokens: pick(seed, 200 + r, 1, bounds.maxTokens),
    sampling: { seed: pick(seed, 300 + r, 0, 1 << 20) },
  }));
  const maxLen = Math.max(...requests.map((r) => r.prompt.length + r.maxTokens));
  const tightMemory = pick(seed, 5, 0, 2) === 0;
  const maxBatch = names.map((_, i) => pick(seed, 20 + i, 1, 8));
  // two cases in three feed under a small step token budget: prompts and handoff suffixes go in chunks
  const chunked = pick(seed, 7, 0, 2) > 0;
  const maxStepTokens = names.map((_, i) => (chunked ? pick(seed, 40 + i, 1, 6) : Infinity));
  const thresholds = names.map((_, i) => (mode === 'async-delayed' ? Math.min(maxBatch[i], pick(seed, 10 + i, 1, 4)) : 1));
  // Clamp to feasibility: Σ(T−1) < N.
  while (thresholds.reduce((s, t) => s + t - 1, 0) >= concurrency) thresholds[thresholds.indexOf(Math.max(...thresholds))]--;
  return {
    k,
    names,
    eos,
    concurrency,
    requests,
    maxBatch,
    maxStepTokens,
    thresholds,
    kvCapacityTokens: (i: number) => (tightMemory ? maxLen + pick(seed, 30 + i, 0, maxLen) : Infinity),
    maxWaitMs: pick(seed, 6, 1, bounds.maxWaitMs),
  };
}
