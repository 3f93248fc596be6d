// Per-request and aggregate serving metrics with docs/benchmarks.md's definitions (vLLM / SGLang benchmark_serving).
import { summarize, type Summary } from '../util/stats.ts';
import { meetsSlo, type Slo } from './goodput.ts';

/** What the client observed for one request; times are ms on one monotonic clock. */
export interface RequestRecord {
  ok: boolean;
  error?: string;
  /** When the request was sent. */
  sendMs: number;
  /**
   * Open loop: when the request arrived (its scheduled time), if it waited for a permit before being
   * sent. Latency then counts from here, so the queueing the offered rate causes shows in TTFT and E2E
   * whichever side of the cap it happens on (absent: from the send, as vLLM's benchmark_serving).
   */
  arrivalMs?: number;
  /** Arrival time of every chunk that carried content (non-empty text), in order. */
  contentChunkMs: number[];
  /** Arrival of the last chunk: the end of the stream. */
  endMs: number;
  /** Committed output tokens, from usage / the tokenrouter extension (never text length). */
  outputTokens: number;
  promptTokens?: number;
  finishReason?: string;
  tokensByModel?: Record<string, number>;
  handoffs?: number;
  discardedTokens?: number;
}

export interface RequestMetrics {
  /** start (arrival if recorded, else send) → first chunk with content. */
  ttftMs: number;
  /** start → last chunk. */
  e2eMs: number;
  /** arrival → send: the wait for a permit at the client (0 without an arrival). */
  queueMs: number;
  /** (latency − TTFT) / (output_len − 1); undefined for outputs of one token or less. */
  tpotMs: number | undefined;
  /** Gaps between consecutive content chunks. */
  itlMs: number[];
}

export function requestMetrics(r: RequestRecord): RequestMetrics {
  const first = r.contentChunkMs.length > 0 ? r.contentChunkMs[0] : r.endMs;
  const start = requestStartMs(r);
  const ttftMs = first - start;
  const e2eMs = r.endMs - start;
  const itlMs: number[] = [];
  for (let i = 1; i < r.contentChunkMs.length; i++) itlMs.push(r.contentChunkMs[i] - r.contentChunkMs[i - 1]);
  const tpotMs = r.outputTokens > 1 ? (e2eMs - ttftMs) / (r.outputTokens - 1) : undefined;
  return { ttftMs, e2eMs, queueMs: r.sendMs - start, tpotMs, itlMs };
}

/** Where a request's latency starts: its arrival when the open loop recorded one (never after the send), else the send. */
export function requestStartMs(r: Pick<RequestRecord, 'sendMs' | 'arrivalMs'>): number {
  return r.arrivalMs === undefined ? r.sendMs : Math.min(r.arrivalMs, r.sendMs);
}

export interface ServingMetrics {
  completed: number;
  failed: number;
  /** First arrival (or dispatch) to last completion, ms. */
  durationMs: number;
  totalOutputTokens: number;
  /** Σ committed output tokens / duration. */
  outputThroughputTokS: number;
  /** Completed requests / duration. */
  requestThroughputRps: number;
  /** The SLO goodput was measured against; absent (with the two fields below) when none was given. */
  slo?: Slo;
  /** Completed requests that met every bound of `slo`. */
  sloMet?: number;
  /** sloMet / duration: always ≤ requestThroughputRps. */
  goodputReqS?: number;
  ttftMs: Summary;
  /** arrival → send over completed requests (all 0 unless arrivals were recorded). */
  queueMs: Summary;
  tpotMs: Summary;
  itlMs: Summary;
  e2eMs: Summary;
  /** Mean committed output tokens per successful request. */
  meanOutputTokens: number;
}

/**
 * Aggregates a measured run (`durationOverrideMs`: the summed spans of several runs pooled together). Failed requests count in `failed` and nowhere else, as in vLLM; the
 * duration still spans every request dispatched, failed or not, so failures cannot flatter throughput.
 * With an `slo`, goodput counts the completed requests that met all of its bounds.
 */
export function servingMetrics(records: readonly RequestRecord[], durationOverrideMs?: number, slo?: Slo): ServingMetrics {
  const ok = records.filter((r) => r.ok);
  let start = Infinity;
  let end = -Infinity;
  for (const r of records) {
    const s = requestStartMs(r);
    if (s < start) start = s;
    if (r.endMs > end) end = r.endMs;
  }
  const durationMs = durationOverrideMs ?? (records.length > 0 ? end - start : 0);
  const per = ok.map(requestMetrics);
  const totalOutputTokens = ok.reduce((s, r) => s + r.outputTokens, 0);
  const itl: number[] = [];
  for (const m of per) for (const g of m.itlMs) itl.push(g);
  const perSecond = (n: number) => (durationMs > 0 ? (n / durationMs) * 1000 : 0);
  const sloMet = slo === undefined ? undefined : per.filter((m) => meetsSlo(m, slo)).length;
  return {
    completed: ok.length,
    failed: records.length - ok.length,
    durationMs,
    totalOutputTokens,
    outputThroughputTokS: perSecond(totalOutputTokens),
    requestThroughputRps: perSecond(ok.length),
    ...(sloMet === undefined ? {} : { slo, sloMet, goodputReqS: perSecond(sloMet) }),
    ttftMs: summarize(per.map((m) => m.ttftMs)),
    queueMs: summarize(per.map((m) => m.queueMs)),
    tpotMs: summarize(per.flatMap((m) => (m.tpotMs === undefined ? [] : [m.tpotMs]))),
    itlMs: summarize(itl),
    e2eMs: summarize(per.map((m) => m.e2eMs)),
    meanOutputTokens: ok.length > 0 ? totalOutputTokens / ok.length : 0,
  };
}
