// The latency model: TTFT, TPOT, E2E and queueing delay of delayed batching, by simulation.
//
// The latency model: request-level TTFT, TPOT, E2E and queueing delay of delayed batching, open loop
// (arrivals at a rate) or closed (N always in flight), by continuous-time simulation of the runtime's rules.
//
// Why a simulation and not the chain: the chain is over counts of exchangeable requests and so gives
// means (Little's law: mean E2E = N / request rate in a closed loop), but a p99 needs each request's
// history, and an open loop adds an unbounded entry queue. The rules simulated are the runtime's
// (runtime/core/engineLoop.ts): an engine launches when its queue reaches the threshold, or when
// maxWaitMs has passed since it went idle with work below it; an admitted request joins the entry
// model's queue; at most N are admitted, the rest wait at the entry in FIFO order.
import { arrivalTimesMs } from '../../loadgen/arrivals.ts';
import { summarize, type Summary } from '../../util/stats.ts';
import { mulberry32 } from '../../../shared/rng.ts';
import { normaliseInput } from './normaliseInput.ts';
import type { ThroughputInput } from './types.ts';

/** Batches ending within 1 ns end together. */
const TIE_MS = 1e-6;

/** Latency bounds in ms a request must meet to count toward goodput (absent = not checked). */
export interface LatencySlo {
  ttftMs?: number;
  tpotMs?: number;
  e2elMs?: number;
}

export interface LatencyInput extends ThroughputInput {
  /** Longest an engine with work below its threshold waits before launching anyway (the runtime's maxWaitMs). */
  maxWaitMs: number;
  /** Committed tokens each request asks for (max_tokens); a request ends when it has them. */
  outputTokens: number;
  /** Prompt tokens, fed on a request's first step on each model (default 0). */
  promptLength?: number;
  /** ms per token a row feeds beyond one (prefill, extend), by model (default 0). */
  feedMsPerToken?: readonly number[];
  /** false: a model forgets a request's cache when it leaves (standard serving re-prefills on return). Default true. */
  retainState?: boolean;
}

export interface LatencyLoad {
  /** Mean arrival rate, requests/s; undefined = a closed loop of N (each finish replaced at once). */
  rateRps?: number;
  /** Gamma shape of inter-arrival gaps (1 = Poisson). */
  burstiness?: number;
  /** Requests simulated. */
  requests: number;
  seed?: number;
}

export interface LatencyRun {
  ttftMs: Summary;
  tpotMs: Summary;
  e2eMs: Summary;
  /** Arrival → admission (waiting for one of the N slots). */
  queueMs: Summary;
  /** First arrival to last completion. */
  durationMs: number;
  throughputTokS: number;
  requestRps: number;
  /** Requests meeting every bound of the SLO given, per second (requestRps without one). */
  goodputReqS: number;
}

interface SimEngine {
  queue: number[];
  rows: number[];
  finish: number;
  deadline: number;
}

