// Suite prefix: few-shot chats over HTTP with the prefix cache on and off side by side, and what a KV copy costs per token against a prefill.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseServerConfig } from '../../runtime/config/serverConfig.ts';
import type { LaneStats } from '../../shared/protocol/engineProtocol.ts';
import { benchmarkServing, type ServingRun } from '../../runtime/loadgen/benchmarkServing.ts';
import { benchmarkServingInChild } from '../../runtime/loadgen/remoteBenchmark.ts';
import { benchPrompt, FEW_SHOT, fewShotChat } from '../../runtime/loadgen/benchPrompt.ts';
import { GREEDY } from '../../runtime/runner/modelRunner.ts';
import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { BUNDLED_MODELS_DIR } from '../../runtime/runner/onnxAccuracy.ts';
import { startServer } from '../../runtime/http/createServer.ts';
import { TokenRouterService } from '../../runtime/http/tokenRouterService.ts';
import { NO_WANTS } from '../../shared/algorithm.ts';
import type { TraceEvent, TraceEventOf } from '../../shared/trace.ts';
import type { ModelRunner, StepOutput, StepRow } from '../../runtime/runner/modelRunner.ts';
import { TraceDir } from '../../runtime/trace/traceDir.ts';
import { progress } from '../../runtime/util/progressLine.ts';
import type { BenchOptions, SuiteRun } from './benchSuite.ts';
import type { MeteredRunner } from './meteredRunner.ts';
import { loadRunnerSet, type RunnerSet } from './benchRunners.ts';
import { ALGORITHM_LANES } from './serving.ts';
import { enginePlacement, resolvedPlacement } from './servingCase.ts';
import { SuiteFlags } from './suiteFlags.ts';
import { printTable, type Row } from '../../runtime/util/table.ts';

interface Settings {
  algorithm: string;
  concurrency: number;
  requests: number;
  warmup: number;
  maxTokens: number;
  repeats: number;
  ignoreEos: boolean;
  placement: 'in-process' | 'thread';
  /** The load generator in its own process (default, as every serving suite), or in the bench's, sharing the entry's event loop. */
  client: 'process' | 'inline';
  trace?: TraceDir;
}

interface Figures {
  ttftMs: number;
  tokS: number;
  queries: number;
  hits: number;
  outputTokens: number;
  breakdown: Breakdown;
}

/** One server with the prefix cache `on` or off, driven through the few-shot chat workload. */
async function runOnce(set: RunnerSet, s: Settings, on: boolean): Promise<Figures> {
  const lanes = ALGORITHM_LANES[s.algorithm] ?? { [s.algorithm]: s.algorithm };
  const config = parseServerConfig({
    port: 0,
    dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'tr-prefix-')),
    models: Object.keys(lanes).map((name) => ({ name, maxBatch: 32 })),
    memory: { budgetMiB: 1024 },
    scheduling: { prefixCache: on, placement: s.placement },
    limits: { maxConcurrency: s.concurrency, maxQueue: 100_000, maxTokens: s.maxTokens },
    defaultAlgorithm: s.algorithm,
  });
  const inThreads = s.placement === 'thread' && set.threads !== undefined && Object.entries(lanes).every(([lane, m]) => lane === m && set.threads!.has(m));
  // the runners are tapped so the breakdown can split model time by pass (only where the runner answers on this thread)
  const taps = new Map(Object.entries(lanes).map(([lane, model]) => [lane, new PassTap(set.runners.get(model)!)]));
  const service = await TokenRouterService.start(
    config,
    inThreads
      ? { threads: new Map(Object.keys(lanes).map((l) => [l, set.threads!.get(l)!])), tokenizer: set.tokenizer }
      : { runners: new Map(taps), tokenizer: set.tokenizer },
  );
  const server = await startServer(service, 0, '127.0.0.1');
  const traceFile = s.trace?.open(`prefix-${on ? 'on' : 'off'}`);
  try {
    const base = { baseUrl: server.url, model: s.algorithm, concurrency: s.concurrency, maxTokens: s.maxTokens, ignoreEos: s.ignoreEos };
    const drive = (requests: number, warmup: number): Promise<ServingRun> =>
      s.client === 'process'
        ? benchmarkServingInChild({ ...base, requests, warmup, workload: 'few-shot-chat' })
        : benchmarkServing({ ...base, requests, warmup, prompt: benchPrompt, messages: fewShotChat });
    // the warm-up's chats are their own: the measured run starts with an empty cache of its questions, not of the preamble
    if (s.warmup > 0) await drive(0, s.warmup);
    const before = service.cluster.laneStats();
    for (const t of taps.values()) t.reset();
    const events: TraceEvent[] = [];
    if (traceFile) for (const e of service.trace.events) if (e.type === 'config') traceFile.emit(e);
    const stop = service.trace.subscribe((e) => {
      events.push(e);
      traceFile?.emit(e);
    });
    const probe = startProbe();
    const run = await drive(s.requests, 0);
    const host = probe.stop();
    stop();
    if (run.metrics.failed > 0) throw new Error(`prefix ${on ? 'on' : 'off'}: ${run.metrics.failed} of ${s.requests} requests failed: ${run.firstError}`);
    const delta = (pick: (l: LaneStats) => number) => service.cluster.laneStats().reduce((a, l, i) => a + pick(l) - pick(before[i]), 0);
    const clockOffset = (service.cluster.clock.origin ?? performance.timeOrigin) - performance.timeOrigin;
    const breakdown = breakdownOf(events, run, clockOffset, inThreads ? null : taps, host);
    return {
      ttftMs: run.metrics.ttftMs.mean,
      tokS: run.metrics.outputThroughputTokS,
      queries: delta((l) => l.prefixQueries),
      hits: delta((l) => l.prefixHits),
      outputTokens: run.metrics.totalOutputTokens,
      breakdown,
    };
  } finally {
    await server.close();
    await service.close();
    await traceFile?.close();
  }
}

