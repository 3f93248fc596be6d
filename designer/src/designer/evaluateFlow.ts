// The Evaluate panel's state and actions apart from rendering: pick a task, run a draft (or a served name) on N of its problems, cancel, predict its serving cost, and keep the points of the accuracy × throughput plot.
import type { CancelResponse, EvaluateBounds, EvaluateEvent, EvaluateRequest, EvaluationResult, Prediction } from '../../../shared/api/evaluate.ts';
import type { IrDocument } from '../../../shared/ir/irSchema.ts';
import type { EvaluateRun } from './api.ts';
import { errorText } from './registryFlow.ts';

/** The server calls the panel makes: api.ts's evaluateApi in the page, a fake in tests. */
export interface EvaluateServer {
  evaluate(run: EvaluateRun): Promise<void>;
  bounds(task: string): Promise<EvaluateBounds>;
  cancel(runId: string): Promise<CancelResponse>;
  predict(runId: string, concurrency: number, clientMs: number): Promise<Prediction>;
}

export type PointKind = 'draft' | 'model' | 'algorithm';

/** One marker on the plot: an evaluation and its prediction at the chosen concurrency. */
export interface PlotPoint {
  label: string;
  kind: PointKind;
  runId: string;
  accuracy: number;
  /** Predicted committed tok/s at the chosen concurrency (the best thresholds); null until predicted. */
  tokS: number | null;
}

/** The task every run of the panel sends until another is picked. */
export const DEFAULT_TASK = 'word-problems';

export interface EvaluateState {
  status: 'idle' | 'running' | 'done' | 'cancelled' | 'error';
  /** The task runs are graded on: a bundled task's name, or a path on the server to a task folder. */
  task: string;
  /** The bundled tasks the server offers (empty until it said). */
  tasks: EvaluateBounds['tasks'];
  /** The task is given by a path (the path field shows), not picked from the bundled ones. */
  taskByPath: boolean;
  /** What the run in progress (or the last one) evaluates. */
  label: string | null;
  problems: number;
  /** The most problems a run takes here (the server's validation set); null until the server said. */
  maxProblems: number | null;
  /** The most requests of one run in flight on this server (its bounds); null until asked. */
  maxRunConcurrency: number | null;
  concurrency: number;
  /** Each client's own ms per request outside the server (network, its turnaround): they are on no model then. */
  clientMs: number;
  runId: string | null;
  progress: { done: number; total: number; correct: number } | null;
  /** The draft's last result and prediction. */
  result: EvaluationResult | null;
  prediction: Prediction | null;
  predicting: boolean;
  message: string | null;
  points: PlotPoint[];
  /** References (single models, deployed algorithms) still to run, while a comparison runs. */
  queue: Reference[];
  /** The concurrency the plot's points and the prediction table are priced at: it follows `concurrency` once a re-pricing ends. */
  pricedAt: number;
  /** A new concurrency (or client time) is being priced: the figures shown are still at `pricedAt`. */
  repricing: boolean;
  /** The last comparison's entries that did not run, each with why (the others went on). */
  notCompared: { name: string; why: string }[];
}

/** A name to compare with; `skip` says why it cannot run here (an algorithm the served models cannot load). */
export interface Reference {
  name: string;
  kind: PointKind;
  skip?: string;
}

export class EvaluateFlow {
  private state: EvaluateState = {
    status: 'idle',
    task: DEFAULT_TASK,
    tasks: [],
    taskByPath: false,
    label: null,
    problems: 100,
    maxProblems: null,
    maxRunConcurrency: null,
    concurrency: 8,
    clientMs: 0,
    runId: null,
    progress: null,
    result: null,
    prediction: null,
    predicting: false,
    message: null,
    points: [],
    queue: [],
    notCompared: [],
    pricedAt: 8,
    repricing: false,
  };
  /** Re-pricings started: only the latest one's end says what the figures are priced at. */
  private repricings = 0;
  private readonly listeners = new Set<() => void>();
  private abort: AbortController | null = null;
  /** One run at a time per client on the server: each page is its own client. */
  private readonly client = `designer-${Math.random().toString(36).slice(2, 10)}`;

