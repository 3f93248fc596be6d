// Evaluation runs on the live server: a draft (or a built-in, or a served name) on the first N validation problems of a task, bounded, cancellable, with progress and routing statistics.
import type { Algorithm } from '../../shared/algorithm.ts';
import type { AlgorithmSpec } from '../../shared/api/admin.ts';
import { EVALUATE_BOUNDS, PREDICT_LIVE_WINDOW_MS, type EvaluateEvent, type EvaluateRequest, type EvaluationResult } from '../../shared/api/evaluate.ts';
import { IrCompileError } from '../ir/compileIr.ts';
import type { RequestResult } from '../entry/requestState.ts';
import { TokenRouterError } from '../errors.ts';
import type { AlgorithmRef } from '../registry/algorithmSource.ts';
import type { TokenRouterService } from '../http/tokenRouterService.ts';
import { entryProfileOf } from './entryProfile.ts';
import { DEFAULT_TASK, chatOf, loadTask, type Task, type TaskProblem } from './loadTask.ts';
import { RoutingCounts, type BatchTiming } from './routingCounts.ts';
import { batchesIn } from './liveWindow.ts';
import { specKey } from './specKey.ts';

/** What a run evaluates: the algorithm, its reference for engine threads, and the spec a deploy of it stores. */
export interface RunTarget {
  label: string;
  algorithm: Algorithm<unknown>;
  ref: AlgorithmRef;
  /** Hash of the stored spec: a deployed version with the same spec finds this run's statistics. */
  specKey: string | null;
  irKey: string | null;
}

/** A finished run, kept for predictions and for the live check of a deploy. */
export interface StoredRun {
  result: EvaluationResult;
  batches: readonly BatchTiming[];
  /**
   * Other traffic's batches of the window before the run started, taken then: a run of a few hundred
   * problems makes more trace events than a prediction reads back, and would push them out.
   */
  liveBefore: readonly BatchTiming[];
  /** Mean ms each request spent on no model (TransitTimes); null: none finished. */
  transitMs: number | null;
  specKey: string | null;
}

/** Finished runs kept in memory (the newest). */
const KEEP_RUNS = 32;
/** A run held back (the entry queue full, or its share of live traffic taken) looks again after this long. */
const RETRY_MS = 50;
/** Beside live traffic, a run holds this share of the request-time in flight: its cost to live throughput (docs/benchmarks.md, `predict`). */
export const LIVE_SHARE = 0.15;
/** Live traffic seen this recently still counts: closed-loop clients leave the cluster for a moment between requests. */
export const LIVE_MEMORY_MS = 1000;

/**
 * The draft built as a deploy would build it. A compile error keeps its issues (the designer marks
 * the nodes) and says each one's message, so an unserved model is named, not only coded.
 */
function deployableDraft(s: TokenRouterService, spec: AlgorithmSpec): Algorithm<unknown> {
  try {
    return s.algorithms.deployable(spec);
  } catch (e) {
    if (!(e instanceof IrCompileError)) throw e;
    const errors = e.details.filter((d) => d.severity === 'error');
    throw new TokenRouterError(
      'invalid_ir',
      `the draft does not compile: ${errors.map((d) => `${d.nodeId ?? 'graph'}: ${d.message}`).join('; ')}`,
      'ir',
      e.details,
    );
  }
}

interface Running {
  runId: string;
  client: string;
  cancel(): void;
}

export class EvaluationRuns {
  private readonly running = new Map<string, Running>();
  private readonly finished = new Map<string, StoredRun>();
  /** Bundled tasks, read once; a task given by path is read again on each run, so an edited file counts. */
  private readonly bundled = new Map<string, Task>();
  private seq = 0;

  constructor(private readonly service: TokenRouterService) {}

  /** The task a run names (default the bundled one); a bad one is a 400 naming what is wrong with it. */
  task(ref: string = DEFAULT_TASK): Task {
    const cached = this.bundled.get(ref);
    if (cached) return cached;
    const task = loadTask(ref, this.service.config.modelsDir);
    if (task.source === 'bundled') this.bundled.set(ref, task);
    return task;
  }

