// One measured serving run: start a real server in-process for a scheduling mode, drive it over HTTP, stop it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseServerConfig } from '../../runtime/config/serverConfig.ts';
import type { LaneStats } from '../../shared/protocol/engineProtocol.ts';
import type { ThreadStats } from '../../shared/protocol/laneStats.ts';
import { TokenRouterError } from '../../runtime/errors.ts';
import { machineBusyCores, machineCpuTicks, processSchedstat, runqueueWait, threadCpuMs, type RunqueueWait } from '../../runtime/util/threadCpu.ts';
import { benchmarkServing, poolRuns, type ServingRun } from '../../runtime/loadgen/benchmarkServing.ts';
import { benchPrompt } from '../../runtime/loadgen/benchPrompt.ts';
import { parseGoodput, type Slo } from '../../runtime/loadgen/goodput.ts';
import { benchmarkServingInChild } from '../../runtime/loadgen/remoteBenchmark.ts';
import type { SchedulingMode } from '../../runtime/core/servingPolicy.ts';
import { startServer } from '../../runtime/http/createServer.ts';
import { TokenRouterService } from '../../runtime/http/tokenRouterService.ts';
import { TraceDir } from '../../runtime/trace/traceDir.ts';
import { positiveFlag, requestRateFlag } from '../../runtime/util/cliFlags.ts';
import type { RunnerSet } from './benchRunners.ts';
import type { MeteredRunner } from './meteredRunner.ts';
import type { SuiteFlags } from './suiteFlags.ts';

export interface ServingMode {
  /** Short name for tables, e.g. "tokenrouter" or "baseline". */
  label: string;
  mode: SchedulingMode;
  retainState: boolean;
  /** Delayed-batching thresholds by lane name (async-delayed); missing lanes use 1. */
  thresholds?: Record<string, number>;
}

/** The standard-serving baseline: a global step barrier and re-admission (full re-prefill) on every return. */
export const BASELINE: ServingMode = { label: 'baseline', mode: 'step-sync', retainState: false };

export interface ServingCase {
  algorithm: string;
  /** Lane name → runner name: lanes take the names the algorithm expects, runners may be any model. */
  lanes: Record<string, string>;
  mode: ServingMode;
  concurrency: number;
  requests: number;
  warmup: number;
  maxTokens: number;
  /** Requests carry `ignore_eos: true` (vLLM's --ignore-eos): every one runs to max_tokens. */
  ignoreEos?: boolean;
  maxWaitMs?: number;
  /** Tokens per streamed chunk after the first (limits.streamInterval); default the server's, 1. */
  streamInterval?: number;
  maxBatch?: number;
  /** Keep every batch (lane, size, wall ms) and every request step (for the throughput model). */
  recordRouting?: boolean;
  client?: ClientPlacement;
  traceDir?: TraceDir;
  /** Open-loop arrivals (req/s) and their burstiness; absent: the closed loop. */
  requestRate?: number;
  burstiness?: number;
  /** Seed of the arrival schedule: runs given one seed take the same arrivals. */
  seed?: number;
  slo?: Slo;
  /** false: a run without state retention gets no prefix cache (see ServingDefaults.baselinePrefixCache). */
  baselinePrefixCache?: boolean;
  /** Where the engines run: on the entry's thread (default, as `npm start`) or beside their models in engine threads (when the runner set has them). */
  placement?: EnginePlacement;
  onProgress?: (done: number, total: number) => void;
}

/** One batch with wall times (performance.now() ms) from launch to "results routed". */
export interface BatchTiming {
  lane: string;
  startMs: number;
  endMs: number;
  rows: number;
  tokens: number;
  phase: string;
}

/** One request's step on one lane, in the throughput model's terms (see estimateRouting). */
export interface RecordedStep {
  requestId: string;
  model: string;
  /** Where the request went next when it left at this step; undefined = the next recorded step decides. */
  next?: string;
  committed: number;
}

export interface ServingResult {
  run: ServingRun;
  /** Lane counters accumulated over the measured requests only. */
  lanes: LaneStats[];
  batches: BatchTiming[];
  /** With recordRouting: every request step, in order. */
  steps: RecordedStep[];
  /** CPU over the measured requests: this process (server, model workers), the client's process, and wall time. */
  /**
   * entryMainMs: the entry's main thread alone (this process's main thread, from /proc; null off
   * Linux); machineBusyCores: every process on the machine (/proc/stat); runqueueWait: the share of
   * this process's runnable time its threads spent waiting for a core (schedstat).
   */
  cpu: {
    serverMs: number;
    clientMs: number | null;
    wallMs: number;
    entryMainMs: number | null;
    machineBusyCores?: number | null;
    runqueueWait?: RunqueueWait | null;
  };
}

