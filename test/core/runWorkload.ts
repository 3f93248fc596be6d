// Drives a cluster on a virtual clock through a batch of requests and collects their results.
import type { Algorithm } from '../../shared/algorithm.ts';
import type { VirtualClock } from '../../runtime/clock/virtualClock.ts';
import type { Cluster } from '../../runtime/entry/cluster.ts';
import type { RequestResult } from '../../runtime/entry/requestState.ts';
import type { SamplingParams } from '../../runtime/runner/modelRunner.ts';

export interface WorkloadRequest {
  id: string;
  prompt: number[];
  maxTokens: number;
  sampling?: Partial<SamplingParams>;
}

/**
 * Submits every request at time 0 (the cluster's concurrency limit keeps N in flight, a closed
 * system) and runs the clock until all are done. Throws if the clock runs dry first: a deadlock.
 */
export function runWorkload(
  cluster: Cluster,
  clock: VirtualClock,
  algorithm: Algorithm<unknown>,
  requests: readonly WorkloadRequest[],
  opts: { maxTimers?: number } = {},
): RequestResult[] {
  const results = new Map<string, RequestResult>();
  for (const r of requests) {
    cluster.submit({ id: r.id, prompt: r.prompt, maxTokens: r.maxTokens, sampling: r.sampling, algorithm, onEnd: (res) => results.set(res.id, res) });
  }
  clock.run({ stop: () => results.size === requests.length, maxTimers: opts.maxTimers });
  if (results.size !== requests.length) {
    const stuck = requests.filter((r) => !results.has(r.id)).map((r) => r.id);
    throw new Error(`workload stalled at t=${clock.now()}: ${stuck.length} requests unfinished (${stuck.slice(0, 5).join(', ')}…)`);
  }
  return requests.map((r) => results.get(r.id)!);
}