  constructor(private readonly server: EvaluateServer) {}

  getState = (): EvaluateState => this.state;

  subscribe = (fn: () => void): (() => void) => {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  };

  private set(patch: Partial<EvaluateState>): void {
    this.state = { ...this.state, ...patch };
    for (const l of this.listeners) l();
  }

  setProblems = (n: number): void => this.set({ problems: Math.max(1, Math.min(this.state.maxProblems ?? Infinity, Math.round(n) || 1)) });

  /**
   * A run at the concurrency its prediction is asked for (as far as the server lets one run go): the
   * step latencies are then measured at the batch sizes the prediction uses, not extrapolated from a
   * run at the server's default of 4. Unknown bounds: the server's default.
   */
  private runConcurrency(): { concurrency?: number } {
    const cap = this.state.maxRunConcurrency;
    return cap === null ? {} : { concurrency: Math.max(1, Math.min(this.state.concurrency, cap)) };
  }

  /** Asks the server what a run on the task may take; the problems field is bounded by its set from then on. */
  loadBounds = async (): Promise<void> => {
    const task = this.state.task;
    try {
      const b = await this.server.bounds(task);
      if (this.state.task !== task) return;
      this.set({ maxProblems: b.problems, maxRunConcurrency: b.concurrency, problems: Math.min(this.state.problems, b.problems), tasks: b.tasks });
    } catch (e) {
      // a task that does not load says why at once; otherwise the field stays open and a run's refusal names the limit
      if (this.state.task === task && task !== DEFAULT_TASK && this.state.status !== 'running')
        this.set({ status: 'error', message: `Task ${task}: ${errorText(e)}` });
    }
  };

  /**
   * Runs from now on grade on `task` (a bundled name, or a path on the server): its bounds are asked
   * for, and the plot starts over, since accuracies on two tasks do not compare.
   */
  setTask = async (task: string, byPath = this.state.taskByPath): Promise<void> => {
    if (this.state.status === 'running') return;
    if (task === this.state.task) return this.set({ taskByPath: byPath });
    this.set({ task, taskByPath: byPath, maxProblems: null, points: [], result: null, prediction: null, status: 'idle', message: null, notCompared: [] });
    if (task) await this.loadBounds();
  };

  /** A new concurrency re-prices every point: accuracy does not change with it, throughput does. */
  setConcurrency = async (c: number): Promise<void> => {
    this.set({ concurrency: Math.max(1, Math.min(32, Math.round(c) || 1)) });
    await this.repredict();
  };

  /** Clients that take time of their own between answers keep fewer requests on the models: every point re-priced. */
  setClientMs = async (ms: number): Promise<void> => {
    this.set({ clientMs: Math.max(0, Math.min(60_000, Number.isFinite(ms) ? ms : 0)) });
    await this.repredict();
  };

  /** Runs the draft; its point replaces the previous draft's. */
  evaluateDraft = (ir: IrDocument): Promise<void> => this.runOne({ ir }, 'draft', 'draft');

  /** Evaluates each name in turn (single models, deployed algorithms) for the plot's reference points; one that cannot run says why, and the rest go on. */
  compare = async (names: Reference[]): Promise<void> => {
    const notCompared: { name: string; why: string }[] = [];
    this.set({ queue: [...names], notCompared });
    while (this.state.queue.length > 0) {
      const [next, ...rest] = this.state.queue;
      this.set({ queue: rest });
      if (next.skip) {
        notCompared.push({ name: next.name, why: next.skip });
        this.set({ notCompared: [...notCompared] });
        continue;
      }
      await this.runOne({ model: next.name }, next.name, next.kind);
      if (this.state.status === 'error') {
        notCompared.push({ name: next.name, why: this.state.message ?? 'failed' });
        this.set({ notCompared: [...notCompared] });
      } else if (this.state.status !== 'done') {
        // cancelled: the user stopped the whole comparison
        this.set({ queue: [] });
        return;
      }
    }
    const ran = names.length - notCompared.length;
    if (notCompared.length > 0)
      this.set({ status: ran > 0 ? 'done' : 'error', message: `Compared ${ran} of ${names.length}; ${notCompared.length} could not run (listed below).` });
  };

