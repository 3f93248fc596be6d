// Optimised thresholds from the throughput model: calibrate routing and step latency on the live server, then solve.
import { THRESHOLD_HYSTERESIS } from '../../runtime/control/autoThresholds.ts';
import { estimateRouting, fitContendedLatency, markContended, optimiseThresholds, rowFor, type RoutingStep } from '../../runtime/control/throughput/index.ts';
import type { RunnerSet } from './benchRunners.ts';
import { runServingCase, type ServingCase, type ServingMode, type ServingResult } from './servingCase.ts';

export interface ModelChoice {
  mode: ServingMode;
  /** Committed tok/s the model predicts for the chosen thresholds. */
  predicted: number;
  /** The model's best, which is not chosen when it beats thresholds 1 by no more than THRESHOLD_HYSTERESIS. */
  best_predicted: { thresholds: Record<string, number>; predicted_tok_s: number };
  /** Measured throughput of the calibration run (thresholds all 1). */
  calibration_tok_s: number;
  /** Predicted tok/s of every threshold vector evaluated, best first. */
  table: { thresholds: Record<string, number>; predicted_tok_s: number }[];
  P: number[][];
  C: number[][];
  /** Fitted step latency, ms by lane and batch size 1..maxBatch, launched with no other lane running. */
  latency_ms: Record<string, number[]>;
  /** The same, launched while another lane ran. */
  contended_latency_ms: Record<string, number[]>;
}

/**
 * Thresholds from the throughput model (runtime/control/throughput/README.md) instead of a sweep: a sweep's short runs on a
 * shared machine pick noise, the model does not. Routing P, committed tokens C and per-lane step
 * latency L_i(b) come from one calibration run in TokenRouter mode with every threshold at 1;
 * the latency is each batch's wall time from launch to results routed, so scheduling costs count,
 * split by whether another lane was running at launch.
 */
export function chooseThresholds(
  calibration: ServingResult,
  laneOrder: readonly string[],
  concurrency: number,
  maxBatch = 32,
): Omit<ModelChoice, 'calibration_tok_s'> {
  const routing: RoutingStep[] = calibration.steps.map((s) => (s.next === undefined ? { requestId: s.requestId, model: s.model, committed: s.committed } : s));
  const est = estimateRouting(routing, { models: laneOrder, entryModel: laneOrder[0] });
  // Split by whether another lane was running at launch: lanes that share cores slow each other.
  const samples = markContended(calibration.batches.map((b) => ({ model: laneOrder.indexOf(b.lane), batch: b.rows, startMs: b.startMs, endMs: b.endMs })));
  const mb = laneOrder.map(() => Math.min(maxBatch, concurrency));
  const profile = fitContendedLatency(samples, { maxBatch: mb });
  // The entry lane launches at 1: requests start there, so holding them back only adds latency.
  const input = { N: concurrency, P: est.P, C: est.C, latency: profile.alone.table, contendedLatency: profile.contended.table, maxBatch: mb };
  const opt = optimiseThresholds(input, { fixed: { 0: 1 } });
  // As the live controller does: leave thresholds at 1 unless the predicted gain beats the model's error.
  const ones = laneOrder.map(() => 1);
  const atOnes = rowFor(input, opt, ones);
  const keep = opt.predicted <= atOnes.tokensPerSec * (1 + THRESHOLD_HYSTERESIS);
  const chosen = keep ? ones : opt.best;
  const named = (t: readonly number[]) => Object.fromEntries(laneOrder.map((l, i) => [l, t[i]]));
  return {
    mode: { label: 'tokenrouter', mode: 'async-delayed', retainState: true, thresholds: named(chosen) },
    predicted: keep ? atOnes.tokensPerSec : opt.predicted,
    best_predicted: { thresholds: named(opt.best), predicted_tok_s: opt.predicted },
    table: opt.table.slice(0, 8).map((r) => ({ thresholds: named(r.thresholds), predicted_tok_s: r.tokensPerSec })),
    P: est.P,
    C: est.C,
    latency_ms: Object.fromEntries(laneOrder.map((l, i) => [l, profile.alone.table[i]])),
    contended_latency_ms: Object.fromEntries(laneOrder.map((l, i) => [l, profile.contended.table[i]])),
  };
}

/** Runs the calibration (async-delayed, all thresholds 1, state retained) and solves for the thresholds. */
export async function modelThresholds(set: RunnerSet, c: Omit<ServingCase, 'mode'>): Promise<ModelChoice> {
  const lanes = Object.keys(c.lanes);
  const cal = await runServingCase(set, { ...c, mode: { label: 'calibration', mode: 'async-delayed', retainState: true }, recordRouting: true });
  return { ...chooseThresholds(cal, lanes, c.concurrency, c.maxBatch), calibration_tok_s: cal.run.metrics.outputThroughputTokS };
}
