// Suite sim-modes: the paper's R2R setting in virtual time, all four scheduling modes and the re-init baseline.
import { VirtualClock } from '../../runtime/clock/virtualClock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import type { SchedulingMode } from '../../runtime/core/servingPolicy.ts';
import { runClosedLoop, type ClosedLoopReport } from '../../runtime/sim/closedLoop.ts';
import { markovAlgorithm, r2rMarkov } from '../../runtime/sim/markovAlgorithm.ts';
import { PAPER_R2R_PROFILE, profileRunners } from '../../runtime/sim/paperProfile.ts';
import { progress } from '../../runtime/util/progressLine.ts';
import type { BenchOptions, BenchReport } from './benchSuite.ts';
import { printTable } from '../../runtime/util/table.ts';

export interface SimCase {
  mode: SchedulingMode;
  retainState: boolean;
  concurrency: number;
  thresholds?: Record<string, number>;
}

export const SIM_SETTINGS = {
  p: 0.35,
  profile: PAPER_R2R_PROFILE,
  promptLength: 128,
  maxTokens: 512,
  requestsPerClient: 4,
  maxWaitMs: 100,
  maxBatch: 64,
  prefixCache: false,
};

export function simulate(c: SimCase, s = SIM_SETTINGS): ClosedLoopReport {
  const clock = new VirtualClock();
  const runners = profileRunners(s.profile);
  const cluster = new Cluster({
    clock,
    mode: c.mode,
    retainState: c.retainState,
    maxConcurrency: c.concurrency,
    maxWaitMs: s.maxWaitMs,
    prefixCache: s.prefixCache,
    models: [...runners].map(([name, runner]) => ({ name, runner, maxBatch: s.maxBatch, threshold: c.thresholds?.[name] ?? 1 })),
  });
  return runClosedLoop(cluster, clock, markovAlgorithm(r2rMarkov(s.p)), {
    concurrency: c.concurrency,
    requests: c.concurrency * s.requestsPerClient,
    promptLength: s.promptLength,
    maxTokens: s.maxTokens,
    keepResults: false,
  });
}

/** Sweeps the large model's threshold 1..N (small at 1) and returns the best. */
export function sweepLargeThreshold(
  concurrency: number,
  s = SIM_SETTINGS,
): { threshold: number; report: ClosedLoopReport; sweep: { threshold: number; tok_s: number }[] } {
  let best: { threshold: number; report: ClosedLoopReport } | null = null;
  const sweep: { threshold: number; tok_s: number }[] = [];
  for (let t = 1; t <= concurrency; t++) {
    const report = simulate({ mode: 'async-delayed', retainState: true, concurrency, thresholds: { small: 1, large: t } }, s);
    sweep.push({ threshold: t, tok_s: report.throughputTokS });
    if (!best || report.throughputTokS > best.report.throughputTokS) best = { threshold: t, report };
  }
  return { ...best!, sweep };
}

export async function run(opts: BenchOptions): Promise<BenchReport> {
  const concurrencies = (opts.flags.concurrency ?? '4,16').split(',').map(Number);
  const rows: Record<string, unknown>[] = [];
  const sweeps: Record<string, unknown> = {};
  const steps = concurrencies.length * 5;
  let done = 0;
  for (const n of concurrencies) {
    const cases: [SchedulingMode, boolean][] = [
      ['step-sync', true],
      ['model-sync', true],
      ['async-immediate', true],
    ];
    for (const [mode, retainState] of cases) {
      const r = simulate({ mode, retainState, concurrency: n });
      rows.push({ mode, retainState, concurrency: n, thresholds: '1/1', throughput_tok_s: r.throughputTokS, mean_e2e_ms: r.meanE2eMs });
      progress(`sim-modes N=${n}`, ++done, steps);
    }
    const best = sweepLargeThreshold(n);
    sweeps[`N=${n}`] = best.sweep;
    rows.push({
      mode: 'async-delayed',
      retainState: true,
      concurrency: n,
      thresholds: `1/${best.threshold}`,
      throughput_tok_s: best.report.throughputTokS,
      mean_e2e_ms: best.report.meanE2eMs,
    });
    progress(`sim-modes N=${n}`, ++done, steps);
    const base = simulate({ mode: 'step-sync', retainState: false, concurrency: n });
    rows.push({ mode: 'step-sync', retainState: false, concurrency: n, thresholds: '1/1', throughput_tok_s: base.throughputTokS, mean_e2e_ms: base.meanE2eMs });
    progress(`sim-modes N=${n}`, ++done, steps);
  }
  rows.sort((a, b) => (a.concurrency as number) - (b.concurrency as number) || (b.throughput_tok_s as number) - (a.throughput_tok_s as number));
  // The figures are simulated: a reader comparing them with the served suites' must not take them for this machine's.
  console.log("virtual time: simulated runners with the paper's R2R step costs, not this machine's speed (tok/s and ms are simulated)");
  printTable(rows);
  return {
    suite: 'sim-modes',
    settings: { ...SIM_SETTINGS, concurrencies, clock: 'virtual', runner: 'simulated', requests: `${SIM_SETTINGS.requestsPerClient} per client, closed loop` },
    results: { rows, threshold_sweeps: sweeps },
  };
}
