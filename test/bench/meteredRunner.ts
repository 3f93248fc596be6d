// A ModelRunner wrapper for benchmarks: one runner outlives every server a suite starts (close is a no-op, shutdown ends it).
import type { Clock } from '../../runtime/clock/clock.ts';
import type { ModelInfo, ModelRunner, StepOutput, StepRow } from '../../runtime/runner/modelRunner.ts';

export class MeteredRunner implements ModelRunner {
  readonly info: ModelInfo;
  readonly label: string;

  constructor(
    readonly inner: ModelRunner,
    opts: { label?: string } = {},
  ) {
    this.label = opts.label ?? inner.info.name;
    this.info = inner.info;
  }

  step(rows: readonly StepRow[]): PromiseLike<StepOutput> {
    return this.inner.step(rows);
  }

  useClock(clock: Clock): void {
    this.inner.useClock?.(clock);
  }

  release(cacheId: number): void {
    this.inner.release(cacheId);
  }

  fork(source: number, target: number, tokens: number): boolean {
    return this.inner.fork(source, target, tokens);
  }

  onFailure(listener: (error: Error) => void): void {
    this.inner.onFailure?.(listener);
  }

  /** A server closing must not stop a runner the next server reuses: `shutdown` does that. */
  async close(): Promise<void> {}

  async shutdown(): Promise<void> {
    await this.inner.close?.();
  }
}