/** Counts each forward pass's model ms as prefill (some row feeds more than one token) or decode. */
class PassTap implements ModelRunner {
  prefillMs = 0;
  prefillPasses = 0;
  prefillTokens = 0;
  decodeMs = 0;
  decodePasses = 0;
  decodeRows = 0;
  constructor(private readonly inner: MeteredRunner) {}
  get info() {
    return this.inner.info;
  }
  reset(): void {
    this.prefillMs = this.prefillPasses = this.prefillTokens = this.decodeMs = this.decodePasses = this.decodeRows = 0;
  }
  step(rows: readonly StepRow[]): PromiseLike<StepOutput> {
    const count = (o: StepOutput) => {
      for (const p of o.passes ?? []) {
        if (p.longest > 1) {
          this.prefillMs += p.modelMs;
          this.prefillPasses++;
          this.prefillTokens += p.tokens;
        } else {
          this.decodeMs += p.modelMs;
          this.decodePasses++;
          this.decodeRows += p.rows;
        }
      }
      return o;
    };
    return this.inner.step(rows).then(count);
  }
  release(cacheId: number): void {
    this.inner.release(cacheId);
  }
  fork(source: number, target: number, tokens: number): boolean {
    return this.inner.fork(source, target, tokens);
  }
  onFailure(listener: (error: Error) => void): void {
    this.inner.onFailure(listener);
  }
}

/** The bench process's own load over a run: event-loop utilisation of the entry thread, and CPU of the whole process (engines, workers, client). */
function startProbe(): { stop(): { eluEntry: number; cpuMs: number; wallMs: number } } {
  const elu0 = performance.eventLoopUtilization();
  const cpu0 = process.cpuUsage();
  const w0 = performance.now();
  return {
    stop: () => {
      const cpu = process.cpuUsage(cpu0);
      return { eluEntry: performance.eventLoopUtilization(elu0).utilization, cpuMs: (cpu.user + cpu.system) / 1000, wallMs: performance.now() - w0 };
    },
  };
}

interface LaneBreakdown {
  batches: number;
  meanRows: number;
  busyMs: number;
  /** Busy ms of batches with a row feeding more than one token (prefill, extend), and of one-token batches. */
  prefillBatchBusyMs: number;
  decodeBatchBusyMs: number;
  modelMs: number;
  tokensFed: number;
  cachedTokens: number;
  /** From the runner's passes (in-process placement only): model ms of passes with a multi-token row, and of one-token passes. */
  prefillPassMs?: number;
  decodePassMs?: number;
  prefillPasses?: number;
  decodePasses?: number;
}

interface Breakdown {
  lanes: Record<string, LaneBreakdown>;
  /** Mean ms per request, on the server's clock except the first and last (client clock, joined by means). */
  ttft: Record<string, number>;
  host: { eluEntry: number; cpuMs: number; wallMs: number };
}

