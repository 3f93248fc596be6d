// Synthetic-but-realistic trace generator: a small discrete-event simulation of token-level routing (R2R-like or ME-like).
import { modelRuns, type TraceEvent } from '../trace.ts';
import { mulberry32 } from '../rng.ts';

/** One simulated sub-server. Step latency grows with rows and fed tokens, like a real batched forward pass. */
export interface SimModel {
  name: string;
  /** Fixed cost of one forward pass (ms). */
  baseMs: number;
  /** Extra cost per row in the batch (ms). */
  perRowMs: number;
  /** Extra cost per fed token beyond one per row (prefill / catch-up), in ms. */
  perTokenMs: number;
  /** Delayed-batching threshold: launch when this many requests are ready (or max-wait passes). */
  threshold: number;
}

export interface GenerateOptions {
  /** 'r2r': small hands to large with probability p (small's token discarded), large hands back after one kept token.
   *  'me': each step draws the next model from `lambda`; switches keep the token. */
  algorithm?: 'r2r' | 'me';
  models?: SimModel[];
  /** Probability that a small-model step routes to the large model (r2r). */
  p?: number;
  /** Model draw weights (me); defaults to 0.5 / 0.3 / 0.2. */
  lambda?: number[];
  concurrency?: number;
  /** Stop admitting after this many requests; the trace ends when they all finish. */
  requests?: number;
  /** Stop admitting once this many events were produced (whichever comes first with `requests`). */
  targetEvents?: number;
  maxTokens?: number;
  promptTokens?: number;
  maxWaitMs?: number;
  mode?: string;
  seed?: number;
  /** Change thresholds once mid-trace (emits a second `config` event). */
  changeConfigAt?: number;
  /** Time origin of the trace (ms). */
  t0?: number;
}

/** Default two-model pair, latencies after the paper's R2R figures (small ≈ 6 ms, large ≈ 28 ms per step). */
export const R2R_MODELS: SimModel[] = [
  { name: 'qwen3-0.6b', baseMs: 5.2, perRowMs: 0.1, perTokenMs: 0.01, threshold: 1 },
  { name: 'qwen3-32b', baseMs: 26.5, perRowMs: 0.18, perTokenMs: 0.03, threshold: 4 },
];

export const ME_MODELS: SimModel[] = [
  { name: 'tiny-a', baseMs: 3, perRowMs: 0.08, perTokenMs: 0.01, threshold: 1 },
  { name: 'tiny-b', baseMs: 7, perRowMs: 0.12, perTokenMs: 0.02, threshold: 2 },
  { name: 'tiny-c', baseMs: 15, perRowMs: 0.2, perTokenMs: 0.03, threshold: 3 },
];

interface SimRequest {
  id: string;
  admittedAt: number;
  firstTokenAt: number | null;
  /** Committed output tokens and the model that produced each. */
  tokens: number[];
  producers: number[];
  /** Model currently owning the request. */
  at: number;
  /** Sequence length (prompt included) each model has in its cache; 0 = never ran there (its first batch prefills). */
  seen: number[];
  visited: Set<number>;
  handoffs: number;
  /** Tokens fed by the next batch on `at` (catch-up suffix). */
  pendingFeed: number;
  readySince: number;
  /** Waiting in a queue (not yet running) on `at`. */
  queued: boolean;
}

/** An incremental simulation: each step() advances to the next moment anything happens and appends to `buffer`. */
export interface TraceStream {
  /** Events produced and not yet taken, in emission order; callers may splice from the front. */
  buffer: TraceEvent[];
  /** Advances one simulation step; false once every request finished (never, when endless). */
  step(): boolean;
}

/**
 * Runs the simulation and returns the events in emission order (a batch is emitted when it ends,
 * as a live runtime would). Times are milliseconds.
 */
export function generateTrace(opts: GenerateOptions = {}): TraceEvent[] {
  const s = createTraceStream(opts);
  while (s.step()) {
    /* run to completion */
  }
  return s.buffer;
}

/** The simulation as a stream (demo feeds pull from it a little at a time instead of blocking on a whole trace). */
export function createTraceStream(opts: GenerateOptions & { endless?: boolean } = {}): TraceStream {
  return new TraceSimulation(opts);
}

type Phase = 'prefill' | 'extend' | 'decode';

interface RunningBatch {
  id: number;
  rows: SimRequest[];
  start: number;
  end: number;
  phase: Phase;
  fed: number;
}

/** Most rows one simulated batch takes from a queue. */
const MAX_ROWS = 256;

