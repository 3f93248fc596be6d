// The HTTP load generator: vLLM benchmark_serving's loop (warm-up, open- or closed-loop arrivals under a concurrency cap, streamed requests).
import http from 'node:http';
import { mulberry32 } from '../../shared/rng.ts';
import { arrivalTimesMs } from './arrivals.ts';
import type { Slo } from './goodput.ts';
import { servingMetrics, type RequestRecord, type ServingMetrics } from './requestMetrics.ts';
import { Semaphore } from './semaphore.ts';
import { streamCompletion, type CompletionBody } from './streamCompletion.ts';

export interface ServingLoad {
  /** Server root, e.g. http://127.0.0.1:8080 */
  baseUrl: string;
  /** Algorithm (or single model) to request. */
  model: string;
  /** At most this many requests in flight (the semaphore's permits; vLLM's `--max-concurrency`). */
  concurrency: number;
  /** Mean arrivals per second of the measured requests; Infinity (the default): all at once, a closed loop of `concurrency`. */
  requestRate?: number;
  /** Gamma shape of the inter-arrival gaps: 1 (default) Poisson, < 1 burstier, > 1 steadier. */
  burstiness?: number;
  /** Seed of the arrival schedule (default 0), so an open-loop run is reproducible. */
  seed?: number;
  /** Latency bounds for goodput. */
  slo?: Slo;
  /** Measured requests. */
  requests: number;
  /** Untimed requests run first at the same concurrency (JIT, worker and cache warm-up). */
  warmup: number;
  maxTokens: number;
  /** The user message of request i (warm-up requests use negative i). */
  prompt: (i: number) => string;
  /** The whole conversation of request i instead (few-shot turns, a chat's history); `prompt` is then unused. */
  messages?: (i: number) => CompletionBody['messages'];
  temperature?: number;
  /** Nucleus sampling's top_p (absent: the server's default). */
  topP?: number;
  /**
   * Open loop: where latency starts. 'arrival' (default): at the scheduled arrival, so a request that
   * waits for a permit counts that wait in TTFT and E2E, as an operator's users would see it; 'send': at the
   * send, as vLLM's benchmark_serving, which hides the queue the cap builds past saturation.
   */
  latencyFrom?: LatencyStart;
  /** Send `ignore_eos: true` (vLLM's `--ignore-eos`): every request runs to max_tokens. */
  ignoreEos?: boolean;
  /** Called after each measured request ends. */
  onProgress?: (done: number, total: number) => void;
}

export type LatencyStart = 'arrival' | 'send';

export interface ServingRun {
  metrics: ServingMetrics;
  records: RequestRecord[];
  /** Σ tokens by model over measured requests, from the tokenrouter extension. */
  tokensByModel: Record<string, number>;
  handoffs: number;
  discardedTokens: number;
  /** First error message seen, if any request failed. */
  firstError?: string;
  /** CPU ms the load generator's process used over the run (a child-process client reports it). */
  clientCpuMs?: number;
  /** Open loop only: each measured request's scheduled arrival, on the records' clock (it is sent at or after it, once a permit is free). */
  scheduledMs?: number[];
}

function body(load: ServingLoad, i: number): CompletionBody {
  const b: CompletionBody = {
    model: load.model,
    messages: load.messages ? load.messages(i) : [{ role: 'user', content: load.prompt(i) }],
    max_tokens: load.maxTokens,
    temperature: load.temperature ?? 0,
    seed: Math.abs(i),
  };
  if (load.topP !== undefined) b.top_p = load.topP;
  if (load.ignoreEos) b.ignore_eos = true;
  return b;
}

/** Resolves at `atMs` on performance.now()'s clock, never before (a timer may fire up to a ms early). */
async function sleepUntil(atMs: number): Promise<void> {
  for (let left = atMs - performance.now(); left > 0; left = atMs - performance.now()) await new Promise((r) => setTimeout(r, Math.ceil(left)));
}

