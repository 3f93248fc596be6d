// The serving policy: when an engine may launch (immediate, delayed, step-sync, model-sync) and whether a request's state stays behind a handoff (no-retain).
import type { SchedulingMode } from './schedulingMode.ts';

/** What a policy reads about an engine's lane. */
export interface LaneView {
  readonly index: number;
  readonly readyCount: number;
  readonly threshold: number;
  readonly executing: boolean;
}

/** An engine's side of the policy: what its loop asks before it launches a step. One per engine. */
export interface LaunchRule {
  /** A step may start now. */
  mayLaunch(lane: LaneView): boolean;
  /** A step may start once the max-wait deadline has passed (delayed batching launches below threshold then; a sync round still waits). */
  mayLaunchLate(lane: LaneView): boolean;
  /** A step started. */
  launched(): void;
  /** The entry's round lets this engine launch one step (sync modes). */
  allow(): void;
}

/** A lane the entry's rounds may let launch, wherever its engine runs. */
export interface RoundLane extends LaneView {
  /** Tells the engine its round lets it launch one step. */
  grant(): void;
}

/** The entry's side: the round that sync modes keep across every engine. */
export interface Rounds {
  /** Opens the next round if none is running and some lane has work: lets its lanes launch. */
  open(lanes: readonly RoundLane[]): void;
  /** `n` steps that a round let launch came back and their results were routed. */
  finished(n: number): void;
}

export interface ServingPolicy {
  readonly mode: SchedulingMode;
  /**
   * TokenRouter keeps a request's KV on an engine it leaves, so a return feeds only what that engine
   * has not seen; standard serving (no-retain, the paper's baseline) drops it, and each handoff
   * carries the whole context for the next engine to prefill.
   */
  readonly retain: boolean;
  readonly launch: LaunchRule;
  readonly rounds: Rounds;
}

const NO_ROUNDS: Rounds = { open() {}, finished() {} };

/** Async modes decide from the engine's own lane: past the max-wait deadline any ready request launches. */
const asyncRule = (mayLaunch: (lane: LaneView) => boolean): LaunchRule => ({
  mayLaunch,
  mayLaunchLate: (lane) => lane.readyCount > 0,
  launched() {},
  allow() {},
});
/** Async immediate: a step starts as soon as a request is ready. */
const IMMEDIATE = asyncRule((lane) => lane.readyCount > 0);
/** Async delayed (the product): a step waits for `threshold` ready requests, or for the max-wait deadline. */
const DELAYED = asyncRule((lane) => lane.readyCount >= lane.threshold);

/** Sync modes: an engine launches only when the entry's round lets it, once per round, deadline or not. */
class AllowedOnce implements LaunchRule {
  private allowed = false;
  mayLaunch(lane: LaneView): boolean {
    return this.allowed && lane.readyCount > 0;
  }
  mayLaunchLate(lane: LaneView): boolean {
    return this.mayLaunch(lane);
  }
  launched(): void {
    this.allowed = false;
  }
  allow(): void {
    this.allowed = true;
  }
}

/**
 * The barrier of the sync baselines: a round lets lanes launch (step-sync: every lane with work;
 * model-sync: one, round-robin) and the next opens only when every step it let launch came back.
 */
class SyncRounds implements Rounds {
  private outstanding = 0;
  private running = false;
  private nextLane = 0;

  constructor(private readonly oneModel: boolean) {}

  open(lanes: readonly RoundLane[]): void {
    if (this.running) return;
    const free = (l: RoundLane) => l.readyCount > 0 && !l.executing;
    const withWork = lanes.filter(free);
    if (withWork.length === 0) return;
    let chosen = withWork;
    if (this.oneModel) {
      // round-robin from the lane after the last one served, so no model starves
      const k = lanes.length;
      let pick = withWork[0];
      for (let d = 0; d < k; d++) {
        const cand = lanes[(this.nextLane + d) % k];
        if (free(cand)) {
          pick = cand;
          break;
        }
      }
      this.nextLane = (pick.index + 1) % k;
      chosen = [pick];
    }
    this.outstanding = chosen.length;
    this.running = true;
    for (const l of chosen) l.grant();
  }

  finished(n: number): void {
    for (let i = 0; i < n; i++) if (this.running && --this.outstanding === 0) this.running = false;
  }
}

/** The policy of `mode`, with `retain` (false: standard serving). Each call makes fresh state: one per engine, one for the entry. */
export function servingPolicy(mode: SchedulingMode, retain: boolean): ServingPolicy {
  switch (mode) {
    case 'async-immediate':
      return { mode, retain, launch: IMMEDIATE, rounds: NO_ROUNDS };
    case 'async-delayed':
      return { mode, retain, launch: DELAYED, rounds: NO_ROUNDS };
    case 'step-sync':
    case 'model-sync':
      return { mode, retain, launch: new AllowedOnce(), rounds: new SyncRounds(mode === 'model-sync') };
  }
}

/** Sync modes keep to one replica of a remote model: their round counts one step per engine. */
export function keepsOneReplica(mode: SchedulingMode): boolean {
  return mode === 'step-sync' || mode === 'model-sync';
}