/** As the server's scheduling.placement; "auto" (the default, what users run): engines beside ONNX models in threads, simulated runners in-process. */
export type EnginePlacement = 'auto' | 'thread' | 'in-process';

/** `--placement auto|thread|in-process`, checked; default auto, the server's default. */
export function enginePlacement(p: string | undefined): EnginePlacement {
  if (p === undefined || p === 'auto' || p === 'thread' || p === 'in-process') return p ?? 'auto';
  throw new TokenRouterError('invalid_request', `--placement must be auto, thread or in-process, got "${p}"`, 'placement');
}

/** Where a placement puts the engines of a runner set: "auto" resolves as the server does. */
export function resolvedPlacement(p: EnginePlacement, set: Pick<RunnerSet, 'threads'>): 'thread' | 'in-process' {
  return p === 'in-process' || set.threads === undefined ? 'in-process' : 'thread';
}

/** CPU ms the main thread of this process has used (Linux /proc; null elsewhere): the entry's thread, apart from engine and model threads. */
export function mainThreadCpuMs(): number | null {
  return threadCpuMs(`/proc/self/task/${process.pid}/stat`);
}

/** Where the load generator runs: its own process (default, as vLLM's client) or this one. */
export type ClientPlacement = 'process' | 'inline';

/** What every serving run of one `npm run bench` invocation shares, read once from its flags (no module state). */
export interface ServingDefaults {
  client: ClientPlacement;
  placement: EnginePlacement;
  /** `--trace DIR`: every server a suite starts writes its trace there, one file per run. */
  traceDir?: TraceDir;
  /** `--request-rate R` (req/s; Infinity, the default: the closed loop of `concurrency` clients). */
  requestRate: number;
  /** `--burstiness k`: gamma inter-arrival gaps, 1 = Poisson. */
  burstiness: number;
  /** `--goodput "ttft:MS tpot:MS e2el:MS"`: runs report goodput against it. */
  slo?: Slo;
  /**
   * `--baseline-prefix-cache 0`: runs without state retention (standard serving) get no prefix cache,
   * so every return re-prefills the whole context (the paper's baseline). Default 1: the re-prefill
   * copies the request's own cached KV, as SGLang's radix cache does.
   */
  baselinePrefixCache: boolean;
}

/** `--client`, `--placement`, `--request-rate`, `--burstiness`, `--goodput`, `--baseline-prefix-cache`, checked (main.ts calls it before a suite runs). */
export function servingFlags(f: SuiteFlags): Omit<ServingDefaults, 'traceDir'> {
  const client = f.str('client') ?? 'process';
  if (client !== 'process' && client !== 'inline')
    throw new TokenRouterError('invalid_request', `--client must be process or inline, got "${client}"`, 'client');
  const goodput = f.str('goodput');
  return {
    client,
    placement: enginePlacement(f.str('placement')),
    requestRate: requestRateFlag(f.str('request-rate')),
    burstiness: positiveFlag('burstiness', f.str('burstiness'), 1),
    baselinePrefixCache: f.bool('baseline-prefix-cache', true),
    ...(goodput === undefined ? {} : { slo: parseGoodput(goodput) }),
  };
}

/** The checked flags plus `--trace DIR`, opened once per run of a suite. */
export function servingDefaults(f: SuiteFlags): ServingDefaults {
  const trace = f.str('trace');
  return { ...servingFlags(f), traceDir: trace === undefined ? undefined : new TraceDir(path.resolve(trace)) };
}

/** The shared settings as a report states them. */
export function servingSettings(d: ServingDefaults): Record<string, unknown> {
  return {
    client: d.client === 'process' ? 'load generator in a child process (as vLLM’s client)' : 'load generator in the server process',
    placement: d.placement,
    arrivals:
      d.requestRate === Infinity
        ? 'closed loop: every measured request queued at once behind the concurrency cap'
        : `open loop: ${d.requestRate} req/s, gamma gaps with burstiness ${d.burstiness} (1 = Poisson), capped at the concurrency`,
    ...(d.slo ? { goodput_slo_ms: d.slo } : {}),
    baseline_prefix_cache: d.baselinePrefixCache
      ? 'on: a re-admission copies the request’s own cached KV (SGLang’s radix cache)'
      : 'off: every return re-prefills the whole context (the paper’s standard serving)',
  };
}