/**
 * Where the measured run's time went, from its trace: each lane's batches split by kind, and each
 * request's time to first token cut at admission, the first model's queue, the batches it rode
 * before its first token (on each model), the waits between them and the streaming back.
 */
function breakdownOf(
  events: readonly TraceEvent[],
  run: ServingRun,
  clockOffset: number,
  taps: Map<string, PassTap> | null,
  host: Breakdown['host'],
): Breakdown {
  const lanes: Record<string, LaneBreakdown> = {};
  const batchesOf = new Map<string, TraceEventOf<'batch'>[]>();
  const byReq = new Map<string, TraceEvent[]>();
  const push = (id: string, e: TraceEvent) => {
    const l = byReq.get(id);
    if (l) l.push(e);
    else byReq.set(id, [e]);
  };
  for (const e of events) {
    if (e.type === 'batch') {
      const l = (lanes[e.model] ??= {
        batches: 0,
        meanRows: 0,
        busyMs: 0,
        prefillBatchBusyMs: 0,
        decodeBatchBusyMs: 0,
        modelMs: 0,
        tokensFed: 0,
        cachedTokens: 0,
      });
      const busy = e.end - e.start;
      l.batches++;
      l.meanRows += e.requestIds.length;
      l.busyMs += busy;
      if (e.tokens > e.requestIds.length) l.prefillBatchBusyMs += busy;
      else l.decodeBatchBusyMs += busy;
      l.modelMs += e.modelMs ?? 0;
      l.tokensFed += e.tokens;
      l.cachedTokens += e.cachedTokens ?? 0;
      for (const id of e.requestIds) batchesOf.set(id, [...(batchesOf.get(id) ?? []), e]);
    } else if ('requestId' in e) push(e.requestId, e);
  }
  for (const [name, l] of Object.entries(lanes)) {
    l.meanRows /= Math.max(1, l.batches);
    const t = taps?.get(name);
    if (t) Object.assign(l, { prefillPassMs: t.prefillMs, decodePassMs: t.decodeMs, prefillPasses: t.prefillPasses, decodePasses: t.decodePasses });
  }
  const sums: Record<string, number> = {};
  const add = (k: string, v: number) => (sums[k] = (sums[k] ?? 0) + v);
  let n = 0;
  const admitted: number[] = [];
  const firsts: number[] = [];
  for (const [id, es] of byReq) {
    const end = es.find((e): e is TraceEventOf<'request-end'> => e.type === 'request-end');
    if (!end || end.firstTokenAt === null) continue;
    n++;
    const ft = end.firstTokenAt;
    admitted.push(end.admittedAt);
    firsts.push(ft);
    add('server_ttft', ft - end.admittedAt);
    const before = (batchesOf.get(id) ?? []).filter((b) => b.start <= ft).sort((a, b) => a.start - b.start);
    const first = before[0];
    const running = es.find((e) => e.type === 'request-state' && e.model === first?.model && e.state === 'running');
    if (first) add('admitted_to_first_step', first.start - end.admittedAt);
    if (first && running?.type === 'request-state') add('of_which_waiting_for_kv', running.t - end.admittedAt);
    let prevEnd = first?.start ?? 0;
    for (const b of before) {
      add(`batches_on_${b.model}`, b.end - b.start);
      add('waits_between_batches', Math.max(0, b.start - prevEnd));
      prevEnd = b.end;
    }
    add('handoffs_before_first_token', es.filter((e) => e.type === 'handoff' && e.t <= ft).length);
    add('after_last_batch', before.length ? ft - before[before.length - 1].end : 0);
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const ok = run.records.filter((r) => r.ok && r.contentChunkMs.length > 0);
  const ttft: Record<string, number> = {
    // a bijection of sends and admissions: the mean of the differences is the difference of the means
    client_send_to_admitted: mean(admitted.map((t) => t + clockOffset)) - mean(run.records.map((r) => r.sendMs)),
  };
  for (const [k, v] of Object.entries(sums)) ttft[k] = v / Math.max(1, n);
  ttft.first_token_to_client = mean(ok.map((r) => r.contentChunkMs[0])) - mean(firsts.map((t) => t + clockOffset));
  return { lanes, ttft, host };
}

/** µs per token: a fork copying `tokens` of KV, and a prefill of them, on one in-process runner (median of repeats). */
async function copyVersusPrefill(model: string, tokens: readonly number[], reps: number): Promise<{ fork: number; prefill: number }> {
  const runner = await OnnxRunner.load(path.join(BUNDLED_MODELS_DIR, model));
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const row = (cacheId: number) => ({ cacheId, requestId: `p${cacheId}`, tokens, position: 0, sampling: GREEDY, wants: NO_WANTS });
  try {
    const prefill: number[] = [];
    for (let r = 0; r < reps; r++) {
      const t0 = performance.now();
      await runner.step([row(1)]);
      prefill.push(performance.now() - t0);
    }
    const fork: number[] = [];
    for (let r = 0; r < reps * 10; r++) {
      const t0 = performance.now();
      runner.fork(1, 2, tokens.length);
      fork.push(performance.now() - t0);
      runner.release(2);
    }
    return { fork: (median(fork) * 1000) / tokens.length, prefill: (median(prefill) * 1000) / tokens.length };
  } finally {
    await runner.close();
  }
}

export async function run(opts: BenchOptions): Promise<SuiteRun> {
  const f = new SuiteFlags(opts.flags);
  const set = await loadRunnerSet(f.str('runners'));
  const s: Settings = {
    algorithm: f.str('algorithm', 'r2r'),
    concurrency: f.num('concurrency', 8),
    requests: f.sized('requests', 64, 16),
    warmup: f.sized('warmup', 16, 4),
    maxTokens: f.num('max-tokens', 32),
    repeats: f.sized('repeats', 2, 1),
    ignoreEos: f.bool('ignore-eos', true),
    // the server's default, auto: engines beside ONNX models in threads, simulated runners in-process
    placement: resolvedPlacement(enginePlacement(f.str('placement')), set),
    client: f.str('client', 'process') === 'inline' ? 'inline' : 'process',
    trace: f.str('trace') === undefined ? undefined : new TraceDir(path.resolve(f.str('trace')!)),
  };
  const on: Figures[] = [];
  const off: Figures[] = [];
  try {
    // off and on alternate, so drift on a shared machine falls on both
    for (let r = 0; r < s.repeats; r++) {
      off.push(await runOnce(set, s, false));
      progress('prefix off/on', 2 * r + 1, 2 * s.repeats);
      on.push(await runOnce(set, s, true));
      progress('prefix off/on', 2 * r + 2, 2 * s.repeats);
    }
  } finally {
    await set.close();
  }
  type Num = Exclude<keyof Figures, 'breakdown'>;
  const mean = (xs: Figures[], k: Num) => xs.reduce((a, x) => a + x[k], 0) / xs.length;
  const sum = (xs: Figures[], k: Num) => xs.reduce((a, x) => a + x[k], 0);
  const preamble = set.tokenizer.encodeChat(FEW_SHOT, false);
  const cost =
    set.kind === 'bundled'
      ? await Promise.all(['small', 'large'].map(async (m) => ({ model: m, ...(await copyVersusPrefill(m, preamble, f.sized('cost-reps', 20, 5))) })))
      : [];
  // each lane's figures and the TTFT decomposition, averaged over the repeats of each side
  const avgOf = (xs: Figures[], pick: (b: Breakdown) => Record<string, number>) => {
    const out: Record<string, number> = {};
    for (const x of xs) for (const [k, v] of Object.entries(pick(x.breakdown))) out[k] = (out[k] ?? 0) + v / xs.length;
    return out;
  };
  const laneNames = Object.keys(on[0]?.breakdown.lanes ?? {});
  const breakdown = {
    off: {
      ttft: avgOf(off, (b) => b.ttft),
      host: avgOf(off, (b) => b.host),
      lanes: Object.fromEntries(laneNames.map((l) => [l, avgOf(off, (b) => b.lanes[l] as unknown as Record<string, number>)])),
    },
    on: {
      ttft: avgOf(on, (b) => b.ttft),
      host: avgOf(on, (b) => b.host),
      lanes: Object.fromEntries(laneNames.map((l) => [l, avgOf(on, (b) => b.lanes[l] as unknown as Record<string, number>)])),
    },
  };
  const ttftRows: Row[] = Object.keys(breakdown.on.ttft).map((k) => ({ ttft_part_ms: k, off: breakdown.off.ttft[k] ?? 0, on: breakdown.on.ttft[k] ?? 0 }));
  const laneRows: Row[] = (['off', 'on'] as const).flatMap((side) =>
    laneNames.map((l) => ({
      cache: side,
      lane: l,
      ...Object.fromEntries(Object.entries(breakdown[side].lanes[l]).map(([k, v]) => [k, Math.round(v * 10) / 10])),
    })),
  );
  const hostRows: Row[] = (['off', 'on'] as const).map((side) => ({
    cache: side,
    wall_ms: breakdown[side].host.wallMs,
    process_cpu_ms: breakdown[side].host.cpuMs,
    entry_thread_elu: breakdown[side].host.eluEntry,
  }));
  const results = {
    ttft_ms_on: mean(on, 'ttftMs'),
    ttft_ms_off: mean(off, 'ttftMs'),
    tok_s_on: mean(on, 'tokS'),
    tok_s_off: mean(off, 'tokS'),
    hit_rate: sum(on, 'hits') / sum(on, 'queries'),
    ttft_improvement: mean(off, 'ttftMs') / mean(on, 'ttftMs'),
    throughput_gain: mean(on, 'tokS') / mean(off, 'tokS'),
    kv_copy_vs_prefill_us_per_token: Object.fromEntries(cost.map((c) => [c.model, { fork: c.fork, prefill: c.prefill }])),
    runs: off.flatMap((x, r) => [
      { repeat: r + 1, cache: 'off', ttft_ms: x.ttftMs, tok_s: x.tokS },
      { repeat: r + 1, cache: 'on', ttft_ms: on[r].ttftMs, tok_s: on[r].tokS },
    ]),
    output_tokens_per_request: { off: mean(off, 'outputTokens') / s.requests, on: mean(on, 'outputTokens') / s.requests },
    breakdown,
  };
  const rows: Row[] = [
    {
      prefix_cache: 'off',
      mean_ttft_ms: results.ttft_ms_off,
      tok_s: results.tok_s_off,
      hit_rate: sum(off, 'queries') ? sum(off, 'hits') / sum(off, 'queries') : 0,
    },
    { prefix_cache: 'on', mean_ttft_ms: results.ttft_ms_on, tok_s: results.tok_s_on, hit_rate: results.hit_rate },
  ];
  const costRows: Row[] = cost.map((c) => ({
    model: c.model,
    tokens: preamble.length,
    fork_us_per_token: c.fork,
    prefill_us_per_token: c.prefill,
    prefill_over_fork: c.prefill / c.fork,
  }));
  printTable(rows);
  printTable(ttftRows);
  printTable(laneRows);
  printTable(hostRows);
  if (costRows.length) printTable(costRows);
  const settings = {
    runners: set.description,
    algorithm: s.algorithm,
    concurrency: s.concurrency,
    requests_per_run: s.requests,
    warmup_requests: s.warmup,
    repeats: `${s.repeats} (off and on alternate; figures are means over repeats)`,
    max_tokens: s.ignoreEos ? `${s.maxTokens}, ignore_eos (every request runs to max_tokens)` : `${s.maxTokens}, natural EOS`,
    placement:
      s.placement === 'thread'
        ? 'thread (each engine in its own thread with its runner)'
        : 'in-process (engines on the entry thread, each ONNX runner in a worker thread)',
    client:
      s.client === 'process'
        ? 'load generator in a child process (as every serving suite)'
        : "load generator in the bench process, on the entry thread's event loop",
    workload: `few-shot chats: ${preamble.length}-token preamble of 3 worked examples, then two turns per chat (the second resends the first question and its answer); prompts ${set.tokenizer.encodeChat(fewShotChat(0)).length}-${set.tokenizer.encodeChat(fewShotChat(1)).length} tokens`,
    scheduling: 'async-delayed, retainState true, thresholds 1 (the config defaults); prefix cache off vs on',
    hit_rate: 'prefix cache hits / queries in tokens over every model of the on runs (vLLM: context tokens at admission)',
    breakdown:
      "from the measured runs' traces: per lane, batches with a multi-token row (prefill/extend) vs one-token batches; the runner's passes split the same way (in-process only); TTFT cut per request on the server clock, the client's send and receipt joined by means",
  };
  return {
    suite: 'prefix',
    settings,
    results,
    output: { tables: { prefix: rows, ttft_breakdown: ttftRows, lanes: laneRows, host: hostRows, kv_copy_vs_prefill: costRows } },
  };
}
