// Suite dtmc-validate: the throughput model's predictions against the runtime measured in virtual time.
import { VirtualClock } from '../../runtime/clock/virtualClock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import { SimRunner } from '../../runtime/runner/simRunner.ts';
import { markovAlgorithm, r2rMarkov, type MarkovSpec } from '../../runtime/sim/markovAlgorithm.ts';
import { measureSteady } from '../support/steadyState.ts';
import { feasibleThresholds, solveThroughput } from '../../runtime/control/throughput/index.ts';
import { progress } from '../../runtime/util/progressLine.ts';
import type { BenchOptions, BenchReport } from './benchSuite.ts';
import { printTable } from '../../runtime/util/table.ts';

export interface ValidationSetting {
  name: string;
  N: number;
  spec: MarkovSpec;
  /** Step latency by model index and batch size. */
  latency: (model: number, batch: number) => number;
  /** Threshold vectors to compare. */
  candidates: number[][];
}

/** C[i][j] from the Markov spec: a step that stays commits 1, a switch commits 1 only if kept. */
export function commitMatrix(spec: MarkovSpec): number[][] {
  return spec.P.map((row, i) => row.map((_, j) => (i === j || spec.keep[i][j] ? 1 : 0)));
}

export function measure(s: ValidationSetting, thresholds: number[], horizonMs: number): number {
  const clock = new VirtualClock();
  const cluster = new Cluster({
    clock,
    mode: 'async-delayed',
    maxConcurrency: s.N,
    // The model has no deadline; a long one keeps the runtime live without firing in steady state.
    maxWaitMs: 60_000,
    prefixCache: false,
    models: s.spec.models.map((name, i) => ({
      name,
      runner: new SimRunner({ name, latency: (b) => s.latency(i, b) }),
      maxBatch: s.N,
      threshold: thresholds[i],
    })),
  });
  // Requests long enough that start-up is rare; prompt prefill costs nothing here because the model has no prefill.
  return measureSteady(cluster, clock, markovAlgorithm(s.spec), { concurrency: s.N, promptLength: 8, maxTokens: 100_000, warmupMs: horizonMs / 10, horizonMs })
    .tokS;
}

export function predict(s: ValidationSetting, thresholds: number[]): number {
  return solveThroughput({
    N: s.N,
    P: s.spec.P,
    C: commitMatrix(s.spec),
    latency: s.latency,
    maxBatch: s.spec.models.map(() => s.N),
    thresholds,
  }).tokensPerSec;
}

export function settings(quick: boolean): ValidationSetting[] {
  const paper = (t: number) => (t === 0 ? 6.0 : 27.9);
  const list: ValidationSetting[] = [4, 8, 12, 16].map((N) => ({
    name: `r2r-paper N=${N}`,
    N,
    spec: r2rMarkov(0.35),
    latency: (m) => paper(m),
    candidates: Array.from({ length: N }, (_, i) => [1, i + 1]),
  }));
  list.push({
    name: 'r2r batch-dependent N=8',
    N: 8,
    spec: r2rMarkov(0.35),
    // Per-row cost: the large model's step grows with its batch, so huge thresholds stop paying.
    latency: (m, b) => (m === 0 ? 4 + 0.5 * b : 18 + 3 * b),
    candidates: Array.from({ length: 8 }, (_, i) => [1, i + 1]),
  });
  list.push({
    name: 'three models N=6',
    N: 6,
    spec: {
      models: ['small', 'medium', 'large'],
      P: [
        [0.7, 0.2, 0.1],
        [0.6, 0.3, 0.1],
        [1, 0, 0],
      ],
      keep: [
        [true, false, false],
        [true, true, false],
        [true, true, true],
      ],
    },
    latency: (m) => [5, 12, 25][m],
    candidates: feasibleThresholds([6, 6, 6], 6).filter((c) => c[0] <= 2),
  });
  return quick ? list.filter((s) => s.N <= 8) : list;
}

export async function run(opts: BenchOptions): Promise<BenchReport> {
  const quick = opts.flags.quick === 'true';
  const horizonMs = Number(opts.flags.horizon ?? (quick ? 30_000 : 120_000));
  const cases: Record<string, unknown>[] = [];
  const tables: Record<string, unknown> = {};
  const all = settings(quick);
  const total = all.reduce((a, s) => a + s.candidates.length, 0);
  let done = 0;
  for (const s of all) {
    const rows = s.candidates.map((t) => {
      const predicted = predict(s, t);
      const measured = measure(s, t, horizonMs);
      progress(s.name, ++done, total);
      return { thresholds: t.join('/'), predicted_tok_s: predicted, measured_tok_s: measured, rel_error: (predicted - measured) / measured };
    });
    const bestPred = rows.reduce((a, b) => (b.predicted_tok_s > a.predicted_tok_s ? b : a));
    const bestMeas = rows.reduce((a, b) => (b.measured_tok_s > a.measured_tok_s ? b : a));
    const gap = (bestMeas.measured_tok_s - bestPred.measured_tok_s) / bestMeas.measured_tok_s;
    const maxRel = Math.max(...rows.map((r) => Math.abs(r.rel_error)));
    console.log(`\n${s.name}`);
    printTable(rows);
    console.log(
      `predicted best ${bestPred.thresholds}, measured best ${bestMeas.thresholds}, best_gap ${(gap * 100).toFixed(2)}%, max |error| ${(maxRel * 100).toFixed(1)}%`,
    );
    tables[s.name] = rows;
    cases.push({ name: s.name, N: s.N, predicted_best: bestPred.thresholds, measured_best: bestMeas.thresholds, best_gap: gap, max_rel_error: maxRel });
  }
  console.log('');
  printTable(cases);
  return {
    suite: 'dtmc-validate',
    settings: {
      horizonMs,
      warmupMs: horizonMs / 10,
      clock: 'virtual',
      runner: 'simulated (no prefill charge: the model has none)',
      mode: 'async-delayed, maxWait 60 s',
      quick,
    },
    results: { cases, tables },
  };
}