/** The load generator's open-loop options, passed only when set so a closed-loop run's load is as before. */
function openLoop(c: ServingCase): { requestRate?: number; burstiness?: number; seed?: number; slo?: Slo } {
  return {
    ...(c.requestRate !== undefined && c.requestRate !== Infinity
      ? { requestRate: c.requestRate, burstiness: c.burstiness ?? 1, ...(c.seed !== undefined ? { seed: c.seed } : {}) }
      : {}),
    ...(c.slo ? { slo: c.slo } : {}),
  };
}

function diffStats(after: LaneStats[], before: LaneStats[]): LaneStats[] {
  return after.map((a, i) => {
    const b = before[i];
    return {
      ...a,
      batches: a.batches - b.batches,
      rows: a.rows - b.rows,
      admissions: a.admissions - b.admissions,
      evictions: a.evictions - b.evictions,
      busyMs: a.busyMs - b.busyMs,
      batchMs: a.batchMs - b.batchMs,
      modelMs: a.modelMs - b.modelMs,
      ...(a.thread && b.thread
        ? { thread: { cpuMs: a.thread.cpuMs - b.thread.cpuMs, gcMs: a.thread.gcMs - b.thread.gcMs, waitMs: a.thread.waitMs - b.thread.waitMs } }
        : {}),
    };
  });
}

