// Steady-state throughput of a closed system: N clients that never stop, measured after a warm-up window.
import type { Algorithm } from '../../shared/algorithm.ts';
import type { VirtualClock } from '../../runtime/clock/virtualClock.ts';
import type { Cluster } from '../../runtime/entry/cluster.ts';

export interface SteadyOptions {
  concurrency: number;
  promptLength: number;
  maxTokens: number;
  warmupMs: number;
  horizonMs: number;
  /** Called at each virtual-time tick of `everyMs` (e.g. to change routing halfway). */
  onTick?: (now: number) => void;
  everyMs?: number;
}

/**
 * The throughput model describes a closed system in equilibrium; a finite workload has a start-up
 * and a tail with fewer than N requests. Here clients resubmit forever and only tokens committed
 * in [warmup, horizon] count, so measurement and model describe the same thing.
 */
export function measureSteady(
  cluster: Cluster,
  clock: VirtualClock,
  algorithm: Algorithm<unknown> | (() => Algorithm<unknown>),
  opts: SteadyOptions,
): { tokS: number; committed: number } {
  let sent = 0;
  let counted = 0;
  const pick = typeof algorithm === 'function' ? algorithm : () => algorithm;
  const send = () => {
    const i = sent++;
    cluster.submit({
      id: `s${i}`,
      prompt: Array.from({ length: opts.promptLength }, (_, j) => 4 + ((i * 31 + j * 7) % 90)),
      maxTokens: opts.maxTokens,
      sampling: { seed: i },
      algorithm: pick(),
      onToken: () => {
        const t = clock.now();
        if (t >= opts.warmupMs && t < opts.horizonMs) counted++;
      },
      onEnd: () => {
        if (clock.now() < opts.horizonMs) send();
      },
    });
  };
  for (let c = 0; c < opts.concurrency; c++) send();
  if (opts.onTick && opts.everyMs) {
    const tick = () => {
      opts.onTick!(clock.now());
      if (clock.now() + opts.everyMs! < opts.horizonMs) clock.setTimeout(tick, opts.everyMs!);
    };
    clock.setTimeout(tick, opts.everyMs);
  }
  clock.run({ until: opts.horizonMs });
  for (const req of [...cluster.activeRequests()]) cluster.cancel(req.id);
  return { tokS: (counted / (opts.horizonMs - opts.warmupMs)) * 1000, committed: counted };
}