  /** A task's validation split (default the default task's: examples/tasks/word-problems/validation.jsonl): a draft is a choice, so it never sees the held-out set. */
  validationSet(ref?: string): TaskProblem[] {
    return this.task(ref).split('validation').problems;
  }

  /** The most requests of one run in flight: the bound, and at most half the server's concurrency. */
  maxConcurrency(): number {
    const c = this.service.cluster.maxConcurrency;
    return Math.max(1, Math.min(EVALUATE_BOUNDS.maxConcurrency, Number.isFinite(c) ? Math.floor(c / 2) : EVALUATE_BOUNDS.maxConcurrency));
  }

  /** Builds what the request names, proving it runs here (compile errors name their nodes; an unserved model is named). */
  target(body: EvaluateRequest): RunTarget {
    const s = this.service;
    if ('ir' in body) {
      const spec: AlgorithmSpec = { kind: 'ir', ir: body.ir };
      const algorithm = deployableDraft(s, spec);
      const key = specKey(spec);
      return { label: 'draft', algorithm, ref: { key: `eval:${key}`, source: spec, catalog: s.algorithms.catalog() }, specKey: key, irKey: key };
    }
    if ('builtin' in body) {
      const spec: AlgorithmSpec = { kind: 'builtin', factory: body.builtin, params: body.params };
      const algorithm = s.algorithms.deployable(spec);
      const key = specKey(spec);
      return { label: body.builtin, algorithm, ref: { key: `eval:${key}`, source: spec, catalog: s.algorithms.catalog() }, specKey: key, irKey: null };
    }
    const r = s.algorithms.resolve(body.model);
    const stored = r.version === null ? null : s.registry.version(body.model, r.version)?.spec;
    return { label: body.model, algorithm: r.algorithm, ref: r.ref, specKey: stored ? specKey(stored) : null, irKey: null };
  }

  /**
   * Starts a run, refusing past the bounds before anything is sent: the set's size, the concurrency,
   * one run per client, EVALUATE_BOUNDS.maxRuns on the server. Events go to `emit` until the run ends.
   */
  start(target: RunTarget, body: EvaluateRequest, client: string, emit: (e: EvaluateEvent) => void): Running {
    const task = this.task(body.task);
    const set = task.split('validation').problems;
    const n = body.problems ?? Math.min(EVALUATE_BOUNDS.defaultProblems, set.length);
    if (n > set.length)
      throw new TokenRouterError(
        'invalid_request',
        `problems: the validation set of task "${task.header.name}" has ${set.length} problems; ask for at most ${set.length}`,
        'problems',
      );
    const cap = this.maxConcurrency();
    const concurrency = body.concurrency ?? Math.min(EVALUATE_BOUNDS.defaultConcurrency, cap);
    if (concurrency > cap)
      throw new TokenRouterError(
        'invalid_request',
        `concurrency: an evaluation may run at most ${cap} requests at once here (half the server's maxConcurrency, at most ${EVALUATE_BOUNDS.maxConcurrency}), so live traffic keeps the rest`,
        'concurrency',
      );
    const maxTokens = Math.min(body.maxTokens ?? EVALUATE_BOUNDS.defaultMaxTokens, this.service.config.limits.maxTokens);
    for (const m of target.algorithm.models) {
      if (this.service.cluster.engine(m)?.down)
        throw new TokenRouterError('model_unavailable', `model ${m} is down; evaluate again shortly`, 'model', { retry_after_s: 1 });
    }
    const mine = [...this.running.values()].find((r) => r.client === client);
    if (mine)
      throw new TokenRouterError(
        'conflict',
        `client "${client}" already has evaluation ${mine.runId} running: cancel it (DELETE /admin/evaluate/${mine.runId}) or wait for it to finish`,
        'client',
      );
    if (this.running.size >= EVALUATE_BOUNDS.maxRuns)
      throw new TokenRouterError(
        'overloaded',
        `${this.running.size} evaluations are running on this server, the most it runs at once; try again when one ends`,
        null,
        { retry_after_s: 5 },
      );
    const runId = `ev${Date.now().toString(36)}${(++this.seq).toString(36)}`;
    const run = this.run(runId, target, task, set.slice(0, n), concurrency, maxTokens, emit);
    const entry: Running = { runId, client, cancel: run.cancel };
    this.running.set(runId, entry);
    // the live traffic beside the run gives a predict of it the entry's time per request
    const measured = entryProfileOf(this.service).measureWhile(PREDICT_LIVE_WINDOW_MS);
    void run.done.finally(() => {
      this.running.delete(runId);
      measured();
    });
    return entry;
  }

