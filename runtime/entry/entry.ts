// The entry: admits requests (refusing, by parameter, what its engines cannot serve), streams what the engines commit in output order, ends requests everywhere.
import type { TraceEvent, TraceSink } from '../../shared/trace.ts';
import type { Clock } from '../clock/clock.ts';
import { TokenRouterError } from '../errors.ts';
import type { Cascade } from '../core/engineLoop.ts';
import type { Arrival, Commit, Finish } from '../../shared/protocol/engineProtocol.ts';
import type { EngineHandle } from '../transport/engineHandle.ts';
import { RequestState, requestEndEvent, requestSpec, type Ending, type RequestResult, type SubmitOptions } from './requestState.ts';

export interface RequestHandle {
  readonly id: string;
  readonly done: Promise<RequestResult>;
  cancel(): void;
}

export class Entry {
  /** Committed output tokens over the entry's life. */
  committed = 0;
  protected readonly active = new Map<string, RequestState>();
  protected readonly entryQueue: RequestState[] = [];
  /** Requests submitted: each is waiting, active, or ended. */
  protected serials = 0;

  constructor(
    readonly clock: Clock,
    /** Every model's engine as the entry drives it, in model order. */
    readonly engines: EngineHandle[],
    /** Shared with the engines in this thread: none launches before a cascade the entry runs is over. */
    private readonly cascades: Cascade,
    readonly maxConcurrency: number,
    readonly maxQueue: number,
    protected readonly trace: TraceSink | undefined,
  ) {}

  /** The engine of a model, wherever it runs. */
  engine(name: string): EngineHandle | undefined {
    return this.engines.find((e) => e.name === name);
  }

  submit<M>(options: SubmitOptions<M>): RequestHandle {
    const opts = options as SubmitOptions;
    const maxContext = checkSubmission(opts, this.engines);
    if (this.active.size >= this.maxConcurrency && this.entryQueue.length >= this.maxQueue) {
      throw new TokenRouterError('overloaded', `admission queue is full (${this.maxQueue} waiting)`, null);
    }
    const id = opts.id ?? `req-${this.serials + 1}`;
    if (this.active.has(id)) throw new TokenRouterError('invalid_request', `request id ${id} is already in flight`, 'id');
    const req = new RequestState(requestSpec(id, ++this.serials, opts, maxContext), opts, this.clock.now());
    if (this.active.size < this.maxConcurrency) this.start(req);
    else this.entryQueue.push(req);
    this.flush();
    return { id, done: req.done, cancel: () => this.cancel(id) };
  }

  /** Cancels a request wherever it is: queued, running, in a batch, or pending-return at a peer. */
  cancel(id: string): boolean {
    const qi = this.entryQueue.findIndex((r) => r.id === id);
    const req = qi >= 0 ? this.entryQueue.splice(qi, 1)[0] : this.active.get(id);
    if (!req) return false;
    this.end(req, { status: 'cancelled', reason: 'cancelled' });
    this.flush();
    return true;
  }

  /** Work may have come: the sync modes' rounds may open (Cluster). */
  protected flush(): void {}

  // --- what engines tell the entry (of EngineEntry; Cluster adds the rest) ---

  commit(c: Commit): void {
    const req = this.active.get(c.requestId);
    if (!req || c.index < req.output.length) return;
    // engines in other threads report on their own ports: a commit that overtook earlier ones waits for them
    req.early.set(c.index, c);
    for (let next = req.early.get(req.output.length); next && !req.finished; next = req.early.get(req.output.length)) {
      req.early.delete(next.index);
      this.apply(req, next);
    }
    if (req.lateFinish) this.finish(req.lateFinish);
  }

  private apply(req: RequestState, c: Commit): void {
    req.append(c);
    this.committed++;
    if (req.firstTokenAt === null) {
      req.firstTokenAt = this.clock.now();
      req.actor.send({ type: 'FIRST_TOKEN' });
      this.emitState(req.id, 'streaming');
    }
    try {
      req.opts.onToken?.(c.token, req.spec.models[c.model - 1], req.output.length - 1, c.signals, c.atHandoff, c.text);
    } catch (e) {
      this.end(req, { status: 'failed', reason: 'error', error: e as Error });
    }
  }

  finish(f: Finish): void {
    const req = this.active.get(f.requestId);
    if (!req) return;
    // a finish that overtook commits before it waits for them
    if (f.committed !== undefined && req.output.length < f.committed) {
      req.lateFinish = f;
      return;
    }
    this.end(req, f);
  }

  /** Sends a request to an engine: its first arrival, or a handoff between engines with no link of their own. */
  deliver(name: string, a: Arrival): void {
    if (this.active.get(a.spec.id)?.spec === a.spec) this.moved(a.spec.id, name, a.counters.handoffs);
    this.engine(name)!.arrive(a);
  }

