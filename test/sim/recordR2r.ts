// Test helper: an R2R run (p = 0.35 unless given) on the paper profile in virtual time, async-delayed, thresholds 1/1, every trace event kept.
import { VirtualClock } from '../../runtime/clock/virtualClock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import { runClosedLoop, type ClosedLoopReport } from '../../runtime/sim/closedLoop.ts';
import { markovAlgorithm, r2rMarkov } from '../../runtime/sim/markovAlgorithm.ts';
import { PAPER_R2R_PROFILE, profileRunners } from '../../runtime/sim/paperProfile.ts';
import { TraceRecorder } from '../../runtime/trace/traceRecorder.ts';
import type { TraceEvent } from '../../shared/trace.ts';

export function recordR2r(opts: { concurrency: number; requests: number; promptLength: number; maxTokens: number; maxWaitMs: number; p?: number }): {
  events: readonly TraceEvent[];
  report: ClosedLoopReport;
} {
  const clock = new VirtualClock();
  const trace = new TraceRecorder();
  const cluster = new Cluster({
    clock,
    mode: 'async-delayed',
    retainState: true,
    maxConcurrency: opts.concurrency,
    maxWaitMs: opts.maxWaitMs,
    trace,
    models: [...profileRunners(PAPER_R2R_PROFILE)].map(([name, runner]) => ({ name, runner, maxBatch: 64, threshold: 1 })),
  });
  const report = runClosedLoop(cluster, clock, markovAlgorithm(r2rMarkov(opts.p ?? 0.35)), opts);
  return { events: trace.events, report };
}