/** One run of `load.requests` requests through the system; every request counts (as a benchmark counts them). */
export function simulateLatency(input: LatencyInput, load: LatencyLoad, slo: LatencySlo = {}): LatencyRun {
  const m = normaliseInput(input);
  const { K, N, P, C, maxBatch, thresholds, latencyMs, contendedMs } = m;
  const n = load.requests;
  const rand = mulberry32(load.seed ?? 1);
  const open = load.rateRps !== undefined;
  const arrival = open ? arrivalTimesMs(n, load.rateRps!, load.burstiness ?? 1, rand) : new Array<number>(n).fill(0);
  const entry = input.initialModel ?? 0;
  const prompt = input.promptLength ?? 0;
  const feed = input.feedMsPerToken ?? new Array<number>(K).fill(0);
  const retain = input.retainState ?? true;
  const start = new Float64Array(n);
  const first = new Float64Array(n).fill(NaN);
  const last = new Float64Array(n);
  const committed = new Float64Array(n);
  const seen = new Float64Array(n * K);
  const engines: SimEngine[] = Array.from({ length: K }, () => ({ queue: [], rows: [], finish: Infinity, deadline: Infinity }));
  const waiting: number[] = [];
  let waitHead = 0;
  let active = 0;
  let nextArrival = 0;
  let done = 0;
  let now = 0;

  const admit = (r: number) => {
    if (active < N) {
      active++;
      start[r] = now;
      engines[entry].queue.push(r);
    } else waiting.push(r);
  };
  const finishRequest = () => {
    done++;
    active--;
    if (waitHead < waiting.length) admit(waiting[waitHead++]);
    else if (!open && nextArrival < n) {
      arrival[nextArrival] = now;
      admit(nextArrival++);
    }
  };
  const endBatch = (i: number) => {
    const engine = engines[i];
    for (const r of engine.rows) {
      let u = rand();
      let j = 0;
      while (j < K - 1 && u >= P[i][j]) u -= P[i][j++];
      if (C[i][j] > 0) {
        committed[r] += C[i][j];
        if (Number.isNaN(first[r])) first[r] = now;
        last[r] = now;
      }
      if (committed[r] >= input.outputTokens - 1e-9) finishRequest();
      else {
        if (!retain && j !== i) seen[r * K + i] = 0;
        engines[j].queue.push(r);
      }
    }
    engine.rows = [];
    engine.finish = Infinity;
  };
  const launchReady = () => {
    const launched: number[] = [];
    let running = 0;
    for (let i = 0; i < K; i++) {
      const engine = engines[i];
      if (engine.finish === Infinity && engine.queue.length > 0) {
        if (engine.queue.length >= thresholds[i] || engine.deadline <= now + TIE_MS) {
          engine.rows = engine.queue.splice(0, Math.min(engine.queue.length, maxBatch[i]));
          engine.deadline = Infinity;
          launched.push(i);
        } else if (engine.deadline === Infinity) engine.deadline = now + input.maxWaitMs;
      }
      if (engine.rows.length > 0) running++;
    }
    const table = running > 1 ? contendedMs : latencyMs;
    for (const i of launched) {
      const engine = engines[i];
      let extra = 0;
      for (const r of engine.rows) {
        const ctx = prompt + committed[r];
        extra += Math.max(0, ctx - seen[r * K + i] - 1);
        seen[r * K + i] = ctx;
      }
      engine.finish = now + table[i][engine.rows.length] + feed[i] * extra;
    }
  };

  if (!open) {
    while (nextArrival < Math.min(N, n)) admit(nextArrival++);
    launchReady();
  }
  while (done < n) {
    let t = open && nextArrival < n ? arrival[nextArrival] : Infinity;
    for (const engine of engines) t = Math.min(t, engine.finish, engine.deadline);
    if (t === Infinity) throw new Error(`latency simulation stalled at ${now} ms with ${n - done} requests left`);
    now = t;
    for (let i = 0; i < K; i++) if (engines[i].finish <= now + TIE_MS) endBatch(i);
    while (open && nextArrival < n && arrival[nextArrival] <= now + TIE_MS) admit(nextArrival++);
    launchReady();
  }
  return summariseRun(arrival, start, first, last, committed, slo);
}

function summariseRun(
  arrival: readonly number[],
  start: Float64Array,
  first: Float64Array,
  last: Float64Array,
  committed: Float64Array,
  slo: LatencySlo,
): LatencyRun {
  const n = arrival.length;
  const ttft: number[] = [];
  const tpot: number[] = [];
  const e2e: number[] = [];
  const queue: number[] = [];
  let end = 0;
  let tokens = 0;
  let met = 0;
  for (let r = 0; r < n; r++) {
    const t = first[r] - arrival[r];
    const e = last[r] - arrival[r];
    const out = Math.round(committed[r]);
    const p = out > 1 ? (e - t) / (out - 1) : undefined;
    ttft.push(t);
    e2e.push(e);
    queue.push(start[r] - arrival[r]);
    if (p !== undefined) tpot.push(p);
    end = Math.max(end, last[r]);
    tokens += committed[r];
    const ok =
      !(slo.ttftMs !== undefined && t > slo.ttftMs) &&
      !(slo.tpotMs !== undefined && p !== undefined && p > slo.tpotMs) &&
      !(slo.e2elMs !== undefined && e > slo.e2elMs);
    if (ok) met++;
  }
  const durationMs = end - arrival[0];
  const perSec = (x: number) => (durationMs > 0 ? (x / durationMs) * 1000 : 0);
  return {
    ttftMs: summarize(ttft),
    tpotMs: summarize(tpot),
    e2eMs: summarize(e2e),
    queueMs: summarize(queue),
    durationMs,
    throughputTokS: perSec(tokens),
    requestRps: perSec(n),
    goodputReqS: perSec(met),
  };
}