export async function runServingCase(set: RunnerSet, c: ServingCase): Promise<ServingResult> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-bench-'));
  const laneRunners = new Map<string, MeteredRunner>();
  for (const [lane, runnerName] of Object.entries(c.lanes)) {
    const r = set.runners.get(runnerName);
    if (!r) throw new Error(`no runner "${runnerName}" in this runner set (${[...set.runners.keys()].join(', ')})`);
    laneRunners.set(lane, r);
  }
  const config = parseServerConfig({
    port: 0,
    dataDir,
    models: Object.keys(c.lanes).map((name) => ({ name, maxBatch: c.maxBatch ?? 32 })),
    memory: { budgetMiB: 1024 },
    scheduling: {
      mode: c.mode.mode,
      retainState: c.mode.retainState,
      thresholds: c.mode.thresholds ?? {},
      maxWaitMs: c.maxWaitMs ?? 20,
      prefixCache: c.mode.retainState || c.baselinePrefixCache !== false,
    },
    limits: {
      maxConcurrency: c.concurrency,
      maxQueue: 100_000,
      maxTokens: Math.max(c.maxTokens, 1),
      ...(c.streamInterval === undefined ? {} : { streamInterval: c.streamInterval }),
    },
    defaultAlgorithm: c.algorithm,
  });
  const inThreads =
    resolvedPlacement(c.placement ?? 'auto', set) === 'thread' && Object.entries(c.lanes).every(([lane, r]) => lane === r && set.threads!.has(r));
  const service = await TokenRouterService.start(
    config,
    inThreads
      ? { threads: new Map(Object.keys(c.lanes).map((l) => [l, set.threads!.get(l)!])), tokenizer: set.tokenizer }
      : { runners: new Map(laneRunners), tokenizer: set.tokenizer },
  );
  const traceFile = c.traceDir?.open(`${c.algorithm}-${c.mode.label}`);
  let stopTrace = () => {};
  if (traceFile) {
    // What the service traced while starting (its config event) first, then everything as it happens.
    for (const e of service.trace.events) traceFile.emit(e);
    stopTrace = service.trace.subscribe((e) => traceFile.emit(e));
  }
  const server = await startServer(service, 0, '127.0.0.1');
  try {
    const load = {
      baseUrl: server.url,
      model: c.algorithm,
      concurrency: c.concurrency,
      maxTokens: c.maxTokens,
      ignoreEos: c.ignoreEos === true,
      prompt: benchPrompt,
      warmup: 0,
      ...openLoop(c),
    };
    const inChild = (c.client ?? 'process') === 'process';
    const drive = (requests: number, warmup: number, onProgress?: (d: number, t: number) => void) =>
      inChild ? benchmarkServingInChild({ ...load, requests, warmup }) : benchmarkServing({ ...load, requests, warmup, onProgress });
    // A separate warm-up pass (it throws if every warm-up request fails), so lane counters start after it.
    if (c.warmup > 0) await drive(0, c.warmup);
    const before = service.cluster.laneStats();
    const batches: BatchTiming[] = [];
    const steps: RecordedStep[] = [];
    let unsubscribe = () => {};
    if (c.recordRouting) {
      // Handoffs are traced while a batch's rows are routed, before the batch event itself.
      const handoffs = new Map<string, { to: string; kept: boolean }>();
      unsubscribe = service.trace.subscribe((e) => {
        if (e.type === 'handoff') handoffs.set(`${e.batchId}:${e.requestId}`, { to: e.to, kept: e.kept });
        if (e.type !== 'batch') return;
        // The event is emitted on the clock at e.end, right now: that pins clock ms to performance.now().
        const offset = performance.now() - e.end;
        const startMs = e.start + offset;
        batches.push({ lane: e.model, startMs, endMs: e.end + offset, rows: e.requestIds.length, tokens: e.tokens, phase: e.phase });
        for (const id of e.requestIds) {
          const key = `${e.batchId}:${id}`;
          const h = handoffs.get(key);
          handoffs.delete(key);
          steps.push(h ? { requestId: id, model: e.model, next: h.to, committed: h.kept ? 1 : 0 } : { requestId: id, model: e.model, committed: 1 });
        }
      });
    }
    const cpu0 = process.cpuUsage();
    const main0 = mainThreadCpuMs();
    const machine0 = machineCpuTicks();
    const sched0 = processSchedstat();
    const wall0 = performance.now();
    const run = await drive(c.requests, 0, c.onProgress);
    const cpuUsed = process.cpuUsage(cpu0);
    const main1 = mainThreadCpuMs();
    const wallMs = performance.now() - wall0;
    const cpu = {
      serverMs: (cpuUsed.user + cpuUsed.system) / 1000,
      clientMs: inChild ? (run.clientCpuMs ?? null) : null,
      wallMs,
      entryMainMs: main0 === null || main1 === null ? null : main1 - main0,
      machineBusyCores: machineBusyCores(machine0, machineCpuTicks(), wallMs),
      runqueueWait: runqueueWait(sched0, processSchedstat()),
    };
    unsubscribe();
    if (run.metrics.failed > 0)
      console.error(`[bench] ${c.algorithm} [${c.mode.label}]: ${run.metrics.failed} of ${c.requests} requests failed: ${run.firstError}`);
    return { run, lanes: diffStats(service.cluster.laneStats(), before), batches, steps, cpu };
  } finally {
    await server.close();
    await service.close();
    stopTrace();
    await traceFile?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Candidate thresholds for the slowest lane at concurrency N: 1, 2, 3, 4, 6, 8, … below N, feasible. */
export function thresholdCandidates(concurrency: number, maxBatch = 32): number[] {
  const base = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32];
  return base.filter((t) => t - 1 < concurrency && t <= maxBatch && t <= concurrency);
}

export interface SweepPoint {
  threshold: number;
  tok_s: number;
  mean_e2e_ms: number;
}

/**
 * The "optimised thresholds" of TokenRouter mode: sweep the slowest lane's delayed-batching
 * threshold (every other lane at 1) with short runs and keep the fastest.
 */
export async function sweepSlowLane(
  set: RunnerSet,
  c: Omit<ServingCase, 'mode'>,
  slowLane: string,
  onStep?: () => void,
): Promise<{ best: ServingMode; sweep: SweepPoint[] }> {
  const sweep: SweepPoint[] = [];
  let best: { t: number; tok: number } | null = null;
  for (const t of thresholdCandidates(c.concurrency, c.maxBatch)) {
    const mode: ServingMode = { label: `tokenrouter T_${slowLane}=${t}`, mode: 'async-delayed', retainState: true, thresholds: { [slowLane]: t } };
    const r = await runServingCase(set, { ...c, mode, onProgress: undefined });
    const tok = r.run.metrics.outputThroughputTokS;
    sweep.push({ threshold: t, tok_s: tok, mean_e2e_ms: r.run.metrics.e2eMs.mean });
    if (!best || tok > best.tok) best = { t, tok };
    onStep?.();
  }
  return { best: { label: 'tokenrouter', mode: 'async-delayed', retainState: true, thresholds: { [slowLane]: best!.t } }, sweep };
}

