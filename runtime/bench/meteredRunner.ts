// A ModelRunner wrapper for benchmarks: times every step and outlives one server.
import { AheadChannel } from '../runner/aheadChannel.ts';
import type { ModelInfo, ModelRunner, StepOutput, StepRow } from '../runner/modelRunner.ts';

/** One step as the wrapper saw it, in performance.now() ms. */
export interface StepTiming {
  /** runner.step was called (rows already packed by the sub-server). */
  callMs: number;
  /** The result reached the main thread (simulated runners: when the clock delivers it). */
  resolveMs: number;
  /** Time inside the model itself (session.run + router heads), as the runner reports it. */
  modelMs: number;
  rows: number;
  tokens: number;
}

export interface MeteredRunnerOptions {
  /** Name shown in results; defaults to the inner runner's. */
  label?: string;
}

export class MeteredRunner implements ModelRunner {
  readonly info: ModelInfo;
  readonly label: string;
  /** Per-step timings; `timings = []` between runs to start afresh. */
  timings: StepTiming[] = [];
  recording = false;
  steps = 0;
  modelMs = 0;

  constructor(
    readonly inner: ModelRunner,
    opts: MeteredRunnerOptions = {},
  ) {
    this.label = opts.label ?? inner.info.name;
    this.info = inner.info;
  }

  step(rows: readonly StepRow[]): StepOutput | Promise<StepOutput> {
    const callMs = performance.now();
    const out = this.inner.step(rows);
    if (out instanceof Promise) return out.then((o) => this.done(o, callMs, rows, performance.now()));
    // A synchronous (simulated) step is delivered after durationMs on the clock: that is when it is "back".
    return this.done(out, callMs, rows, performance.now() + (out.durationMs ?? 0));
  }

  private done(o: StepOutput, callMs: number, rows: readonly StepRow[], resolveMs: number): StepOutput {
    // Simulated runners charge clock time instead of running a model: that time is their model time.
    const modelMs = o.modelMs ?? o.durationMs ?? 0;
    const inner = o.aheadStream;
    if (inner) {
      // The step runs until its lookahead stream ends: time it to then, model time included.
      const stream = new AheadChannel();
      let model = modelMs;
      inner.listen(
        (part) => {
          model += part.modelMs;
          stream.push(part);
        },
        (error) => {
          this.record(callMs, rows, performance.now(), model);
          stream.end(error);
        },
      );
      return { ...o, aheadStream: stream };
    }
    this.record(callMs, rows, resolveMs, modelMs);
    return o;
  }

  private record(callMs: number, rows: readonly StepRow[], resolveMs: number, modelMs: number): void {
    this.steps++;
    this.modelMs += modelMs;
    if (this.recording) {
      let tokens = 0;
      for (const r of rows) tokens += r.tokens.length;
      this.timings.push({ callMs, resolveMs, modelMs, rows: rows.length, tokens });
    }
  }

  release(cacheId: number): void {
    this.inner.release(cacheId);
  }

  onFailure(listener: (error: Error) => void): void {
    this.inner.onFailure?.(listener);
  }

  onCachesLost(listener: (cacheIds: readonly number[], error: Error) => void): void {
    this.inner.onCachesLost?.(listener);
  }

  onCapacityChange(listener: (kvTokens: number) => void): void {
    this.inner.onCapacityChange?.(listener);
  }

  get maxAhead(): number | undefined {
    return this.inner.maxAhead;
  }

  get pipelineDepth(): number | undefined {
    return this.inner.pipelineDepth;
  }

  yieldAhead(): void {
    this.inner.yieldAhead?.();
  }

  /** A server closing must not stop a runner the next server reuses: `shutdown` does that. */
  async close(): Promise<void> {}

  async shutdown(): Promise<void> {
    await this.inner.close?.();
  }
}
