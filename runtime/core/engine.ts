// One model's engine: its requests, queues, KV pool and routing; a step reads plan → execute → apply.
import type { Handoff, TokenSignals } from '../../shared/algorithm.ts';
import type { LocalStatus, TraceSink } from '../../shared/trace.ts';
import type { LaneStats } from '../../shared/protocol/laneStats.ts';
import { TokenRouterError } from '../errors.ts';
import { Later } from '../clock/later.ts';
import type { Clock } from '../clock/clock.ts';
import type { ModelRunner, StepOutput } from '../runner/modelRunner.ts';
import type { EngineGrammar } from '../grammar/engineGrammar.ts';
import { EngineQueues, newBatch, planBatch } from './engineQueues.ts';
import { batchEvent, EngineStats, handoffEvent, laneStats, type Batch } from './engineStats.ts';
import { LocalRequest, receiveRow, routeRow, type LocalEvent, type OutputProcessor, type RequestSpec } from './localRequest.ts';
import type { Arrival, EngineEvent, EngineOutputs, EngineSettings } from '../../shared/protocol/engineProtocol.ts';
import { acceptCommitted, heldForGrammar, maskRows, newGrammarState } from './constrainRows.ts';

/** The host as its engine sees it (EngineHost). */
export interface EngineEnv {
  readonly clock: Clock;
  /** A request's KV stays on an engine it leaves; false (standard serving): it goes, and each handoff carries the whole context. */
  readonly retain: boolean;
  readonly executing: boolean;
  readonly down: boolean;
  readonly trace: TraceSink | undefined;
  /** Detokenises the requests that ask for text; absent: no tokenizer beside this engine. */
  readonly output: OutputProcessor | undefined;
  readonly grammar: EngineGrammar;
  /** Takes arrivals as the loop's input (a constrained one again once its grammar compiled). */
  arrive(arrivals: readonly Arrival[]): void;
}

const END_EVENT = { done: 'FINISH', failed: 'FAIL', cancelled: 'CANCEL' } as const;

export class Engine {
  readonly index: number;
  readonly name: string;
  maxBatch: number;
  /** Tokens one step feeds at most, all rows together: a longer prompt is fed in chunks across steps. */
  maxStepTokens: number;
  threshold: number;
  readonly queues: EngineQueues;
  /** The batch in flight, from its launch until its rows are applied. */
  inFlight: Batch | null = null;
  readonly stats = new EngineStats();
  readonly locals = new Map<string, LocalRequest>();
  /** What this engine produced since the host last took it: events for the entry in order, handoffs for peers. */
  private events: EngineEvent[] = [];
  private sent: EngineOutputs['sent'] = [];
  private batchSeq = 0;
  private readonly models: number;

  constructor(
    settings: EngineSettings,
    /** Replaced when a crashed runner is restarted. */
    public runner: ModelRunner,
    private readonly host: EngineEnv,
  ) {
    this.index = settings.index;
    this.name = settings.models[settings.index];
    this.models = settings.models.length;
    this.maxBatch = settings.maxBatch;
    this.maxStepTokens = settings.maxStepTokens;
    this.threshold = settings.threshold;
    const current = { release: (id: number) => this.runner.release(id), fork: (from: number, to: number, n: number) => this.runner.fork(from, to, n) };
    this.queues = new EngineQueues(settings.kvCapacityTokens, runner.info.kvBytesPerToken, this.stats, current, settings.prefixCache, this.locals);
  }

  get pool() {
    return this.queues.pool;
  }
  get readyCount(): number {
    return this.queues.readyCount;
  }
  get executing(): boolean {
    return this.host.executing;
  }
  get down(): boolean {
    return this.host.down;
  }
  /** In the batch now running, its row not yet applied: its cache is freed only after that. */
  isStepping(local: LocalRequest): boolean {
    return this.inFlight !== null && this.inFlight.locals.indexOf(local, this.inFlight.applied) >= 0;
  }