/** Repeated runs of one configuration as one result (see poolRuns); lane counters summed. */
export function poolResults(results: readonly ServingResult[]): ServingResult {
  if (results.length === 1) return results[0];
  const lanes = results[0].lanes.map((l, i) => {
    const all = results.map((r) => r.lanes[i]);
    const sum = (k: 'batches' | 'rows' | 'admissions' | 'evictions' | 'busyMs') => all.reduce((s, x) => s + x[k], 0);
    const threads = all.map((x) => x.thread);
    const thread = threads.every((t) => t !== undefined) ? sumThreads(threads) : undefined;
    return { ...l, batches: sum('batches'), rows: sum('rows'), admissions: sum('admissions'), evictions: sum('evictions'), busyMs: sum('busyMs'), thread };
  });
  const clients = results.map((r) => r.cpu.clientMs);
  const cpu = {
    serverMs: results.reduce((s, r) => s + r.cpu.serverMs, 0),
    clientMs: clients.every((c) => c !== null) ? clients.reduce((s, c) => s + c!, 0) : null,
    wallMs: results.reduce((s, r) => s + r.cpu.wallMs, 0),
    entryMainMs: results.every((r) => r.cpu.entryMainMs !== null) ? results.reduce((s, r) => s + r.cpu.entryMainMs!, 0) : null,
  };
  return { run: poolRuns(results.map((r) => r.run)), lanes, batches: results.flatMap((r) => r.batches), steps: results.flatMap((r) => r.steps), cpu };
}

/** Engine threads' CPU, GC and run-queue wait added up; undefined when there are none. */
function sumThreads(threads: readonly ThreadStats[]): ThreadStats | undefined {
  if (threads.length === 0) return undefined;
  return threads.reduce((s, t) => ({ cpuMs: s.cpuMs + t.cpuMs, gcMs: s.gcMs + t.gcMs, waitMs: s.waitMs + t.waitMs }));
}

/** The figures a table row shows for one run (docs/benchmarks.md's metric names and units). */
export function runFigures(r: ServingResult): Record<string, number> {
  const m = r.run.metrics;
  const tokens = m.completed * m.meanOutputTokens;
  const { serverMs, clientMs, wallMs, entryMainMs } = r.cpu;
  // Where the CPU went (NaN where not measured): the machine has os.availableParallelism() cores for both processes.
  const engine = sumThreads(r.lanes.flatMap((l) => (l.thread ? [l.thread] : [])));
  const engineCpu = engine?.cpuMs ?? NaN;
  const engineWait = engine?.waitMs ?? NaN;
  return {
    tok_s: m.outputThroughputTokS,
    mean_e2e_ms: m.e2eMs.mean,
    p99_e2e_ms: m.e2eMs.p99,
    mean_ttft_ms: m.ttftMs.mean,
    p99_ttft_ms: m.ttftMs.p99,
    mean_tpot_ms: m.tpotMs.mean,
    median_itl_ms: m.itlMs.median,
    p99_itl_ms: m.itlMs.p99,
    mean_output_tokens: m.meanOutputTokens,
    handoffs_per_request: m.completed > 0 ? r.run.handoffs / m.completed : 0,
    completed: m.completed,
    failed: m.failed,
    server_cores: serverMs / wallMs,
    client_cores: clientMs === null ? NaN : clientMs / wallMs,
    server_cpu_us_per_token: (serverMs * 1000) / tokens,
    entry_main_us_per_token: entryMainMs === null ? NaN : (entryMainMs * 1000) / tokens,
    engine_threads_cpu_us_per_token: (engineCpu * 1000) / tokens,
    // of the engine threads' runnable time, the share spent waiting for a core (schedstat)
    engine_threads_wait_share: engineWait / (engineCpu + engineWait),
    ...(m.goodputReqS !== undefined ? { request_throughput_req_s: m.requestThroughputRps, goodput_req_s: m.goodputReqS } : {}),
  };
}

/** The columns every TokenRouter-vs-baseline row shares, from the two runs' figures (runFigures). */
export function versusColumns(tr: Record<string, number>, bl: Record<string, number>): Record<string, number> {
  return {
    tokenrouter_tok_s: tr.tok_s,
    baseline_tok_s: bl.tok_s,
    speedup: tr.tok_s / bl.tok_s,
    tr_mean_e2e_ms: tr.mean_e2e_ms,
    base_mean_e2e_ms: bl.mean_e2e_ms,
  };
}
