// The serving policy of the baselines: the sync modes' rounds at the entry and their engines' launch rule, async-immediate's; no-retain; feasible thresholds.
import { SCHEDULING_MODES } from '../../shared/protocol/engineControl.ts';
import { TokenRouterError } from '../errors.ts';

export { SCHEDULING_MODES };
export type SchedulingMode = (typeof SCHEDULING_MODES)[number];

/** An engine the entry's rounds may let launch (`grant`), wherever it runs. */
export interface RoundEngine {
  readonly index: number;
  readonly readyCount: number;
  readonly executing: boolean;
  grant(): void;
}

/** The entry's side, the sync modes' rounds: open the next if none runs and some engine has work; `n` steps a round let launch came back. */
export interface Rounds {
  open(engines: readonly RoundEngine[]): void;
  finished(n: number): void;
}

const NO_ROUNDS: Rounds = { open() {}, finished() {} };

/** The sync barrier: a round lets engines launch (step-sync: all with work; model-sync: one, round-robin); the next opens when all came back. */
class SyncRounds implements Rounds {
  /** Steps the running round let launch that have not come back (0: no round is running). */
  private outstanding = 0;
  private nextEngine = 0;

  constructor(private readonly oneModel: boolean) {}

  open(engines: readonly RoundEngine[]): void {
    if (this.outstanding > 0) return;
    const free = (l: RoundEngine) => l.readyCount > 0 && !l.executing;
    let chosen = engines.filter(free);
    if (chosen.length === 0) return;
    if (this.oneModel) {
      // round-robin from the engine after the last one served, so no model starves
      let at = this.nextEngine;
      while (!free(engines[at % engines.length])) at++;
      const pick = engines[at % engines.length];
      this.nextEngine = (pick.index + 1) % engines.length;
      chosen = [pick];
    }
    this.outstanding = chosen.length;
    for (const l of chosen) l.grant();
  }

  finished(n: number): void {
    this.outstanding = Math.max(0, this.outstanding - n);
  }
}

/** An engine's launch rule in a baseline mode, once requests are ready: async-immediate launches at once; a sync mode once per round the entry grants. */
export interface BaselineLaunch {
  mayLaunch(): boolean;
  launched(): void;
  /** The entry's round lets this engine launch one step. */
  allow(): void;
}

/** The engine's side of `mode`; undefined for async-delayed, the product, whose rule the engine loop states (engineHost.ts, `mayLaunch`). */
export function baselineLaunch(mode: SchedulingMode): BaselineLaunch | undefined {
  if (mode === 'async-delayed') return undefined;
  if (mode === 'async-immediate') return { mayLaunch: () => true, launched() {}, allow() {} };
  let allowed = false;
  return {
    mayLaunch: () => allowed,
    launched: () => void (allowed = false),
    allow: () => void (allowed = true),
  };
}

/** The entry's side of `mode`: rounds in the sync modes, none in the async ones; each engine's side is its `baselineLaunch`. */
export function entryRounds(mode: SchedulingMode): Rounds {
  return keepsOneReplica(mode) ? new SyncRounds(mode === 'model-sync') : NO_ROUNDS;
}

/** Sync modes keep to one replica of a remote model: their round counts one step per engine. */
export function keepsOneReplica(mode: SchedulingMode): boolean {
  return mode === 'step-sync' || mode === 'model-sync';
}

/**
 * Feasible thresholds (async-delayed): each within its max batch; Σ(T_i − 1) < N, or every model may wait just below its threshold
 * for ever; and a finite max-wait when any T > 1, since fewer than N are in flight whenever traffic thins out.
 */
export function validateThresholds(
  mode: SchedulingMode,
  models: readonly { name: string; maxBatch: number }[],
  thresholds: readonly number[],
  concurrency: number,
  maxWaitMs: number,
): void {
  if (mode !== 'async-delayed') return;
  const refuse = (message: string, param = 'thresholds') => {
    throw new TokenRouterError('infeasible_thresholds', message, param);
  };
  models.forEach((l, i) => {
    if (thresholds[i] > l.maxBatch) refuse(`threshold ${thresholds[i]} of ${l.name} exceeds its max batch ${l.maxBatch}`);
  });
  if (Number.isFinite(concurrency)) {
    thresholds.forEach((t, i) => {
      if (!Number.isInteger(t) || t < 1) refuse(`threshold of ${models[i]?.name ?? `model ${i + 1}`} must be an integer ≥ 1, got ${t}`);
    });
    const slack = thresholds.reduce((s, t) => s + (t - 1), 0);
    if (slack >= concurrency)
      refuse(
        `thresholds [${thresholds.join(', ')}] are infeasible at concurrency ${concurrency}: Σ(T_i − 1) = ${slack} must be < ${concurrency}, or every model can wait on the others forever`,
      );
  }
  if (thresholds.some((t) => t > 1) && !Number.isFinite(maxWaitMs)) refuse('thresholds above 1 need a finite max-wait deadline (maxWaitMs)', 'maxWaitMs');
}
