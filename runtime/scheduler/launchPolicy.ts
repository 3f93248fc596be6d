// Pure launch decisions per scheduling mode: the scheduler decides, the sub-server executes.
import type { SchedulingMode } from './schedulingMode.ts';

/** What a policy may read about a sub-server. */
export interface LaneView {
  readonly index: number;
  readonly readyCount: number;
  readonly threshold: number;
  readonly executing: boolean;
}

/**
 * Async modes decide per lane from local state alone. Sync modes keep a barrier: a round grants
 * launches (step-sync: every lane with work; model-sync: one lane, round-robin) and the next
 * round opens only when every granted batch has finished.
 */
export class LaunchPolicy {
  private granted: boolean[] = [];
  private outstanding = 0;
  private roundOpen = false;
  private nextLane = 0;

  constructor(readonly mode: SchedulingMode) {}

  mayLaunch(lane: LaneView): boolean {
    switch (this.mode) {
      case 'async-immediate':
        return lane.readyCount > 0;
      case 'async-delayed':
        return lane.readyCount >= lane.threshold;
      default:
        return this.granted[lane.index] === true && lane.readyCount > 0;
    }
  }

  mayLaunchAtDeadline(lane: LaneView): boolean {
    return this.mode === 'async-delayed' ? lane.readyCount > 0 : this.mayLaunch(lane);
  }

  /** A barrier kept elsewhere (the entry's, for an engine in its own thread) granted this lane a launch. */
  grant(index: number): void {
    this.granted[index] = true;
  }

  /** A lane started a batch. */
  launched(lane: LaneView): void {
    if (this.mode === 'step-sync' || this.mode === 'model-sync') this.granted[lane.index] = false;
  }

  /** A lane's batch finished, after its results were routed. */
  finished(): void {
    if (this.roundOpen && --this.outstanding === 0) this.roundOpen = false;
  }

  /**
   * For sync modes: open a round if none is running and there is work. Returns the lanes to wake
   * (empty for async modes, which need no barrier).
   */
  openRound(lanes: readonly LaneView[]): number[] {
    if (this.mode !== 'step-sync' && this.mode !== 'model-sync') return [];
    if (this.roundOpen) return [];
    const withWork = lanes.filter((l) => l.readyCount > 0 && !l.executing);
    if (withWork.length === 0) return [];
    let chosen: LaneView[];
    if (this.mode === 'step-sync') chosen = withWork;
    else {
      // Round-robin from the lane after the last one served, so no model starves.
      const k = lanes.length;
      let pick = withWork[0];
      for (let d = 0; d < k; d++) {
        const cand = lanes[(this.nextLane + d) % k];
        if (cand.readyCount > 0 && !cand.executing) {
          pick = cand;
          break;
        }
      }
      this.nextLane = (pick.index + 1) % k;
      chosen = [pick];
    }
    for (const l of chosen) this.granted[l.index] = true;
    this.outstanding = chosen.length;
    this.roundOpen = true;
    return chosen.map((l) => l.index);
  }
}
