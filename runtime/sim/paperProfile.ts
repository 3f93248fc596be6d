// The paper's R2R latency profile as simulated runners: per-step cost plus a per-token prefill/extend charge.
import { SimRunner, type SimRunnerOptions } from '../runner/simRunner.ts';

export interface LatencyProfile {
  /** Step latency by model name, ms (constant in batch size unless `perRowMs` is set). */
  stepMs: Record<string, number>;
  /** Extra ms per row in a batch (0 = the paper's constant-latency profile). */
  perRowMs?: Record<string, number>;
  /** ms per token fed beyond the one a decode row feeds: what prefill and extend cost. */
  prefillMsPerToken: Record<string, number>;
}

export const PAPER_R2R_PROFILE: LatencyProfile = {
  stepMs: { small: 6.0, large: 27.9 },
  prefillMsPerToken: { small: 0.01, large: 0.1 },
};

export function profileRunners(profile: LatencyProfile, opts: Pick<SimRunnerOptions, 'maxContext'> = {}): Map<string, SimRunner> {
  const runners = new Map<string, SimRunner>();
  for (const [name, step] of Object.entries(profile.stepMs)) {
    const perRow = profile.perRowMs?.[name] ?? 0;
    const perToken = profile.prefillMsPerToken[name] ?? 0;
    runners.set(name, new SimRunner({ name, maxContext: opts.maxContext, latency: (b, fed) => step + perRow * b + perToken * Math.max(0, fed - b) }));
  }
  return runners;
}
