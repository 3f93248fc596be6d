// Serving metrics in virtual time: a closed loop over the real cluster and simulated runners, timed per token.
import type { Algorithm } from '../../shared/algorithm.ts';
import { VirtualClock } from '../../runtime/clock/virtualClock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import type { LaneStats } from '../../shared/protocol/engineProtocol.ts';
import type { Slo } from '../../runtime/loadgen/goodput.ts';
import { servingMetrics, type RequestRecord, type ServingMetrics } from '../../runtime/loadgen/requestMetrics.ts';
import type { SchedulingMode } from '../../runtime/core/servingPolicy.ts';
import { markovAlgorithm, r2rMarkov } from '../../runtime/sim/markovAlgorithm.ts';
import { PAPER_R2R_PROFILE, profileRunners, type LatencyProfile } from '../../runtime/sim/paperProfile.ts';

export interface VirtualCase {
  mode: SchedulingMode;
  retainState: boolean;
  thresholds?: Record<string, number>;
  concurrency: number;
  requests: number;
  promptLength: number;
  maxTokens: number;
  profile?: LatencyProfile;
  algorithm?: Algorithm<unknown>;
  maxWaitMs?: number;
  maxBatch?: number;
  /** Open loop: request i is sent at arrivalsMs[i] (virtual ms) whatever is in flight; `concurrency` caps admission. */
  arrivalsMs?: readonly number[];
  /** Latency bounds goodput is counted against. */
  slo?: Slo;
}

/** The paper's R2R setting (docs/benchmarks.md, "Virtual time"): p = 0.35 small → large, one large token, L = 6.0 / 27.9 ms. */
export const PAPER_SETTING = {
  p: 0.35,
  profile: PAPER_R2R_PROFILE,
  promptLength: 128,
  maxWaitMs: 100,
  maxBatch: 64,
  requestsPerClient: 4,
};

export interface VirtualRun {
  metrics: ServingMetrics;
  lanes: LaneStats[];
  /** Virtual ms from first dispatch to last completion. */
  spanMs: number;
}

/**
 * Closed loop: each client sends its next request when the last one ends (vLLM's fixed concurrency);
 * open loop (`arrivalsMs`): requests arrive on schedule and wait at the entry beyond `concurrency`. Every
 * committed token is one "content chunk" at the virtual time it was committed, so TTFT, ITL, TPOT
 * and E2E follow the same definitions as over HTTP.
 */
export function runVirtual(c: VirtualCase): VirtualRun {
  const clock = new VirtualClock();
  const runners = profileRunners(c.profile ?? PAPER_SETTING.profile);
  const cluster = new Cluster({
    clock,
    mode: c.mode,
    retainState: c.retainState,
    maxConcurrency: c.concurrency,
    maxWaitMs: c.maxWaitMs ?? PAPER_SETTING.maxWaitMs,
    prefixCache: false,
    models: [...runners].map(([name, runner]) => ({ name, runner, maxBatch: c.maxBatch ?? PAPER_SETTING.maxBatch, threshold: c.thresholds?.[name] ?? 1 })),
  });
  const algorithm = c.algorithm ?? (markovAlgorithm(r2rMarkov(PAPER_SETTING.p)) as Algorithm<unknown>);
  const records: RequestRecord[] = [];
  let sent = 0;
  let finished = 0;
  const send = () => {
    const i = sent++;
    const prompt = Array.from({ length: c.promptLength }, (_, j) => 4 + ((i * 31 + j * 7) % 90));
    const rec: RequestRecord = { ok: false, sendMs: clock.now(), contentChunkMs: [], endMs: 0, outputTokens: 0 };
    records.push(rec);
    cluster.submit({
      id: `v${i}`,
      prompt,
      maxTokens: c.maxTokens,
      sampling: { seed: i },
      algorithm,
      onToken: () => {
        rec.contentChunkMs.push(clock.now());
      },
      onEnd: (r) => {
        finished++;
        rec.ok = r.status === 'done';
        rec.endMs = r.endedAt;
        rec.outputTokens = r.tokens.length;
        rec.handoffs = r.handoffs;
        rec.tokensByModel = r.tokensByModel;
        if (!c.arrivalsMs && sent < c.requests) send();
      },
    });
  };
  if (c.arrivalsMs) for (let k = 0; k < c.requests; k++) clock.setTimeout(send, c.arrivalsMs[k]);
  else for (let k = 0; k < Math.min(c.concurrency, c.requests); k++) send();
  clock.run({ stop: () => finished === c.requests });
  if (finished !== c.requests) throw new Error(`virtual run stalled: ${finished}/${c.requests} done at t=${clock.now()}`);
  const metrics = servingMetrics(records, undefined, c.slo);
  return { metrics, lanes: cluster.laneStats(), spanMs: metrics.durationMs };
}

/** Sweeps the large model's threshold over every feasible value (small at 1) and keeps the fastest. */
export function sweepVirtual(c: Omit<VirtualCase, 'mode' | 'retainState' | 'thresholds'>): {
  threshold: number;
  run: VirtualRun;
  sweep: { threshold: number; tok_s: number }[];
} {
  let best: { threshold: number; run: VirtualRun } | null = null;
  const sweep: { threshold: number; tok_s: number }[] = [];
  for (let t = 1; t <= Math.min(c.concurrency, c.maxBatch ?? PAPER_SETTING.maxBatch); t++) {
    const run = runVirtual({ ...c, mode: 'async-delayed', retainState: true, thresholds: { small: 1, large: t } });
    sweep.push({ threshold: t, tok_s: run.metrics.outputThroughputTokS });
    if (!best || run.metrics.outputThroughputTokS > best.run.metrics.outputThroughputTokS) best = { threshold: t, run };
  }
  return { ...best!, sweep };
}
