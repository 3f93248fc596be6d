// A ModelRunner wrapper for benchmarks: times every step, can mask EOS (vLLM's min_tokens), and outlives one server.
import type { TokenSignals } from '../../shared/algorithm.ts';
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
  /**
   * Mask EOS: a sampled EOS is replaced by the most likely other token, so every request runs to
   * max_tokens (vLLM's `min_tokens = max_tokens`). Output-length benchmarks need fixed lengths.
   */
  maskEos?: boolean;
  /** Name shown in results; defaults to the inner runner's. */
  label?: string;
}

export class MeteredRunner implements ModelRunner {
  readonly info: ModelInfo;
  readonly label: string;
  private readonly maskEos: boolean;
  private readonly eos: number;
  /** Per-step timings; `timings = []` between runs to start afresh. */
  timings: StepTiming[] = [];
  recording = false;
  steps = 0;
  modelMs = 0;

  constructor(
    readonly inner: ModelRunner,
    opts: MeteredRunnerOptions = {},
  ) {
    this.maskEos = opts.maskEos ?? false;
    this.eos = inner.info.eosTokenId;
    this.label = opts.label ?? inner.info.name;
    // With EOS masked the cluster must not end requests on the EOS id either.
    this.info = this.maskEos ? { ...inner.info, eosTokenId: -1 } : inner.info;
  }

  /** The same inner runner with other options (e.g. EOS masked for one suite). */
  withOptions(opts: MeteredRunnerOptions): MeteredRunner {
    return new MeteredRunner(this.inner, { label: this.label, ...opts });
  }

  step(rows: readonly StepRow[]): StepOutput | Promise<StepOutput> {
    const fed = this.maskEos && this.eos >= 0 ? rows.map((r) => (r.wants.topK >= 2 ? r : { ...r, wants: { ...r.wants, topK: 2 } })) : rows;
    const callMs = performance.now();
    const out = this.inner.step(fed);
    if (out instanceof Promise) return out.then((o) => this.done(o, callMs, rows, performance.now()));
    // A synchronous (simulated) step is delivered after durationMs on the clock: that is when it is "back".
    return this.done(out, callMs, rows, performance.now() + (out.durationMs ?? 0));
  }

  private done(o: StepOutput, callMs: number, rows: readonly StepRow[], resolveMs: number): StepOutput {
    // Simulated runners charge clock time instead of running a model: that time is their model time.
    const modelMs = o.modelMs ?? o.durationMs ?? 0;
    this.steps++;
    this.modelMs += modelMs;
    if (this.recording) {
      let tokens = 0;
      for (const r of rows) tokens += r.tokens.length;
      this.timings.push({ callMs, resolveMs, modelMs, rows: rows.length, tokens });
    }
    if (!(this.maskEos && this.eos >= 0)) return o;
    let changed = false;
    const out: TokenSignals[] = o.rows.map((s) => {
      if (s.token !== this.eos) return s;
      changed = true;
      const alt = s.topIds.find((t) => t !== this.eos);
      return { ...s, token: alt ?? (this.eos === 0 ? 1 : 0), tokenProb: alt !== undefined ? s.topProbs[s.topIds.indexOf(alt)] : 0 };
    });
    return changed ? { ...o, rows: out } : o;
  }

  release(cacheId: number): void {
    this.inner.release(cacheId);
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