/**
 * Request `ids[k]` waits for `atMs[k]` (when given), then for a permit, as vLLM's asyncio tasks do.
 * One dispatcher sleeps from arrival to arrival, so a long open-loop run holds one timer, not one per request.
 */
async function runBatch(load: ServingLoad, agent: http.Agent, ids: number[], atMs?: number[], onDone?: (n: number) => void): Promise<RequestRecord[]> {
  const sem = new Semaphore(load.concurrency);
  let done = 0;
  const fromArrival = (load.latencyFrom ?? 'arrival') === 'arrival';
  const send = (i: number, arrivalMs?: number) =>
    sem.with(async () => {
      const r = await streamCompletion(load.baseUrl, body(load, i), agent);
      if (arrivalMs !== undefined && fromArrival) r.arrivalMs = arrivalMs;
      onDone?.(++done);
      return r;
    });
  if (!atMs) return Promise.all(ids.map((i) => send(i)));
  const started: Promise<RequestRecord>[] = [];
  for (let k = 0; k < ids.length; k++) {
    await sleepUntil(atMs[k]);
    // The scheduled time, not the wake-up: a dispatcher that wakes late (a busy client) is queueing too.
    const r = send(ids[k], atMs[k]);
    r.catch(() => {}); // seen by Promise.all below; not an unhandled rejection while later arrivals wait
    started.push(r);
  }
  return Promise.all(started);
}

export async function benchmarkServing(load: ServingLoad): Promise<ServingRun> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: load.concurrency + 2 });
  try {
    if (load.warmup > 0) {
      const warm = await runBatch(
        load,
        agent,
        Array.from({ length: load.warmup }, (_, k) => -(k + 1)),
      );
      const bad = warm.find((r) => !r.ok);
      if (bad && warm.every((r) => !r.ok)) throw new Error(`every warm-up request failed: ${bad.error}`);
    }
    const rate = load.requestRate ?? Infinity;
    const t0 = performance.now();
    const scheduledMs =
      rate === Infinity ? undefined : arrivalTimesMs(load.requests, rate, load.burstiness ?? 1, mulberry32(load.seed ?? 0)).map((t) => t0 + t);
    const records = await runBatch(
      load,
      agent,
      Array.from({ length: load.requests }, (_, i) => i),
      scheduledMs,
      (n) => load.onProgress?.(n, load.requests),
    );
    const tokensByModel: Record<string, number> = {};
    let handoffs = 0;
    let discardedTokens = 0;
    for (const r of records) {
      if (!r.ok) continue;
      for (const [m, n] of Object.entries(r.tokensByModel ?? {})) tokensByModel[m] = (tokensByModel[m] ?? 0) + n;
      handoffs += r.handoffs ?? 0;
      discardedTokens += r.discardedTokens ?? 0;
    }
    return {
      metrics: servingMetrics(records, undefined, load.slo),
      records,
      tokensByModel,
      handoffs,
      discardedTokens,
      firstError: records.find((r) => !r.ok)?.error,
      scheduledMs,
    };
  } finally {
    agent.destroy();
  }
}

/**
 * Pools repeated runs of one configuration: throughput is Σ tokens / Σ run spans (the gaps between
 * runs never count), latency figures are over every request of every run, goodput against the
 * first run's SLO.
 */
export function poolRuns(runs: readonly ServingRun[]): ServingRun {
  if (runs.length === 1) return runs[0];
  const records = runs.flatMap((r) => r.records);
  const duration = runs.reduce((s, r) => s + r.metrics.durationMs, 0);
  const tokensByModel: Record<string, number> = {};
  for (const r of runs) for (const [m, n] of Object.entries(r.tokensByModel)) tokensByModel[m] = (tokensByModel[m] ?? 0) + n;
  return {
    metrics: servingMetrics(records, duration, runs[0].metrics.slo),
    records,
    tokensByModel,
    handoffs: runs.reduce((s, r) => s + r.handoffs, 0),
    discardedTokens: runs.reduce((s, r) => s + r.discardedTokens, 0),
    firstError: runs.find((r) => r.firstError)?.firstError,
  };
}
