// thresholds: "auto": re-estimates routing (and, under an SLO, the arrival rate) from live traffic, re-solves, applies with hysteresis.
import type { TraceEvent } from '../../shared/trace.ts';
import type { Cluster } from '../entry/cluster.ts';
import type { LatencySlo } from './throughput/index.ts';
import { RoutingEstimator, type RoutingEstimate } from './routingEstimator.ts';
import { TrafficEstimator, type TrafficEstimate } from './trafficEstimator.ts';

/**
 * Thresholds change only when the model predicts more than this gain over those in force: below it
 * the prediction is within the model's own error on real runners (docs/benchmarks.md, dtmc-onnx).
 */
export const THRESHOLD_HYSTERESIS = 0.05;

/** The open-loop target the SLO optimiser (sloOptimiser.ts) prices settings against. */
export interface OpenLoopTarget {
  rateRps: number;
  outputTokens: number;
  slo: LatencySlo;
  /** The deadline in force, ms. */
  maxWaitMs: number;
  maxWaitChoices?: number[];
}

export interface OptimiserInput {
  N: number;
  P: number[][];
  C: number[][];
  /** ms[model][batch − 1]. */
  latency: number[][];
  /** The same, launched while another model runs. */
  contendedLatency?: number[][];
  maxBatch: number[];
  /** Thresholds held fixed, by index into the models above. */
  fixed?: Record<number, number>;
  /** Under an SLO: the offered load and bounds; the answer then also picks the deadline. */
  open?: OpenLoopTarget;
}

/**
 * The optimiser's input for an estimate. Only models that carried traffic enter the chain (`used`,
 * indices into `engines`); the others keep their thresholds. Batches are capped at min(the engine's, cap, N).
 */
export function optimiserInputFor(
  est: RoutingEstimate,
  engines: readonly { name: string; maxBatch: number }[],
  N: number,
  cap: number,
  fixedByName: Readonly<Record<string, number>> = {},
): { input: OptimiserInput; used: number[] } {
  const used = est.rows.map((r, i) => (r > 0 ? i : -1)).filter((i) => i >= 0);
  const pick = <T>(m: T[][]) => used.map((i) => used.map((j) => m[i][j]));
  const P = pick(est.P).map((row) => {
    const s = row.reduce((a, b) => a + b, 0);
    return row.map((x) => x / s);
  });
  const fixed: Record<number, number> = {};
  used.forEach((i, k) => {
    const f = fixedByName[engines[i].name];
    if (f !== undefined) fixed[k] = f;
  });
  const input: OptimiserInput = {
    N,
    P,
    C: pick(est.C),
    latency: used.map((i) => est.latency[i]),
    contendedLatency: used.map((i) => est.contendedLatency[i]),
    maxBatch: used.map((i) => Math.min(engines[i].maxBatch, cap, N)),
    fixed,
  };
  return { input, used };
}

export interface OptimiserAnswer {
  best: number[];
  /** Under an SLO: predicted goodput (req/s); else committed tokens/s. */
  predictedBest: number;
  predictedCurrent: number;
  /** Under an SLO: the deadline chosen with the thresholds, and whether any setting meets the SLO. */
  maxWaitMs?: number;
  meetsSlo?: boolean;
}

/** Picks thresholds for an estimate; may answer later (a worker thread) so that solving stays off the hot path. */
export type ThresholdOptimiser = (input: OptimiserInput, current: readonly number[]) => OptimiserAnswer | Promise<OptimiserAnswer>;

export interface AutoThresholdOptions {
  optimise: ThresholdOptimiser;
  /** How often to re-estimate, clock ms. */
  everyMs: number;
  /** Sliding window the estimate covers, clock ms. */
  windowMs: number;
  /** Apply only when the predicted gain over the thresholds in force exceeds this fraction. */
  hysteresis: number;
  /** Cap on the batch sizes the model considers (keeps its state space small). */
  maxBatchCap?: number;
  /** Thresholds never changed, by model name (e.g. the paper keeps the small model at 1). */
  fixed?: Readonly<Record<string, number>>;
  /** Skip a re-solve while no routing probability moved by more than this since the last one (default 0.02). */
  minChange?: number;
  /**
   * scheduling.slo: choose thresholds and the deadline for goodput at the measured arrival rate,
   * subject to these p99 bounds (the latency model), instead of closed-loop throughput.
   */
  slo?: LatencySlo;
  /** Deadlines the SLO optimiser may choose from, ms (default DEFAULT_MAX_WAIT_CHOICES). */
  maxWaitChoices?: number[];
  /** Re-solve when the arrival rate moved by more than this fraction (default 0.1). */
  minRateChange?: number;
}

export interface ThresholdChange {
  t: number;
  from: number[];
  to: number[];
  predictedGain: number;
  estimate: RoutingEstimate;
  /** Under an SLO: the deadline before and after, the load it was chosen for, and whether the SLO can be met. */
  maxWaitMs?: { from: number; to: number };
  traffic?: TrafficEstimate;
  meetsSlo?: boolean;
}