class TraceSimulation implements TraceStream {
  readonly buffer: TraceEvent[] = [];
  private readonly algorithm: 'r2r' | 'me';
  /** Copies: a mid-trace config change lowers their thresholds. */
  private readonly models: SimModel[];
  private readonly rnd: () => number;
  private readonly p: number;
  private readonly lambda: number[];
  private readonly concurrency: number;
  private readonly maxRequests: number;
  private readonly targetEvents: number;
  private readonly endless: boolean;
  private readonly maxTokens: number;
  private readonly promptTokens: number;
  private readonly maxWaitMs: number;
  private readonly mode: string;
  private readonly changeConfigAt: number | undefined;
  private now: number;
  private readonly ready: SimRequest[][];
  private readonly running: (RunningBatch | null)[];
  private readonly batchSeq: number[];
  private admitted = 0;
  private active = 0;
  private configChanged: boolean;
  /** Events callers spliced off the buffer, and the buffer length after the last step: targetEvents bounds the whole stream. */
  private produced = 0;
  private taken = 0;

  constructor(opts: GenerateOptions & { endless?: boolean }) {
    this.algorithm = opts.algorithm ?? 'r2r';
    this.models = (opts.models ?? (this.algorithm === 'me' ? ME_MODELS : R2R_MODELS)).map((m) => ({ ...m }));
    this.rnd = mulberry32(opts.seed ?? 1);
    this.p = opts.p ?? 0.2;
    this.lambda = opts.lambda ?? [0.5, 0.3, 0.2].slice(0, this.models.length);
    this.concurrency = opts.concurrency ?? 16;
    this.maxRequests = opts.requests ?? Infinity;
    this.targetEvents = opts.targetEvents ?? Infinity;
    this.endless = opts.endless === true;
    if (!this.endless && !Number.isFinite(this.maxRequests) && !Number.isFinite(this.targetEvents))
      throw new Error('generateTrace: set requests, targetEvents or endless');
    this.maxTokens = opts.maxTokens ?? 64;
    this.promptTokens = opts.promptTokens ?? 48;
    this.maxWaitMs = opts.maxWaitMs ?? 40;
    this.mode = opts.mode ?? 'async-delayed';
    this.changeConfigAt = opts.changeConfigAt;
    this.configChanged = opts.changeConfigAt === undefined;
    this.now = opts.t0 ?? 0;
    this.config(this.now);
    this.ready = this.models.map(() => []);
    this.running = this.models.map(() => null);
    this.batchSeq = this.models.map((_, i) => (i + 1) * 1_000_000);
    this.admitWhileRoom(this.now);
  }

  step(): boolean {
    if (this.buffer.length < this.taken) this.produced += this.taken - this.buffer.length;
    const more = this.advance();
    this.taken = this.buffer.length;
    return more;
  }

  /** Launches what is due, then moves to the next moment anything happens and completes the batches ending there. */
  private advance(): boolean {
    const { models, ready, running } = this;
    // Launch every idle model whose queue reached its threshold (or whose oldest entry waited max-wait).
    for (let m = 0; m < models.length; m++) {
      if (running[m] || ready[m].length === 0) continue;
      if (ready[m].length >= models[m].threshold || this.now - this.oldestReady(m) >= this.maxWaitMs - 1e-9) this.launch(m, this.now);
    }
    if (!this.configChanged && this.now >= this.changeConfigAt!) {
      this.configChanged = true;
      for (const m of models) if (m.threshold > 1) m.threshold = Math.max(1, m.threshold - 2);
      this.config(this.now);
    }
    // Next moment anything happens: a batch end or a max-wait deadline.
    let next = Infinity;
    for (let m = 0; m < models.length; m++) {
      if (running[m]) next = Math.min(next, running[m]!.end);
      else if (ready[m].length) next = Math.min(next, this.oldestReady(m) + this.maxWaitMs);
    }
    if (next === Infinity) return false;
    this.now = next;
    for (let m = 0; m < models.length; m++) if (running[m] && running[m]!.end <= this.now + 1e-9) this.complete(m);
    return true;
  }

  private oldestReady(m: number): number {
    return Math.min(...this.ready[m].map((r) => r.readySince));
  }

  private config(t: number): void {
    this.buffer.push({
      type: 'config',
      t,
      mode: this.mode,
      retainState: true,
      maxWaitMs: this.maxWaitMs,
      thresholds: Object.fromEntries(this.models.map((m) => [m.name, m.threshold])),
    });
  }

  private admitWhileRoom(t: number): void {
    const canAdmit = () => this.endless || (this.admitted < this.maxRequests && this.produced + this.buffer.length < this.targetEvents);
    while (this.active < this.concurrency && canAdmit()) this.admit(t);
  }

  private admit(t: number): void {
    const req: SimRequest = {
      id: `req-${(this.admitted++).toString().padStart(5, '0')}`,
      admittedAt: t,
      firstTokenAt: null,
      tokens: [],
      producers: [],
      at: 0,
      seen: this.models.map(() => 0),
      visited: new Set([0]),
      handoffs: 0,
      pendingFeed: this.promptTokens,
      readySince: t,
      queued: true,
    };
    this.active++;
    this.buffer.push({ type: 'request-state', t, requestId: req.id, model: null, state: 'admitted' });
    this.enqueue(req, 0, t);
  }

