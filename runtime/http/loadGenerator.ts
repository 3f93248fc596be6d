// Drives the running service with N concurrent requests on the default task's validation problems, so the timeline comes alive.
import { DEFAULT_TASK, loadTask, type TaskProblem } from '../eval/loadTask.ts';
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

/** The default task's validation problems, read when first asked for (a load generator never sends held-out problems). */
let problems: readonly TaskProblem[] | undefined;

function sampleProblems(): readonly TaskProblem[] {
  problems ??= loadTask(DEFAULT_TASK, '').split('validation').problems;
  return problems;
}

/** How many distinct problems sampleProblem cycles through. */
export const sampleProblemCount = (): number => sampleProblems().length;

/** Problem i (any integer) of the default task's validation split, cycling: word problems like the bundled models were trained on. */
export function sampleProblem(i: number): TaskProblem {
  const all = sampleProblems();
  return all[((i % all.length) + all.length) % all.length];
}

export const sampleQuestion = (i: number): string => sampleProblem(i).question;

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
