// Replays a recorded trace's requests in virtual time: the same committed tokens from the same models, under another scheduling setup.
import { standardSend, type Algorithm } from '../../shared/algorithm.ts';
import type { TraceEvent, TraceSink } from '../../shared/trace.ts';
import { VirtualClock } from '../clock/virtualClock.ts';
import { Cluster } from '../entry/cluster.ts';
import { TokenRouterError } from '../errors.ts';
import { SimRunner } from '../runner/simRunner.ts';
import type { SchedulingMode } from '../core/servingPolicy.ts';
import { fitLatencyProfile } from '../control/throughput/index.ts';
import { meanInFlight, traceModels } from '../trace/traceSummary.ts';
import { runClosedLoop, type ClosedLoopReport } from './closedLoop.ts';

export interface RecordedRequest {
  tokens: number[];
  /** Model name of each committed token. */
  producedBy: string[];
  /** Hand-offs in order: where to, the output index sampled just before (when the trace has it), and whether that token was kept. */
  handoffs: { from: string; to: string; at?: number; kept: boolean }[];
}

export interface RecordedWorkload {
  /** Models in the order of their first batch. */
  models: string[];
  /** Finished requests with output, in the order they ended. */
  requests: RecordedRequest[];
  /** Decode step ms by model and batch size (index b − 1), fitted from the recorded decode batches. */
  latency: number[][];
  /** Extra ms per token fed beyond one per row (prefill and extend), per model: least squares over the other batches. */
  perTokenMs: number[];
  /** Mean requests in flight. */
  concurrency: number;
  /** Committed tokens per second over the recording (first admission to last end). */
  throughputTokS: number;
}

/** What a replay needs from a trace: each request's tokens and who wrote them, and what a step cost. */
export function recordedWorkload(events: readonly TraceEvent[]): RecordedWorkload {
  const models = traceModels(events);
  const samples: { model: number; batch: number; ms: number; extra: number }[] = [];
  const requests: RecordedRequest[] = [];
  const handoffs = new Map<string, RecordedRequest['handoffs']>();
  let lo = Infinity;
  let hi = -Infinity;
  for (const e of events) {
    if (e.type === 'batch') {
      // A batch recorded with lookahead (removed; older traces) made `steps` passes; its extra tokens (prefill, extend) all went into the first.
      const steps = e.steps ?? 1;
      const extra = Math.max(0, e.tokens - e.requestIds.length - (e.aheadRows ?? 0));
      if (e.end > e.start) samples.push({ model: models.indexOf(e.model), batch: e.requestIds.length, ms: (e.end - e.start) / steps, extra: extra / steps });
    } else if (e.type === 'handoff') {
      const h = handoffs.get(e.requestId) ?? [];
      h.push({ from: e.from, to: e.to, at: e.at, kept: e.kept });
      handoffs.set(e.requestId, h);
    } else if (e.type === 'request-end' && e.status === 'done' && e.tokens.length > 0) {
      requests.push({
        tokens: e.tokens,
        producedBy: e.runs.flatMap((r) => new Array<string>(r.count).fill(r.model)),
        handoffs: handoffs.get(e.requestId) ?? [],
      });
      lo = Math.min(lo, e.admittedAt);
      hi = Math.max(hi, e.t);
    }
  }
  if (requests.length === 0) throw new TokenRouterError('invalid_request', 'the trace has no finished requests with output to replay', 'replay');
  for (const r of requests) {
    if (r.producedBy.length !== r.tokens.length)
      throw new TokenRouterError('invalid_request', 'a request-end event whose runs do not cover its tokens', 'replay');
    for (const m of r.producedBy)
      if (!models.includes(m)) throw new TokenRouterError('invalid_request', `model ${m} wrote tokens but ran no batch in the trace`, 'replay');
  }
  const maxBatch = samples.reduce((m, s) => Math.max(m, s.batch), 1);
  // Step cost = L(b) from batches that fed one token a row, plus a per-token charge for the rest,
  // so replaying with re-admission pays for re-prefilling as the recording's prefills did.
  const decode = samples.filter((s) => s.extra === 0);
  const covered = new Set(decode.map((s) => s.model));
  const base = fitLatencyProfile([...decode, ...samples.filter((s) => !covered.has(s.model))], { maxBatch });
  const perTokenMs = models.map((_, m) => {
    let num = 0;
    let den = 0;
    for (const s of samples) {
      if (s.model !== m || s.extra === 0) continue;
      num += (s.ms - base.at(m, s.batch)) * s.extra;
      den += s.extra * s.extra;
    }
    return den > 0 ? Math.max(0, num / den) : 0;
  });
  const committed = requests.reduce((s, r) => s + r.tokens.length, 0);
  return {
    models,
    requests,
    latency: base.table,
    perTokenMs,
    concurrency: Math.max(1, Math.round(meanInFlight(events) ?? 1)),
    throughputTokS: hi > lo ? (committed / (hi - lo)) * 1000 : 0,
  };
}