  cancel(runId: string): boolean {
    const r = this.running.get(runId);
    if (!r) return false;
    r.cancel();
    return true;
  }

  isRunning(runId: string): boolean {
    return this.running.has(runId);
  }

  stored(runId: string): StoredRun | undefined {
    return this.finished.get(runId);
  }

  /** The newest finished run of a spec (what a deployed version was evaluated as). */
  latestFor(key: string): StoredRun | undefined {
    let found: StoredRun | undefined;
    for (const r of this.finished.values()) if (r.specKey === key) found = r;
    return found;
  }

  private run(runId: string, target: RunTarget, task: Task, problems: TaskProblem[], concurrency: number, maxTokens: number, emit: (e: EvaluateEvent) => void) {
    const { cluster, tokenizer, trace } = this.service;
    const prefix = `${runId}-`; // request ids `ev<run>-<problem>` (run ids are `ev` and base-36 digits)
    const counts = new RoutingCounts(target.algorithm.models, (id) => id.startsWith(prefix));
    // a chat the model's template refuses is the request's error (400), before anything subscribes or runs
    const prompts = problems.map((p) => tokenizer.encodeChat(chatOf(p)));
    const unsubscribe = trace.subscribe(counts.onEvent);
    const results: (RequestResult | undefined)[] = new Array(problems.length);
    const inFlight = new Set<string>();
    const t0 = cluster.clock.now();
    // what the trace window holds of the last PREDICT_LIVE_WINDOW_MS (its size is trace.keepEvents)
    const liveBefore = batchesIn(trace.events, t0 - PREDICT_LIVE_WINDOW_MS, null);
    // ∫ requests in flight dt: the concurrency the run really had (held back beside live traffic, thinning at its end)
    let area = 0;
    let lastChange = t0;
    const moved = (delta: number) => {
      const now = cluster.clock.now();
      area += inFlight.size * (now - lastChange);
      lastChange = now;
      return delta;
    };
    let next = 0;
    let done = 0;
    let correct = 0;
    let over = false;
    let settle!: () => void;
    const finished = new Promise<void>((r) => (settle = r));
    const end = (event: EvaluateEvent) => {
      if (over) return;
      over = true;
      if (retry !== null) cluster.clock.clearTimeout(retry);
      unsubscribe();
      for (const id of inFlight) cluster.cancel(id);
      emit(event);
      settle();
    };
    let retry: unknown = null;
    /**
     * Beside live traffic the run takes LIVE_SHARE of the request-time in flight: live L in flight
     * leaves it share = L·s/(1 − s) requests, as ⌈share⌉ slots each busy share/⌈share⌉ of the time
     * (after a request of d ms, the next waits d·(slots/share − 1)), so a run beside a few live
     * requests costs them its share, not a whole slot. Without live traffic for LIVE_MEMORY_MS it
     * runs at its full concurrency.
     */
    let recentLive = 0;
    let recentLiveAt = -Infinity;
    let notBefore = -Infinity;
    const share = (): number => {
      const now = cluster.clock.now();
      let live = cluster.activeCount + cluster.queuedCount - inFlight.size;
      if (live > 0) [recentLive, recentLiveAt] = [live, now];
      else if (now - recentLiveAt < LIVE_MEMORY_MS) live = recentLive;
      return live <= 0 ? concurrency : Math.min(concurrency, (live * LIVE_SHARE) / (1 - LIVE_SHARE));
    };
    const paceAfter = (startedAt: number): void => {
      const a = share();
      const slots = Math.ceil(a);
      if (a < slots) notBefore = Math.max(notBefore, cluster.clock.now() + (cluster.clock.now() - startedAt) * (slots / a - 1));
    };
    const fill = (): void => {
      retry = null;
      const now = cluster.clock.now();
      if (now >= notBefore) while (!over && next < problems.length && inFlight.size < Math.ceil(share())) if (!send()) break;
      // held back for live traffic: look again shortly, since live requests end without telling this run
      if (!over && next < problems.length && inFlight.size < concurrency && retry === null)
        retry = cluster.clock.setTimeout(fill, now < notBefore ? notBefore - now : RETRY_MS);
    };
    const send = (): boolean => {
      const i = next++;
      const id = `${prefix}${i}`;
      const startedAt = cluster.clock.now();
      try {
        cluster.submit({
          id,
          prompt: prompts[i],
          maxTokens,
          algorithm: target.algorithm,
          algorithmRef: target.ref,
          sampling: { temperature: 0, seed: i },
          onEnd: (r) => {
            moved(-1);
            inFlight.delete(id);
            if (over) return;
            results[i] = r;
            done++;
            if (r.status === 'done' && task.grade(tokenizer.decode(r.tokens), problems[i].answer)) correct++;
            emit({ type: 'progress', done, total: problems.length, correct, elapsedMs: cluster.clock.now() - t0 });
            paceAfter(startedAt);
            if (done === problems.length)
              end({
                type: 'result',
                result: this.keep(
                  runId,
                  target,
                  task,
                  results as RequestResult[],
                  counts,
                  liveBefore,
                  concurrency,
                  maxTokens,
                  correct,
                  cluster.clock.now() - t0,
                  area,
                ),
              });
            else fill();
          },
        });
        moved(1);
        inFlight.add(id);
        return true;
      } catch (e) {
        next--;
        // live traffic filled the entry queue: this run waits its turn rather than failing
        if (!(e instanceof TokenRouterError && e.code === 'overloaded'))
          end({ type: 'error', message: (e as Error).message, code: e instanceof TokenRouterError ? e.code : 'internal' });
        return false;
      }
    };
    emit({ type: 'started', runId, problems: problems.length, concurrency, maxTokens, models: [...target.algorithm.models] });
    fill();
    return {
      done: finished,
      cancel: () => {
        if (retry !== null) cluster.clock.clearTimeout(retry);
        end({ type: 'cancelled', done, total: problems.length });
      },
    };
  }