export class AutoThresholds {
  readonly estimator: RoutingEstimator;
  readonly traffic: TrafficEstimator;
  readonly changes: ThresholdChange[] = [];
  /** Ticks that solved (for tests and the status endpoint). */
  solves = 0;
  private timer: unknown;
  private solving = false;
  private lastSolved: { P: number[][]; N: number; rateRps: number } | null = null;
  private stopped = false;

  constructor(
    private readonly cluster: Cluster,
    private readonly opts: AutoThresholdOptions,
  ) {
    const cap = opts.maxBatchCap ?? 32;
    this.estimator = new RoutingEstimator(
      cluster.engines.map((l) => l.name),
      opts.windowMs,
      Math.min(cap, Math.max(...cluster.engines.map((l) => l.maxBatch))),
    );
    this.traffic = new TrafficEstimator(opts.windowMs);
  }

  /** Feed every trace event here (subscribe it to the cluster's trace sink). */
  readonly onEvent = (e: TraceEvent): void => {
    this.estimator.onEvent(e);
    if (this.opts.slo) this.traffic.onEvent(e);
  };

  start(): void {
    const clock = this.cluster.clock;
    const loop = () => {
      if (this.stopped) return;
      this.tick();
      this.timer = clock.setTimeout(loop, this.opts.everyMs);
    };
    this.timer = clock.setTimeout(loop, this.opts.everyMs);
  }

  stop(): void {
    this.stopped = true;
    this.cluster.clock.clearTimeout(this.timer);
  }

  tick(): void {
    const clock = this.cluster.clock;
    const now = clock.now();
    this.estimator.sampleActive(now, this.cluster.activeCount);
    this.traffic.sampleQueue(now, this.cluster.queuedCount);
    if (this.solving) return;
    const est = this.estimator.estimate(now);
    if (!est) return;
    const slo = this.opts.slo;
    const traffic = slo ? this.traffic.estimate(now) : null;
    if (slo && !traffic) return;
    const limit = Number.isFinite(this.cluster.maxConcurrency) ? this.cluster.maxConcurrency : 64;
    // Closed loop: the N in flight; open loop: the cap on admission, with arrivals at the measured rate.
    const N = slo ? limit : Math.max(1, Math.min(limit, Math.round(est.meanActive)));
    const { input, used } = optimiserInputFor(est, this.cluster.engines, N, this.estimator.maxBatch, this.opts.fixed);
    const rateRps = traffic?.arrivalRps ?? 0;
    if (traffic && slo)
      input.open = { rateRps, outputTokens: traffic.meanOutputTokens, slo, maxWaitMs: this.cluster.maxWaitMs, maxWaitChoices: this.opts.maxWaitChoices };
    const usedEngines = used.map((i) => this.cluster.engines[i]);
    // Steady traffic gives the same answer again: re-solve only when the routing, N or the arrival rate moved.
    const last = this.lastSolved;
    const minChange = this.opts.minChange ?? 0.02;
    const rateSteady = !slo || (last !== null && Math.abs(rateRps - last.rateRps) <= (this.opts.minRateChange ?? 0.1) * last.rateRps);
    if (
      last &&
      rateSteady &&
      last.N === N &&
      last.P.length === est.P.length &&
      last.P.every((row, i) => row.every((x, j) => Math.abs(x - est.P[i][j]) <= minChange))
    )
      return;
    this.lastSolved = { P: est.P, N, rateRps };
    const answer = this.opts.optimise(
      input,
      usedEngines.map((e, k) => Math.min(e.threshold, input.maxBatch[k])),
    );
    const apply = (a: OptimiserAnswer) => this.apply(a, used, est, traffic);
    if (answer instanceof Promise) {
      this.solving = true;
      answer.then(apply, () => {}).finally(() => (this.solving = false));
    } else apply(answer);
  }

  private apply(a: OptimiserAnswer, used: number[], est: RoutingEstimate, traffic: TrafficEstimate | null): void {
    this.solves++;
    const c = this.cluster;
    const gain = a.predictedCurrent > 0 ? a.predictedBest / a.predictedCurrent - 1 : Infinity;
    const live = c.engines.map((l) => l.threshold);
    const next = live.slice();
    used.forEach((i, k) => (next[i] = a.best[k]));
    const wait = a.maxWaitMs ?? c.maxWaitMs;
    if (gain <= this.opts.hysteresis || (next.every((t, i) => t === live[i]) && wait === c.maxWaitMs)) return;
    const waitBefore = c.maxWaitMs;
    try {
      // Emits the config trace event the timeline marks the change with (thresholds and deadline).
      c.setThresholds(Object.fromEntries(c.engines.map((l, i) => [l.name, next[i]])), wait);
      const sloPart = a.maxWaitMs === undefined ? {} : { maxWaitMs: { from: waitBefore, to: wait }, traffic: traffic ?? undefined, meetsSlo: a.meetsSlo };
      this.changes.push({ t: c.clock.now(), from: live, to: next, predictedGain: gain, estimate: est, ...sloPart });
    } catch {
      // Infeasible for the configured N (traffic shrank the estimate): what is in force stays.
    }
  }
}