/**
 * Routes one request along its recorded path, step for step: each recorded hand-off happens again
 * after sampling the same output index, keeping or discarding that token as it did. Traces without
 * hand-off positions (older ones) are followed by the writers of the committed tokens alone: a
 * switch where the writer changes, keeping the last token of a run.
 */
export function replayAlgorithm(models: readonly string[], request: Pick<RecordedRequest, 'producedBy' | 'handoffs'>): Algorithm<{ switches: number }> {
  const { producedBy, handoffs } = request;
  const id = (m: string) => models.indexOf(m) + 1;
  const exact = handoffs.length > 0 && handoffs.every((h) => h.at !== undefined);
  return {
    name: 'replay',
    models: [...models],
    // The first hand-off's sender when the trace says where it started, else the first token's writer.
    entry: id(handoffs[0]?.from ?? producedBy[0]),
    initMeta: () => ({ switches: 0 }),
    route: (r) => {
      const k = r.generated;
      if (exact) {
        const h = handoffs[r.meta.switches];
        return h?.at === k ? id(h.to) : 0;
      }
      const want = producedBy[k];
      if (want === undefined) return 0;
      if (id(want) !== r.model) return id(want);
      const next = producedBy[k + 1];
      return next !== undefined && id(next) !== r.model ? id(next) : 0;
    },
    send: (req) => {
      const h = handoffs[req.meta.switches++];
      return standardSend(req, exact ? h.kept : producedBy[req.result.generated] === models[req.from - 1]);
    },
  };
}

export interface ReplayOptions {
  mode: SchedulingMode;
  retainState: boolean;
  /** By model name; others 1. */
  thresholds?: Readonly<Record<string, number>>;
  /** Default: the recording's mean requests in flight. */
  concurrency?: number;
  maxWaitMs?: number;
  maxBatch?: number;
  promptLength?: number;
  trace?: TraceSink;
}

export interface ReplayResult {
  recorded: RecordedWorkload;
  report: ClosedLoopReport;
}

export function replayTrace(events: readonly TraceEvent[], opts: ReplayOptions): ReplayResult {
  const recorded = recordedWorkload(events);
  const { models, requests, latency } = recorded;
  const promptLength = opts.promptLength ?? 16;
  const at = (table: number[], b: number) => table[Math.min(b, table.length) - 1];
  // Loops, not spreads: a long recording holds more tokens than a call can take as arguments.
  let vocabSize = 2;
  let longest = 1;
  for (const r of requests) {
    longest = Math.max(longest, r.tokens.length);
    for (const t of r.tokens) vocabSize = Math.max(vocabSize, t + 1);
  }
  const runners = models.map(
    (name, m) =>
      new SimRunner({
        name,
        eosTokenIds: [],
        vocabSize,
        maxContext: promptLength + longest + 1,
        latency: (b, fed) => at(latency[m], b) + recorded.perTokenMs[m] * Math.max(0, fed - b),
        // Request c<i> replays recorded request i: whichever model samples output k draws its token k.
        next: (ctx) => ({ token: requests[Number(ctx.requestId.slice(1))].tokens[ctx.position - promptLength] ?? 1, entropy: 0, maxProb: 1 }),
      }),
  );
  const clock = new VirtualClock();
  const cluster = new Cluster({
    clock,
    mode: opts.mode,
    retainState: opts.retainState,
    maxConcurrency: opts.concurrency ?? recorded.concurrency,
    maxWaitMs: opts.maxWaitMs ?? 20,
    trace: opts.trace,
    models: models.map((name, m) => ({ name, runner: runners[m], maxBatch: opts.maxBatch ?? 64, threshold: opts.thresholds?.[name] ?? 1 })),
  });
  const report = runClosedLoop(cluster, clock, replayAlgorithm(models, requests[0]) as Algorithm<unknown>, {
    concurrency: opts.concurrency ?? recorded.concurrency,
    requests: requests.length,
    promptLength,
    maxTokens: 1,
    perRequest: (i) => ({ algorithm: replayAlgorithm(models, requests[i]) as Algorithm<unknown>, maxTokens: requests[i].tokens.length }),
  });
  return { recorded, report };
}
