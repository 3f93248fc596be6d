// A closed-loop load in virtual time: N clients, each sending its next request when the last one ends.
import type { Algorithm } from '../../shared/algorithm.ts';
import type { VirtualClock } from '../clock/virtualClock.ts';
import type { Cluster } from '../entry/cluster.ts';
import type { RequestResult } from '../entry/requestState.ts';

export interface ClosedLoopOptions {
  concurrency: number;
  requests: number;
  promptLength: number;
  maxTokens: number;
  /** Called every `progressEvery` completions. */
  onProgress?: (done: number, total: number) => void;
  /** Keep per-request results (memory grows with the count); default true. */
  keepResults?: boolean;
  /** Request i's own algorithm and output cap, when they differ per request (a replayed trace). */
  perRequest?: (i: number) => { algorithm: Algorithm<unknown>; maxTokens: number };
}

export interface ClosedLoopReport {
  committed: number;
  /** First dispatch to last completion, clock ms. */
  spanMs: number;
  throughputTokS: number;
  meanE2eMs: number;
  p99E2eMs: number;
  meanTtftMs: number;
  results: RequestResult[];
  completed: number;
}

export function runClosedLoop(cluster: Cluster, clock: VirtualClock, algorithm: Algorithm<unknown>, opts: ClosedLoopOptions): ClosedLoopReport {
  let sent = 0;
  let completed = 0;
  let committed = 0;
  const e2e: number[] = [];
  let ttftSum = 0;
  const results: RequestResult[] = [];
  const t0 = clock.now();
  let tEnd = t0;
  const send = () => {
    const i = sent++;
    const prompt = Array.from({ length: opts.promptLength }, (_, j) => 4 + ((i * 31 + j * 7) % 90));
    const own = opts.perRequest?.(i);
    cluster.submit({
      id: `c${i}`,
      prompt,
      maxTokens: own?.maxTokens ?? opts.maxTokens,
      sampling: { seed: i },
      algorithm: own?.algorithm ?? algorithm,
      onEnd: (r) => {
        completed++;
        committed += r.tokens.length;
        e2e.push(r.endedAt - r.submittedAt);
        ttftSum += (r.firstTokenAt ?? r.endedAt) - r.submittedAt;
        tEnd = r.endedAt;
        if (opts.keepResults !== false) results.push(r);
        if (opts.onProgress && completed % Math.max(1, Math.floor(opts.requests / 20)) === 0) opts.onProgress(completed, opts.requests);
        if (sent < opts.requests) send();
      },
    });
  };
  for (let c = 0; c < Math.min(opts.concurrency, opts.requests); c++) send();
  clock.run({ stop: () => completed === opts.requests });
  if (completed !== opts.requests) throw new Error(`closed loop stalled: ${completed}/${opts.requests} done at t=${clock.now()}`);
  const spanMs = tEnd - t0;
  const sorted = e2e.slice().sort((a, b) => a - b);
  return {
    committed,
    spanMs,
    throughputTokS: (committed / spanMs) * 1000,
    meanE2eMs: e2e.reduce((a, b) => a + b, 0) / e2e.length,
    p99E2eMs: sorted[Math.min(sorted.length - 1, Math.ceil(0.99 * sorted.length) - 1)],
    meanTtftMs: ttftSum / completed,
    results,
    completed,
  };
}