  /** This engine's figures for /admin/status, /metrics and the benches. */
  laneStats(): LaneStats {
    return laneStats(this);
  }

  /** Plans a batch, takes its rows off the ready queue and starts the runner on it; `apply` (or `fail`) turns its answer into outputs. */
  step(down: boolean): { batch: Batch; result: PromiseLike<StepOutput> } {
    // under a token budget decode rows go first wherever they wait in the FIFO, so the planner sees it all
    const ready = this.queues.readyView(Number.isFinite(this.maxStepTokens) ? Infinity : this.maxBatch);
    const plan = planBatch(ready.rows, this);
    // unique across the engines of a deployment
    const id = ++this.batchSeq * this.models + this.index;
    const batch = newBatch(id, plan, ready.locals, this.host.clock.now());
    this.queues.take(plan.rows);
    maskRows(batch);
    this.inFlight = batch;
    const wall0 = performance.now();
    try {
      if (down) throw new Error(`sub-server ${this.name} is down`);
      const result = this.runner.step(batch.rows);
      // the runner's own call: all of a simulated runner's work, the launch of a real one's
      batch.wallMs = performance.now() - wall0;
      return { batch, result };
    } catch (e) {
      // a step that cannot start fails as one that ran would, after the launch, on the clock
      return { batch, result: Later.failAfter(this.host.clock, 0, e as Error) };
    }
  }

  /** The only place a step's results change state: per row, routeRow's decision is applied. Returns what it produced. */
  apply(batch: Batch, out: StepOutput): EngineOutputs {
    batch.resultAt = this.host.clock.now();
    batch.modelMs += out.modelMs ?? out.durationMs ?? 0;
    this.stats.landed(batch, batch.resultAt, true);
    const chunked: LocalRequest[] = [];
    for (let i = 0; i < batch.locals.length; i++) {
      const local = batch.locals[i];
      const row = batch.rows[i];
      batch.applied = i + 1;
      this.queues.fed(local, row.tokens.length);
      if (this.endedMeanwhile(local)) continue;
      // a chunk of a longer feed: its sampled token is not the next one, so it is neither routed nor committed
      if (row.position + row.tokens.length < local.tokens.length) {
        this.stats.chunks++;
        chunked.push(local);
      } else this.applyRow(local, out.rows[i], batch);
    }
    // prompts under way keep their place ahead of later ones (a prompt's first token is not pushed back by each new arrival)
    if (chunked.length > 0) this.queues.enqueue(chunked, true);
    return this.returned(batch);
  }

  private applyRow(local: LocalRequest, sig: TokenSignals, batch: Batch): void {
    const { spec } = local;
    local.stepsHere++;
    if (local.grammarError) return this.finish(local, 'failed', 'error', new TokenRouterError('runner_error', `${this.name}: ${local.grammarError.message}`));
    const d = routeRow(local, sig, this.runner.info.eosTokenIds, spec.sampling.stopTokenIds);
    if (d.kind === 'fail')
      return this.finish(local, 'failed', 'error', new TokenRouterError('algorithm_error', `${spec.algorithm.name}.${d.fn}: ${d.message}`));
    if (d.commit !== undefined && !this.commit(local, sig, d.kind === 'handoff')) return;
    if (d.kind === 'finish') return this.finish(local, 'done', d.reason);
    if (d.kind === 'stay') return this.queues.enqueue([local]);
    this.sendOut(local, d.handoff, batch, d.at);
  }

