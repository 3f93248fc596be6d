// Synthetic-but-realistic trace generator: a small discrete-event simulation of token-level routing (R2R-like or ME-like).
import type { TraceEvent } from '../trace.ts';
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
  while (s.step()) { /* run to completion */ }
  return s.buffer;
}

/** The simulation as a stream (demo feeds pull from it a little at a time instead of blocking on a whole trace). */
export function createTraceStream(opts: GenerateOptions & { endless?: boolean } = {}): TraceStream {
  const algorithm = opts.algorithm ?? 'r2r';
  const models = (opts.models ?? (algorithm === 'me' ? ME_MODELS : R2R_MODELS)).map((m) => ({ ...m }));
  const rnd = mulberry32(opts.seed ?? 1);
  const p = opts.p ?? 0.2;
  const lambda = opts.lambda ?? [0.5, 0.3, 0.2].slice(0, models.length);
  const concurrency = opts.concurrency ?? 16;
  const maxRequests = opts.requests ?? Infinity;
  const targetEvents = opts.targetEvents ?? Infinity;
  if (!opts.endless && !Number.isFinite(maxRequests) && !Number.isFinite(targetEvents)) throw new Error('generateTrace: set requests, targetEvents or endless');
  let produced = 0;
  const maxTokens = opts.maxTokens ?? 64;
  const promptTokens = opts.promptTokens ?? 48;
  const maxWaitMs = opts.maxWaitMs ?? 40;
  const mode = opts.mode ?? 'async-delayed';
  const out: TraceEvent[] = [];
  let now = opts.t0 ?? 0;

  const config = (t: number): void => {
    out.push({
      type: 'config', t, mode, retainState: true, maxWaitMs,
      thresholds: Object.fromEntries(models.map((m) => [m.name, m.threshold])),
    });
  };
  config(now);

  const ready: SimRequest[][] = models.map(() => []);
  const busyUntil: number[] = models.map(() => -Infinity);
  const running: (null | { id: number; rows: SimRequest[]; start: number; end: number; phase: 'prefill' | 'extend' | 'decode'; fed: number })[] = models.map(() => null);
  const batchSeq: number[] = models.map((_, i) => (i + 1) * 1_000_000);
  let admitted = 0;
  let active = 0;
  let configChanged = opts.changeConfigAt === undefined;

  const pickOther = (from: number): number => {
    if (algorithm === 'r2r') return from === 0 ? 1 : 0;
    let r = rnd() * lambda.reduce((a, b) => a + b, 0);
    for (let i = 0; i < models.length; i++) { r -= lambda[i]; if (r <= 0) return i; }
    return models.length - 1;
  };

  const enqueue = (req: SimRequest, m: number, t: number): void => {
    req.at = m;
    req.readySince = t;
    req.queued = true;
    ready[m].push(req);
    out.push({ type: 'request-state', t, requestId: req.id, model: models[m].name, state: 'queued' });
    out.push({ type: 'queue', t, model: models[m].name, length: ready[m].length });
  };

  const admit = (t: number): void => {
    const req: SimRequest = {
      id: `req-${(admitted++).toString().padStart(5, '0')}`, admittedAt: t, firstTokenAt: null, tokens: [], producers: [],
      at: 0, seen: models.map(() => 0), visited: new Set([0]), handoffs: 0, pendingFeed: promptTokens, readySince: t, queued: true,
    };
    active++;
    out.push({ type: 'request-state', t, requestId: req.id, model: null, state: 'admitted' });
    enqueue(req, 0, t);
  };

  const finish = (req: SimRequest, t: number): void => {
    for (const m of req.visited) out.push({ type: 'request-state', t, requestId: req.id, model: models[m].name, state: 'done' });
    out.push({ type: 'request-state', t, requestId: req.id, model: null, state: 'done' });
    const runs: { model: string; count: number }[] = [];
    for (const m of req.producers) {
      const last = runs[runs.length - 1];
      if (last && last.model === models[m].name) last.count++;
      else runs.push({ model: models[m].name, count: 1 });
    }
    out.push({
      type: 'request-end', t, requestId: req.id, status: 'done', tokens: req.tokens, runs, handoffs: req.handoffs,
      admittedAt: req.admittedAt, firstTokenAt: req.firstTokenAt,
    });
    active--;
  };

  const canAdmit = (): boolean => opts.endless === true || (admitted < maxRequests && produced + out.length < targetEvents);
  while (active < concurrency && canAdmit()) admit(now);

  const launch = (m: number, t: number): void => {
    const rows = ready[m].splice(0, 256);
    let fed = 0;
    let phase: 'prefill' | 'extend' | 'decode' = 'decode';
    for (const r of rows) {
      fed += Math.max(1, r.pendingFeed);
      if (r.seen[m] === 0) phase = 'prefill';
      else if (r.pendingFeed > 1 && phase !== 'prefill') phase = 'extend';
    }
    const model = models[m];
    // Jitter: real step times vary a few percent with kernels and host scheduling.
    const dur = (model.baseMs + model.perRowMs * rows.length + model.perTokenMs * (fed - rows.length)) * (0.95 + 0.1 * rnd());
    const id = batchSeq[m]++;
    running[m] = { id, rows, start: t, end: t + dur, phase, fed };
    busyUntil[m] = t + dur;
    out.push({ type: 'queue', t, model: model.name, length: ready[m].length });
    // Only transitions are traced: rows that were already running stay silent.
    for (const r of rows) {
      if (!r.queued) continue;
      r.queued = false;
      out.push({ type: 'request-state', t, requestId: r.id, model: model.name, state: 'running' });
    }
  };

  const complete = (m: number): void => {
    const b = running[m]!;
    running[m] = null;
    const t = b.end;
    const model = models[m];
    out.push({ type: 'batch', model: model.name, batchId: b.id, requestIds: b.rows.map((r) => r.id), phase: b.phase, tokens: b.fed, start: b.start, end: b.end });
    const stay: SimRequest[] = [];
    for (const r of b.rows) {
      r.pendingFeed = 1;
      const token = Math.floor(rnd() * 32000);
      let to = -1;
      let kept = true;
      if (algorithm === 'r2r') {
        if (m === 0 && rnd() < p) { to = 1; kept = false; }
        else if (m !== 0) to = 0;
      } else {
        const next = pickOther(m);
        if (next !== m) to = next;
      }
      if (kept) {
        r.tokens.push(token);
        r.producers.push(m);
        if (r.firstTokenAt === null) {
          r.firstTokenAt = t;
          out.push({ type: 'request-state', t, requestId: r.id, model: null, state: 'streaming' });
        }
      }
      r.seen[m] = promptTokens + r.tokens.length;
      if (r.tokens.length >= maxTokens) { finish(r, t); continue; }
      if (to < 0) { stay.push(r); continue; }
      const unseen = promptTokens + r.tokens.length - r.seen[to];
      r.handoffs++;
      r.visited.add(to);
      out.push({ type: 'handoff', t, requestId: r.id, from: model.name, to: models[to].name, batchId: b.id, tokens: unseen, kept });
      out.push({ type: 'request-state', t, requestId: r.id, model: model.name, state: 'pending-return' });
      r.pendingFeed = Math.max(1, unseen);
      enqueue(r, to, t);
    }
    // Requests that stay keep decoding here: straight back into the next batch (continuous batching),
    // not counted as waiting in the queue.
    for (const r of stay) { r.at = m; r.readySince = t; }
    ready[m].unshift(...stay);
    while (active < concurrency && canAdmit()) admit(t);
  };

  let taken = 0;
  const step = (): boolean => {
    // Count what callers spliced away so that targetEvents still bounds the whole stream.
    if (out.length < taken) produced += taken - out.length;
    const r = stepOnce();
    taken = out.length;
    return r;
  };
  const stepOnce = (): boolean => {
    // Launch every idle model whose queue reached its threshold (or whose oldest entry waited max-wait).
    for (let m = 0; m < models.length; m++) {
      if (running[m] || ready[m].length === 0) continue;
      const oldest = Math.min(...ready[m].map((r) => r.readySince));
      if (ready[m].length >= models[m].threshold || now - oldest >= maxWaitMs - 1e-9) launch(m, now);
    }
    if (!configChanged && now >= opts.changeConfigAt!) {
      configChanged = true;
      for (const m of models) if (m.threshold > 1) m.threshold = Math.max(1, m.threshold - 2);
      config(now);
    }
    // Next moment anything happens: a batch end or a max-wait deadline.
    let next = Infinity;
    for (let m = 0; m < models.length; m++) {
      if (running[m]) next = Math.min(next, running[m]!.end);
      else if (ready[m].length) next = Math.min(next, Math.min(...ready[m].map((r) => r.readySince)) + maxWaitMs);
    }
    if (next === Infinity) return false;
    now = next;
    for (let m = 0; m < models.length; m++) if (running[m] && running[m]!.end <= now + 1e-9) complete(m);
    return true;
  };
  return { buffer: out, step };
}

/** Serialises events as JSON lines (the recorded trace file format). */
export function toJsonLines(events: readonly TraceEvent[]): string {
  return events.map((e) => JSON.stringify(e)).join('\n') + '\n';
}