  private enqueue(req: SimRequest, m: number, t: number): void {
    req.at = m;
    req.readySince = t;
    req.queued = true;
    this.ready[m].push(req);
    this.buffer.push({ type: 'request-state', t, requestId: req.id, model: this.models[m].name, state: 'queued' });
    this.buffer.push({ type: 'queue', t, model: this.models[m].name, length: this.ready[m].length });
  }

  private finish(req: SimRequest, t: number): void {
    const { buffer, models } = this;
    for (const m of req.visited) buffer.push({ type: 'request-state', t, requestId: req.id, model: models[m].name, state: 'done' });
    buffer.push({ type: 'request-state', t, requestId: req.id, model: null, state: 'done' });
    buffer.push({
      type: 'request-end',
      t,
      requestId: req.id,
      status: 'done',
      tokens: req.tokens,
      runs: modelRuns(req.producers.map((m) => models[m].name)),
      handoffs: req.handoffs,
      admittedAt: req.admittedAt,
      firstTokenAt: req.firstTokenAt,
    });
    this.active--;
  }

  private launch(m: number, t: number): void {
    const rows = this.ready[m].splice(0, MAX_ROWS);
    let fed = 0;
    let phase: Phase = 'decode';
    for (const r of rows) {
      fed += Math.max(1, r.pendingFeed);
      if (r.seen[m] === 0) phase = 'prefill';
      else if (r.pendingFeed > 1 && phase !== 'prefill') phase = 'extend';
    }
    const model = this.models[m];
    // Jitter: real step times vary a few percent with kernels and host scheduling.
    const dur = (model.baseMs + model.perRowMs * rows.length + model.perTokenMs * (fed - rows.length)) * (0.95 + 0.1 * this.rnd());
    this.running[m] = { id: this.batchSeq[m]++, rows, start: t, end: t + dur, phase, fed };
    this.buffer.push({ type: 'queue', t, model: model.name, length: this.ready[m].length });
    // Only transitions are traced: rows that were already running stay silent.
    for (const r of rows) {
      if (!r.queued) continue;
      r.queued = false;
      this.buffer.push({ type: 'request-state', t, requestId: r.id, model: model.name, state: 'running' });
    }
  }

  /** Where a request goes after its step on model m (-1: it stays) and whether that step's token is kept. */
  private route(m: number): { to: number; kept: boolean } {
    if (this.algorithm === 'r2r') {
      if (m !== 0) return { to: 0, kept: true };
      return this.rnd() < this.p ? { to: 1, kept: false } : { to: -1, kept: true };
    }
    // me: the next model is drawn by lambda; a switch keeps the token.
    let r = this.rnd() * this.lambda.reduce((a, b) => a + b, 0);
    let next = this.models.length - 1;
    for (let i = 0; i < this.models.length; i++) {
      r -= this.lambda[i];
      if (r <= 0) {
        next = i;
        break;
      }
    }
    return { to: next !== m ? next : -1, kept: true };
  }

  private complete(m: number): void {
    const { buffer, models, promptTokens } = this;
    const b = this.running[m]!;
    this.running[m] = null;
    const t = b.end;
    const model = models[m];
    buffer.push({
      type: 'batch',
      model: model.name,
      batchId: b.id,
      requestIds: b.rows.map((r) => r.id),
      phase: b.phase,
      tokens: b.fed,
      start: b.start,
      end: b.end,
    });
    const stay: SimRequest[] = [];
    for (const r of b.rows) {
      r.pendingFeed = 1;
      const token = Math.floor(this.rnd() * 32000);
      const { to, kept } = this.route(m);
      if (kept) {
        r.tokens.push(token);
        r.producers.push(m);
        if (r.firstTokenAt === null) {
          r.firstTokenAt = t;
          buffer.push({ type: 'request-state', t, requestId: r.id, model: null, state: 'streaming' });
        }
      }
      r.seen[m] = promptTokens + r.tokens.length;
      if (r.tokens.length >= this.maxTokens) {
        this.finish(r, t);
        continue;
      }
      if (to < 0) {
        stay.push(r);
        continue;
      }
      const unseen = promptTokens + r.tokens.length - r.seen[to];
      r.handoffs++;
      r.visited.add(to);
      buffer.push({ type: 'handoff', t, requestId: r.id, from: model.name, to: models[to].name, batchId: b.id, tokens: unseen, kept });
      buffer.push({ type: 'request-state', t, requestId: r.id, model: model.name, state: 'pending-return' });
      r.pendingFeed = Math.max(1, unseen);
      this.enqueue(r, to, t);
    }
    // Requests that stay keep decoding here: straight back into the next batch (continuous batching),
    // not counted as waiting in the queue.
    for (const r of stay) {
      r.at = m;
      r.readySince = t;
    }
    this.ready[m].unshift(...stay);
    this.admitWhileRoom(t);
  }
}

/** Serialises events as JSON lines (the recorded trace file format). */
export function toJsonLines(events: readonly TraceEvent[]): string {
  return events.map((e) => JSON.stringify(e)).join('\n') + '\n';
}