  private keep(
    runId: string,
    target: RunTarget,
    task: Task,
    results: RequestResult[],
    counts: RoutingCounts,
    liveBefore: readonly BatchTiming[],
    concurrency: number,
    maxTokens: number,
    correct: number,
    durationMs: number,
    area: number,
  ): EvaluationResult {
    const byModel: Record<string, number> = {};
    let committed = 0;
    let handoffs = 0;
    let failed = 0;
    for (const r of results) {
      committed += r.tokens.length;
      handoffs += r.handoffs;
      if (r.status !== 'done') failed++;
      for (const [m, n] of Object.entries(r.tokensByModel)) byModel[m] = (byModel[m] ?? 0) + n;
    }
    const n = results.length;
    const result: EvaluationResult = {
      runId,
      label: target.label,
      irKey: target.irKey,
      task: task.header.name,
      grader: task.header.grader.kind,
      problems: n,
      correct,
      accuracy: correct / n,
      meanOutputTokens: committed / n,
      handoffsPerRequest: handoffs / n,
      tokenShare: Object.fromEntries(target.algorithm.models.map((m) => [m, committed ? (byModel[m] ?? 0) / committed : 0])),
      routing: counts.routing(),
      concurrency,
      maxTokens,
      durationMs,
      meanInFlight: durationMs > 0 ? area / durationMs : 0,
      tokS: durationMs > 0 ? (committed / durationMs) * 1000 : 0,
      failed,
    };
    this.finished.set(runId, { result, batches: counts.batches, liveBefore, transitMs: counts.transit.meanMs(counts.batches), specKey: target.specKey });
    if (this.finished.size > KEEP_RUNS) this.finished.delete(this.finished.keys().next().value!);
    return result;
  }
}
