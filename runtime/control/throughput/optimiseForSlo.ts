// The SLO-aware optimiser: thresholds and max-wait that maximise goodput within the SLO.
//
// The SLO-aware optimiser: thresholds and max-wait deadline that maximise goodput at an offered
// rate while the predicted p99 TPOT / TTFT stay within the SLO, or a plain answer that none can.
import { feasibleThresholds, type FixedThresholds } from './feasibleThresholds.ts';
import { predictLatency, type LatencyOptions } from './latencyModel.ts';
import type { LatencyInput, LatencyLoad, LatencySlo } from './simulateLatency.ts';

/** Deadlines tried by default, ms: from "barely wait" to the runtime's default of 100. */
export const DEFAULT_MAX_WAIT_CHOICES = [2, 5, 10, 20, 50, 100];

/** Candidates whose predicted goodput is within this fraction of the best are ties: the lowest p99 TPOT wins (margin to the SLO). */
const GOODPUT_TIE = 0.01;

export interface SloCandidate {
  thresholds: number[];
  maxWaitMs: number;
  goodputReqS: number;
  throughputTokS: number;
  p99TpotMs: number;
  p99TtftMs: number;
  meanQueueMs: number;
  /** Predicted p99s within every p99 bound of the SLO. */
  meetsSlo: boolean;
}

export interface SloChoice {
  best: SloCandidate;
  /** False: no candidate meets the SLO at this load; `best` is then the one with the most goodput. */
  meetsSlo: boolean;
  /** Every candidate, best goodput first. */
  table: SloCandidate[];
}

export interface SloOptimiseOptions extends LatencyOptions {
  fixed?: FixedThresholds;
  maxWaitChoices?: readonly number[];
  /**
   * Past this many threshold × deadline candidates (default 300), thresholds are tried on the ladder
   * 1, 2, 3, 4, 6, 8, 12, 16, … only: each candidate is a few simulated runs, so a large N or many
   * models would otherwise cost minutes.
   */
  maxCandidates?: number;
}

/** 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, …: every value up to 4, then two per doubling. */
const onLadder = (t: number) => t <= 4 || [2, 3].some((m) => Number.isInteger(Math.log2(t / m)));

/** The p99 bounds the SLO names: the optimiser's constraint (goodput itself counts per request). */
export function meetsP99Slo(c: { p99TpotMs: number; p99TtftMs: number }, slo: LatencySlo): boolean {
  return !(slo.tpotMs !== undefined && c.p99TpotMs > slo.tpotMs) && !(slo.ttftMs !== undefined && c.p99TtftMs > slo.ttftMs);
}

/** Chooses among candidates already priced (the optimiser's table, or a measured sweep). */
export function chooseForSlo<T extends { goodputReqS: number; p99TpotMs: number; p99TtftMs: number }>(
  rows: readonly T[],
  slo: LatencySlo,
): { best: T; meetsSlo: boolean } {
  const ok = rows.filter((r) => meetsP99Slo(r, slo));
  const pool = ok.length > 0 ? ok : rows;
  const top = Math.max(...pool.map((r) => r.goodputReqS));
  const near = pool.filter((r) => r.goodputReqS >= top * (1 - GOODPUT_TIE));
  const best = near.reduce((a, b) => (b.p99TpotMs < a.p99TpotMs ? b : a));
  return { best, meetsSlo: ok.length > 0 };
}

export function optimiseForSlo(
  input: Omit<LatencyInput, 'thresholds' | 'maxWaitMs'>,
  load: LatencyLoad,
  slo: LatencySlo,
  opts: SloOptimiseOptions = {},
): SloChoice {
  const table: SloCandidate[] = [];
  const waits = opts.maxWaitChoices ?? DEFAULT_MAX_WAIT_CHOICES;
  let vectors = feasibleThresholds(
    input.maxBatch.map((b) => Math.min(b, input.N)),
    input.N,
    opts.fixed ?? {},
  );
  if (vectors.length * waits.length > (opts.maxCandidates ?? 300)) vectors = vectors.filter((t) => t.every(onLadder));
  for (const thresholds of vectors) {
    // All thresholds 1 never wait, so the deadline cannot matter: price it once.
    for (const maxWaitMs of thresholds.every((t) => t === 1) ? [waits[0]] : waits) {
      const p = predictLatency({ ...input, thresholds, maxWaitMs }, load, slo, opts);
      const row = {
        thresholds,
        maxWaitMs,
        goodputReqS: p.goodputReqS,
        throughputTokS: p.throughputTokS,
        p99TpotMs: p.p99TpotMs,
        p99TtftMs: p.p99TtftMs,
        meanQueueMs: p.meanQueueMs,
      };
      table.push({ ...row, meetsSlo: meetsP99Slo(row, slo) });
    }
  }
  table.sort((a, b) => b.goodputReqS - a.goodputReqS);
  const { best, meetsSlo } = chooseForSlo(table, slo);
  return { best, meetsSlo, table };
}