  cancel = async (): Promise<void> => {
    const runId = this.state.runId;
    this.set({ queue: [] });
    if (runId && this.state.status === 'running') {
      try {
        await this.server.cancel(runId);
      } catch {
        // the stream's end (or the abort below) still stops it
      }
    }
    this.abort?.abort();
  };

  private async runOne(target: { ir: IrDocument } | { model: string }, label: string, kind: PointKind): Promise<void> {
    if (this.state.status === 'running') return;
    const abort = new AbortController();
    this.abort = abort;
    this.set({ status: 'running', label, runId: null, progress: { done: 0, total: this.state.problems, correct: 0 }, message: null });
    let ended: EvaluateEvent | null = null;
    try {
      await this.server.evaluate({
        body: { ...target, task: this.state.task, problems: this.state.problems, ...this.runConcurrency(), client: this.client } satisfies EvaluateRequest,
        signal: abort.signal,
        onEvent: (e) => {
          if (e.type === 'started') this.set({ runId: e.runId, progress: { done: 0, total: e.problems, correct: 0 } });
          else if (e.type === 'progress') this.set({ progress: { done: e.done, total: e.total, correct: e.correct } });
          else ended = e;
        },
      });
    } catch (e) {
      if (!abort.signal.aborted) {
        this.set({ status: 'error', message: errorText(e) });
        return;
      }
      ended = { type: 'cancelled', done: this.state.progress?.done ?? 0, total: this.state.progress?.total ?? 0 };
    } finally {
      if (this.abort === abort) this.abort = null;
    }
    const end = ended as EvaluateEvent | null;
    if (!end || end.type === 'cancelled') return this.set({ status: 'cancelled', message: 'Cancelled.' });
    if (end.type === 'error') return this.set({ status: 'error', message: end.message });
    if (end.type !== 'result') return;
    const point: PlotPoint = { label, kind, runId: end.result.runId, accuracy: end.result.accuracy, tokS: null };
    const points = [...this.state.points.filter((p) => (kind === 'draft' ? p.kind !== 'draft' : p.label !== label)), point];
    this.set({ status: 'done', points, ...(kind === 'draft' ? { result: end.result, prediction: null } : {}) });
    await this.predictPoint(point);
    if (!this.state.repricing) this.set({ pricedAt: this.state.concurrency });
  }

  /** One point's prediction at the concurrency and client time in force; null (and a message) when the server could not. */
  private async price(p: PlotPoint): Promise<Prediction | null> {
    try {
      return await this.server.predict(p.runId, this.state.concurrency, this.state.clientMs);
    } catch (e) {
      this.set({ message: `Could not predict ${p.label}: ${errorText(e)}` });
      return null;
    }
  }

  private async predictPoint(p: PlotPoint): Promise<void> {
    if (p.kind === 'draft') this.set({ predicting: true });
    try {
      const prediction = await this.price(p);
      if (!prediction) return;
      this.set({
        points: this.state.points.map((q) => (q.runId === p.runId ? { ...q, tokS: prediction.best.tokS } : q)),
        ...(p.kind === 'draft' ? { prediction } : {}),
      });
    } finally {
      if (p.kind === 'draft') this.set({ predicting: false });
    }
  }

  private async repredict(): Promise<void> {
    const seq = ++this.repricings;
    const concurrency = this.state.concurrency;
    this.set({ repricing: true });
    // Every figure changes at once when all are priced: the plot's axis, its points and the table never mix two concurrencies.
    const priced = new Map<string, Prediction>();
    try {
      for (const p of this.state.points) {
        const prediction = await this.price(p);
        if (prediction) priced.set(p.runId, prediction);
      }
    } finally {
      if (seq === this.repricings) {
        const draft = this.state.points.find((p) => p.kind === 'draft');
        const draftPrediction = draft && priced.get(draft.runId);
        this.set({
          points: this.state.points.map((q) => (priced.has(q.runId) ? { ...q, tokS: priced.get(q.runId)!.best.tokS } : q)),
          ...(draftPrediction ? { prediction: draftPrediction } : {}),
          repricing: false,
          pricedAt: concurrency,
        });
      }
    }
  }
}