  /** Appends a committed token and tells the entry, with the text it shows; false when that ended the request (a stop string, a cancel). */
  private commit(local: LocalRequest, sig: TokenSignals, atHandoff: boolean): boolean {
    local.tokens.push(sig.token);
    const refused = local.grammar && acceptCommitted(local, this.name);
    if (refused) {
      this.finish(local, 'failed', 'error', refused);
      return false;
    }
    const { text } = local;
    const shown = text ? this.host.output!.push(text, local.spec, sig.token) : '';
    this.events.push({
      type: 'commit',
      requestId: local.id,
      index: local.generated - 1,
      token: sig.token,
      model: local.model,
      signals: local.spec.detail ? sig : undefined,
      atHandoff,
      text: shown,
    });
    if (text && text.stopAt >= 0) {
      this.finish(local, 'done', 'stop');
      return false;
    }
    return !local.ended;
  }

  /** The request leaves for a peer: it keeps its state here (pending-return) unless standard serving drops it. */
  private sendOut(local: LocalRequest, handoff: Handoff<unknown>, batch: Batch, at: number): void {
    const { spec, counters } = local;
    const to = spec.models[handoff.to - 1];
    if (!handoff.keep) counters.discarded++;
    counters.handoffs++;
    const known = local.known.slice();
    known[local.model] = local.tokens.length;
    this.host.trace?.emit(handoffEvent(this.host.clock.now(), local.id, this.name, to, batch.id, handoff, at));
    const { retain } = this.host;
    if (retain) {
      this.move(local, 'HANDOFF');
      this.queues.left(local);
      // its cache just became evictable: a request waiting for memory here may now fit
      this.admitWaiting();
    } else {
      this.move(local, 'FINISH');
      this.forget(local);
    }
    this.events.push({ type: 'moved', requestId: spec.id, to, hops: counters.handoffs });
    // standard serving: the peer may hold nothing of this request any more, so the whole context goes too
    const arrival: Arrival = { spec, handoff, known, counters, text: local.text, ...(retain ? {} : { context: local.tokens }) };
    this.sent.push({ to, arrival });
  }

  take(): EngineOutputs {
    const out = { events: this.events, sent: this.sent };
    this.events = [];
    this.sent = [];
    return out;
  }

  arrive(a: Arrival): void {
    const { spec, handoff } = a;
    let local = this.locals.get(spec.id);
    if (spec.constraint && heldForGrammar(this.host, a, this.runner.info, local)) return;
    const got = receiveRow(spec.algorithm, handoff);
    if ('fail' in got) return this.refuse(spec, new TokenRouterError('algorithm_error', `${spec.algorithm.name}.receive: ${got.fail}`));
    if (a.text && !this.host.output)
      return this.refuse(
        spec,
        new TokenRouterError('internal', `model ${this.name}'s engine has no tokenizer beside it, so it cannot detokenise this request`, 'model'),
      );
    // only after this engine restarted: the sender still counted on the KV that died with it
    if (!local && !a.context && handoff.anchor !== 0) {
      const message = `model ${this.name} restarted and lost this request's state (it came back at position ${handoff.anchor})`;
      return this.refuse(spec, new TokenRouterError('unavailable', message, 'model'));
    }
    a.known[handoff.to] = handoff.anchor + handoff.tokens.length;
    if (local) {
      // back from a peer: append the unseen suffix and resume, with no re-admission while the cache is held
      local.tokens.push(...handoff.tokens);
      local.known = a.known;
      local.meta = got.meta;
      local.counters = a.counters;
      local.text = a.text;
      local.stepsHere = 0;
      if (local.cache) {
        this.move(local, 'RETURN');
        return this.queues.enqueue([local]);
      }
      this.move(local, 'REQUEUE');
    } else {
      const grammar = spec.constraint && newGrammarState(this.host, spec, this.runner.info);
      if (grammar instanceof Error) return this.refuse(spec, grammar);
      local = new LocalRequest(spec, handoff.to, (a.context ?? handoff.tokens).slice(), a.known, got.meta, a.counters);
      local.grammar = grammar;
      local.text = a.text;
      this.locals.set(spec.id, local);
      this.emitLocal(local, 'queued');
    }
    const room = this.pool.capacityTokens;
    if (spec.maxLength > room) {
      const message = `${this.name}: request ${spec.id} needs ${spec.maxLength} KV tokens (prompt + max_tokens), more than the whole KV pool holds (${room})`;
      return this.finish(local, 'failed', 'error', new TokenRouterError('too_large', message, 'max_tokens'));
    }
    if (!this.queues.admit(local)) return;
    this.move(local, 'ADMIT');
    this.queues.enqueue([local]);
  }

