// Drives the running service with N concurrent requests on the bundled task, so the timeline comes alive.
import { generate } from './openai/requestPlan.ts';
import type { TokenRouterService } from './tokenRouterService.ts';

export interface LoadOptions {
  concurrency: number;
  requests: number;
  maxTokens: number;
  model?: string;
}

export interface LoadProgress {
  running: boolean;
  sent: number;
  done: number;
  failed: number;
  total: number;
}

/** A multiplication question like the bundled models were trained on (2–3 digits × 1–2 digits). */
export function sampleQuestion(i: number): string {
  const a = 10 + ((i * 7919 + 13) % 990);
  const b = 1 + ((i * 104729 + 7) % 99);
  return `${a}*${b}=`;
}

export class LoadGenerator {
  progress: LoadProgress = { running: false, sent: 0, done: 0, failed: 0, total: 0 };

  constructor(private readonly service: TokenRouterService) {}

  /** Starts a closed loop; refuses while one is running. */
  start(opts: LoadOptions): boolean {
    if (this.progress.running) return false;
    this.progress = { running: true, sent: 0, done: 0, failed: 0, total: opts.requests };
    const model = opts.model ?? this.service.config.defaultAlgorithm;
    const next = () => {
      if (this.progress.sent >= opts.requests) return;
      const i = this.progress.sent++;
      try {
        generate(
          this.service,
          {
            model,
            promptIds: this.service.tokenizer.encodeChat([{ role: 'user', content: sampleQuestion(i) }]),
            maxTokens: opts.maxTokens,
            sampling: { temperature: 0, topP: 1, topK: 0, seed: i },
            stop: [],
          },
          {
            onToken: () => {},
            onEnd: (o) => {
              if (o.finishReason === 'error') this.progress.failed++;
              this.finishOne(next);
            },
          },
        );
      } catch {
        this.progress.failed++;
        this.finishOne(next);
      }
    };
    for (let c = 0; c < Math.min(opts.concurrency, opts.requests); c++) next();
    return true;
  }

  private finishOne(next: () => void): void {
    this.progress.done++;
    if (this.progress.done >= this.progress.total) this.progress.running = false;
    else setImmediate(next);
  }
}