  /** Where a request decodes now: its handoffs are counted, so a report that comes late changes nothing. */
  moved(requestId: string, to: string, hops: number): void {
    const req = this.active.get(requestId);
    if (req && hops > req.whereabouts.hops) req.whereabouts = { model: to, hops };
  }

  traced(events: readonly TraceEvent[]): void {
    if (this.trace) for (const e of events) this.trace.emit(e);
  }

  cascade<T>(fn: () => T): T {
    return this.cascades.run(fn);
  }

  // --- request lifecycle ---

  private start(req: RequestState): void {
    this.active.set(req.id, req);
    this.emitState(req.id, 'admitted');
    const { spec } = req;
    // every engine the request may visit can build its algorithm before a handoff reaches it
    if (spec.ref) for (const name of spec.models) this.engine(name)!.deploy(spec.ref);
    this.deliver(spec.models[spec.algorithm.entry - 1], req.firstArrival());
  }

  protected end(req: RequestState, ending: Ending): void {
    if (req.finished) return;
    req.end(ending.status);
    const wasActive = this.active.delete(req.id);
    // every engine the request may hold state on lets it go; one in this thread that owned it has its tallies
    let counters = ending.counters;
    for (const name of new Set(req.spec.models)) counters = this.engine(name)!.release(req.spec, ending.status) ?? counters;
    this.emitState(req.id, ending.status);
    const result = req.result(ending, counters, this.clock.now());
    this.trace?.emit(requestEndEvent(result));
    if (wasActive) this.startWaiting();
    req.answer(result);
  }

  private startWaiting(): void {
    while (this.active.size < this.maxConcurrency && this.entryQueue.length > 0) this.start(this.entryQueue.shift()!);
  }

  private emitState(requestId: string, state: string): void {
    this.trace?.emit({ type: 'request-state', t: this.clock.now(), requestId, model: null, state });
  }
}

/** The context every engine the algorithm runs on fits; throws the client's error otherwise. */
function checkSubmission(opts: SubmitOptions, engines: readonly EngineHandle[]): number {
  const alg = opts.algorithm;
  const needed = alg.models.map((name) => {
    const engine = engines.find((e) => e.name === name);
    if (!engine) throw new TokenRouterError('not_found', `algorithm ${alg.name} needs model "${name}", which this server does not run`, 'model');
    return engine;
  });
  // a model that can only make a request wait (a remote one cut off from NATS) refuses it rather than let it hold a slot
  const refusal = needed.map((l) => l.admissionError?.()).find((e) => e);
  if (refusal) throw refusal;
  const down = needed.find((l) => l.down);
  if (down) throw new TokenRouterError('model_unavailable', `model ${down.name} is down; retry shortly`, 'model', { retry_after_s: 1 });
  if (!(alg.entry >= 1 && alg.entry <= needed.length)) {
    throw new TokenRouterError('invalid_request', `algorithm ${alg.name}: entry model ${alg.entry} is not in 1..${needed.length}`, 'model');
  }
  if (opts.prompt.length === 0) throw new TokenRouterError('invalid_request', 'the prompt is empty', 'prompt');
  if (!Number.isInteger(opts.maxTokens) || opts.maxTokens < 1) {
    throw new TokenRouterError('invalid_request', `max_tokens must be an integer ≥ 1, got ${opts.maxTokens}`, 'max_tokens');
  }
  const maxContext = Math.min(...needed.map((l) => l.info.maxContext));
  if (!opts.algorithmRef && needed.some((l) => !l.core))
    throw new TokenRouterError('invalid_request', `algorithm ${alg.name} runs on an engine thread, so it needs an algorithmRef`, 'algorithm');
  if (opts.prompt.length >= maxContext) {
    throw new TokenRouterError('invalid_request', `the prompt has ${opts.prompt.length} tokens; the context window is ${maxContext}`, 'prompt');
  }
  // a request whose KV could never be placed, even in an empty pool, is refused now rather than wait forever
  const need = Math.min(opts.prompt.length + opts.maxTokens, maxContext);
  const tight = needed.reduce((a, l) => (l.kvCapacityTokens < a.kvCapacityTokens ? l : a));
  if (need > tight.kvCapacityTokens) {
    throw new TokenRouterError(
      'too_large',
      `the request needs ${need} KV tokens (prompt ${opts.prompt.length} + max_tokens ${opts.maxTokens}), more than model ${tight.name}'s whole KV pool holds (${tight.kvCapacityTokens} tokens within memory.budgetMiB); lower max_tokens or raise the budget`,
      'max_tokens',
    );
  }
  return maxContext;
}