  private refuse(spec: RequestSpec, error: TokenRouterError): void {
    this.events.push({ type: 'finish', requestId: spec.id, status: 'failed', reason: 'error', error });
  }

  /** The entry ended the request: drop what this engine holds of it; its tallies when this engine owned it (they are whole only there). */
  release(spec: Pick<RequestSpec, 'id'>, status: 'done' | 'failed' | 'cancelled'): LocalRequest['counters'] | null {
    const local = this.locals.get(spec.id);
    if (!local) return null;
    const counters = local.owned ? local.counters : null;
    if (!local.ended) this.move(local, END_EVENT[status]);
    this.forget(local);
    return counters;
  }

  failAll(error: Error): number {
    const held = [...this.locals.values()].filter((l) => !l.ended);
    for (const l of held) this.finish(l, 'failed', 'error', new TokenRouterError('unavailable', `model ${this.name} failed: ${error.message}`, 'model'));
    this.queues.prefix?.forget();
    return held.length;
  }

  /** The request ended here: the entry hears it, and the cache goes now (the entry's release would come straight back). */
  private finish(local: LocalRequest, status: 'done' | 'failed', reason: 'stop' | 'length' | 'error', error?: Error): void {
    // only the engine decoding it holds its text whole; what was held back goes with the finish
    const text = local.owned && local.text ? this.host.output!.finish(local.text) : undefined;
    const counters = local.owned ? { counters: local.counters } : {};
    this.events.push({ type: 'finish', requestId: local.id, status, reason, error, committed: local.generated, text, ...counters });
    if (this.locals.get(local.id) === local) this.release(local.spec, status);
  }

  /** A row came back for a request that ended while its step ran: its cache can go now. */
  private endedMeanwhile(local: LocalRequest): boolean {
    if (!local.ended) return false;
    this.queues.retire(local, !this.down);
    this.admitWaiting();
    return true;
  }

  private forget(local: LocalRequest): void {
    local.grammar?.dispose();
    local.grammar = undefined;
    this.queues.dequeue(local);
    if (this.locals.get(local.id) === local) this.locals.delete(local.id);
    if (this.isStepping(local)) return;
    this.queues.retire(local, !this.down);
    this.admitWaiting();
  }

  admitWaiting(): void {
    for (const local of this.queues.admitWaiting()) {
      this.move(local, 'ADMIT');
      this.queues.enqueue([local]);
    }
  }

  private move(local: LocalRequest, event: LocalEvent['type']): void {
    this.emitLocal(local, local.send(event));
  }

  private emitLocal(local: LocalRequest, state: LocalStatus): void {
    this.host.trace?.emit({ type: 'request-state', t: this.host.clock.now(), requestId: local.id, model: this.name, state });
  }

  private returned(batch: Batch): EngineOutputs {
    const end = this.host.clock.now();
    this.stats.applied(batch, end);
    this.host.trace?.emit(batchEvent(batch, this.name, end));
    this.inFlight = null;
    return this.take();
  }

  fail(batch: Batch, error: Error): EngineOutputs {
    this.stats.landed(batch, this.host.clock.now(), false);
    const { locals } = batch;
    for (let i = 0; i < locals.length; i++) {
      batch.applied = i + 1;
      if (!this.endedMeanwhile(locals[i]))
        this.finish(locals[i], 'failed', 'error', new TokenRouterError('runner_error', `${this.name} step failed: ${error.message}`));
    }
    return this.returned(batch);
  }
}
