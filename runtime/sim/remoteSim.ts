// A simulated model on another host, in virtual time: each step reaches it a one-way delay after it is sent and its answer takes one back.
import type { VirtualClock } from '../clock/virtualClock.ts';
import type { ModelInfo, ModelRunner, StepOutput, StepRow } from '../runner/modelRunner.ts';
import type { SimRunner } from '../runner/simRunner.ts';

/**
 * Wraps a simulated runner (which reports each step's duration): a step arrives `outMs` after it
 * is sent, waits behind the steps before it (one model, one step at a time), runs, and its answer
 * arrives `backMs` later. Tokens come from the wrapped model, so they depend only on what was fed.
 * What the network costs the scheduler, free of wake-ups and timer slack.
 */
export class RemoteSim implements ModelRunner {
  private freeAt = 0;
  /** Steps sent and not yet answered, now and at most. */
  inFlight = 0;
  maxInFlight = 0;

  constructor(
    private readonly inner: SimRunner,
    private readonly clock: VirtualClock,
    private readonly outMs: number,
    private readonly backMs: number,
    readonly pipelineDepth: number,
  ) {}

  get info(): ModelInfo {
    return this.inner.info;
  }

  step(rows: readonly StepRow[]): StepOutput {
    const now = this.clock.now();
    const out = this.inner.step(rows) as StepOutput;
    const start = Math.max(now + this.outMs, this.freeAt);
    this.freeAt = start + (out.durationMs ?? 0);
    const answerIn = this.freeAt + this.backMs - now;
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    this.clock.setTimeout(() => this.inFlight--, answerIn);
    return { rows: out.rows, durationMs: answerIn };
  }

  release(cacheId: number): void {
    this.inner.release(cacheId);
  }

  fork(source: number, target: number, tokens: number): boolean {
    return this.inner.fork(source, target, tokens);
  }
}
